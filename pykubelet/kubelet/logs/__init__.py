"""Container logs (pkg/kubelet/logs): rotation (``container_log_manager``) and which log a
``kubectl logs`` reads (``container_logs``)."""
