"""Pod admission (pkg/kubelet/lifecycle): the predicate admit handler a pod passes before
it runs on this node."""
