"""The agent's servers (pkg/kubelet/server): the local healthz port (/healthz, /pods,
/metrics, /events: ``healthz``) and the node's port 10250 for the control plane (logs, exec,
attach, port-forward: ``node_server``)."""
