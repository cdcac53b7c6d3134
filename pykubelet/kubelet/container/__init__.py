"""What the runtime shows of pods, as kubelet's kubecontainer (pkg/kubelet/container): the
observed ``PodRuntimeStatus`` in plain data, the container spec hash, and the cache of each
pod's last observed state and start failures."""
