"""The kubelet's service-account tokens (pkg/kubelet/token)."""
