"""Pod status (pkg/kubelet/status): the status users read, generated from the observed
runtime state (``generate``), and the status manager that keeps it and hands it to a
patcher (``status_manager``)."""
