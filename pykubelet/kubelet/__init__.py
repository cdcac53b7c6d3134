"""kubelet's job over CRI, grouped as upstream's pkg/kubelet: the agent (``agent``, kubelet.go)
with its pod workers, housekeeping and pod termination rule at the top; below it
``kuberuntime`` (compute_pod_actions and the runtime manager that carries them out),
``container`` (the observed runtime state, spec hash, pod cache), ``cri`` (the CRI seam and
its remote client), ``status``, ``prober``, ``pleg``, ``images``, ``volumemanager``, ``logs``,
``cm`` (pod cgroups), ``lifecycle`` (admission), ``pod`` (pod manager, static pods),
``events``, ``server`` (the healthz port and port 10250), ``stats`` (resource metrics from
the cgroups and CRI stats), ``token`` (pods' service-account tokens), ``util``, and
``cluster``: the
cluster side (the API server's pods in, their status, the Node and its Lease out)."""
