"""SyncPod over CRI, as pkg/kubelet/kuberuntime: the pure ``compute_pod_actions``
(``actions``), the CRI configs built from a pod (``sandbox_config``, ``container_config``),
kubelet's labels and annotations on CRI objects, the sidecar termination ordering, the
instrumented runtime service, the legacy log symlinks, and the runtime manager that carries
the actions out (``kuberuntime_manager``)."""
