"""pysched: kube-scheduler's framework, queue, default plugins and preemption."""
