"""Every reason string the default plugins put in a Status, spelled as kube-scheduler v1.36.

The plugin modules own them; this module gathers them for FitError messages, the
vectorised path and tests. "Insufficient <resource>" is built per resource
(`insufficient`).
"""

from __future__ import annotations

from pysched.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING_ANTI_AFFINITY,
)
from pysched.plugins.node_affinity import ERR_REASON_CONFLICT, ERR_REASON_ENFORCED, ERR_REASON_POD
from pysched.plugins.node_name import ERR_REASON as ERR_REASON_NODE_NAME
from pysched.plugins.node_ports import ERR_REASON as ERR_REASON_NODE_PORTS
from pysched.plugins.node_unschedulable import ERR_REASON_UNSCHEDULABLE
from pysched.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from pysched.plugins.taint_toleration import ERR_REASON_UNTOLERATED
from pysched.plugins.volumes import NO_NEW_CLAIMS

TOO_MANY_PODS = "Too many pods"


def insufficient(resource: str) -> str:
    """NodeResourcesFit's reason for one resource: "Insufficient cpu", "Insufficient memory"..."""
    return f"Insufficient {resource}"


__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_CONFLICT",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "ERR_REASON_NODE_NAME",
    "ERR_REASON_NODE_PORTS",
    "ERR_REASON_POD",
    "ERR_REASON_UNSCHEDULABLE",
    "ERR_REASON_UNTOLERATED",
    "NO_NEW_CLAIMS",
    "TOO_MANY_PODS",
    "insufficient",
]
