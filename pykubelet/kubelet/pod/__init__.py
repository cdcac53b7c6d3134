"""The pods this node should run (pkg/kubelet/pod): the pod manager, and the static pods
read from ``staticPodPath`` (kubelet's file config source)."""
