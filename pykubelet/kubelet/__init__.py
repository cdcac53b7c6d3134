"""kubelet's job over CRI: pure rules (actions, status, pod_termination, probes, back-off,
admission, hashing, reasons, runtime_state) below, the engine that acts on them (cri_client,
manager, workers, pleg, prober_manager, status_manager, agent) above, and the cluster side
(api_source, api_status, api_node, node_status, node_server: the API server's pods in, their
status, the Node and its Lease out, port 10250)."""
