"""kube-scheduler's framework: extension points, Status, CycleState, NodeInfo, plugin runner."""
