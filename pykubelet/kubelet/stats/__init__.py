"""What kubelet's stats provider does for the resource metrics: the node's CPU and memory
from the root cgroup, each running container's from the runtime (CRI ListContainerStats),
pods' as the sum of their containers'."""
