"""pykubelet: the node. A CRI v1 runtime (runc + pycni), kubelet's agent over CRI,
and, on the control node, the API, store and embedded scheduler."""
