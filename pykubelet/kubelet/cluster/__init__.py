"""The cluster side: what the agent does with a control plane. The node's registration,
status and heartbeat Lease (``node_status``), the pods bound to it (``apisource``, kubelet's
"api" config source), what it writes back (``apistatus``: pod status, final deletes, events),
mirror pods of its static pods, the ConfigMaps and Secrets its pods refer to
(``object_refs``), and ``node``, which wires them onto a running Kubelet."""
