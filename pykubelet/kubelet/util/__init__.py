"""Small helpers of the agent (pkg/kubelet/util and what it borrows from client-go and
apimachinery): back-off, the periodic runner, failpoints, klog's text format."""
