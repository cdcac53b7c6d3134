"""Which labels a node may set on its own Node (k8s.io/kubelet's ``IsKubeletLabel`` and
NodeRestriction's ``getForbiddenLabels``): anything outside the ``kubernetes.io`` and
``k8s.io`` namespaces, and inside them only the well-known kubelet labels and the
``kubelet.kubernetes.io``/``node.kubernetes.io`` namespaces; never
``node-restriction.kubernetes.io``. Others (``node-role.kubernetes.io/*``) steer
workloads, so only an admin sets them. The agent registers with the allowed ones; the
control plane refuses a node that sets the others."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
NODE_RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io"


def _namespace(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def _in(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubelet_label(key: str) -> bool:
    ns = _namespace(key)
    return key in KUBELET_LABELS or any(_in(ns, d) for d in KUBELET_LABEL_NAMESPACES)


def node_may_set(key: str) -> bool:
    """May a node add, change or remove this label on its own Node?"""
    ns = _namespace(key)
    if _in(ns, NODE_RESTRICTION_NAMESPACE):
        return False
    return not (_in(ns, "kubernetes.io") or _in(ns, "k8s.io")) or is_kubelet_label(key)


def modified(new: Mapping[str, str], old: Mapping[str, str]) -> set[str]:
    """The keys added, changed or removed between two label sets."""
    return {k for k in {*new, *old} if new.get(k) != old.get(k) or (k in new) != (k in old)}


def forbidden(keys: Iterable[str]) -> list[str]:
    """The keys a node may not set, sorted (NodeRestriction's message lists them so)."""
    return sorted(k for k in keys if not node_may_set(k))
