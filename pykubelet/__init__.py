"""pykubelet: the node and the control plane. The object model every package reads
(``api``, with apimachinery's job in ``api.machinery``), a CRI v1 runtime (runc + pycni),
kubelet's agent over CRI, the control plane (the Kubernetes API on its store, the scheduler
and the controllers), the API client, and the faces: ``pykubelet``, ``pykubectl``, the lab."""
