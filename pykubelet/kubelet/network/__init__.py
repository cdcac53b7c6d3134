"""What kubelet's pkg/kubelet/network does for pods: their DNS settings."""
