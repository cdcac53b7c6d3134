"""kubelet's job over CRI: pure rules (actions, status, probes, back-off, admission,
hashing, reasons, runtime_state) below, and the engine that acts on them
(cri_client, manager, workers, pleg, prober_manager, agent) above."""
