"""Container manager (pkg/kubelet/cm): the cgroups kubelet manages itself, the pod-level
cgroup under ``/kubepods[/<qos>]`` (``pod_container_manager``)."""
