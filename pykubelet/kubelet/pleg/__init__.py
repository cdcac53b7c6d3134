"""The pod lifecycle event generator (pkg/kubelet/pleg): relist the runtime, diff, emit
events (``generic``)."""
