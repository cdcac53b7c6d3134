"""``pykubectl``: kubectl's commands and habits over the Kubernetes API (one module per
command group), plus ``why`` (the scheduler's recorded decision for a pod)."""
