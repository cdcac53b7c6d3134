"""AdmissionCheck: the scheduler's own filters, exported for the kubelet (eventhandlers.go).

Upstream's kubelet does not re-implement the scheduler's predicates: its predicateAdmitHandler
(pkg/kubelet/lifecycle/predicate.go) builds a framework.NodeInfo from the node and its other
pods and calls ``scheduler.AdmissionCheck``, which runs the filter logic of NodeResourcesFit
(``noderesources.Fits``), NodeAffinity (spec.nodeSelector and the required node affinity),
NodeName and NodePorts, in that order. The scheduler calls the same check before it queues a
pod after a node event (preCheckForNode), stopping at the first failure.

Here the same: ``admission_check`` over a NodeInfo, and ``admit`` for a caller that has a
node and its pods rather than a NodeInfo (the kubelet). A failure is an ``AdmissionResult``:
either the insufficient resource (name, requested, used, capacity) or the plugin's name and
reason, which the kubelet turns into its own reasons (OutOfcpu, "Predicate NodeAffinity
failed: ..."). Taints are the caller's: the scheduler checks NoSchedule ones, the kubelet
NoExecute ones (``untolerated_taint``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod, Taint
from pysched.framework.labels import RequiredNodeAffinity, find_matching_untolerated_taint
from pysched.framework.types import NodeInfo, host_ports
from pysched.plugins import node_fits as f
from pysched.plugins.node_fits import InsufficientResource

__all__ = ["AdmissionResult", "admission_check", "admit", "untolerated_taint"]


@dataclass(frozen=True, slots=True)
class AdmissionResult:
    """scheduler.AdmissionResult: a plugin's name and reason, or the insufficient resource."""

    name: str = ""
    reason: str = ""
    insufficient_resource: InsufficientResource | None = None


def _affinity_matches(pod: Pod, node: Node) -> bool:
    """GetRequiredNodeAffinity(pod).Match(node); a selector that does not parse matches
    nothing (upstream ignores Match's error and reads the false)."""
    try:
        return RequiredNodeAffinity(pod).match(node)
    except ValueError:
        return False


def admission_check(
    pod: Pod, node_info: NodeInfo, include_all_failures: bool
) -> list[AdmissionResult]:
    """AdmissionCheck: the failures of Fits, node affinity, node name and node ports, in that
    order; only the first unless ``include_all_failures``. The node info must have a node."""
    node = node_info.node
    if node is None:
        raise ValueError("admission_check: the node info has no node")
    out = [AdmissionResult(insufficient_resource=r) for r in f.fits(pod, node_info)]
    if out and not include_all_failures:
        return out
    checks: tuple[tuple[str, str, Callable[[], bool]], ...] = (
        (f.NODE_AFFINITY, f.NODE_AFFINITY_ERR_REASON_POD, lambda: _affinity_matches(pod, node)),
        (f.NODE_NAME, f.NODE_NAME_ERR_REASON, lambda: f.node_name_fits(pod, node_info)),
        (
            f.NODE_PORTS,
            f.NODE_PORTS_ERR_REASON,
            lambda: f.fits_ports(host_ports(pod), node_info.used_ports),
        ),
    )
    for name, reason, passes in checks:
        if not passes():
            out.append(AdmissionResult(name=name, reason=reason))
            if not include_all_failures:
                return out
    return out


def admit(pod: Pod, node: Node, pods_on_node: Iterable[Pod]) -> list[AdmissionResult]:
    """Every AdmissionCheck failure of ``pod`` on ``node`` beside ``pods_on_node`` (the
    kubelet's other admitted pods): NewNodeInfo(pods...) + SetNode, then the check."""
    ni = NodeInfo(*pods_on_node)
    ni.set_node(node)
    return admission_check(pod, ni, include_all_failures=True)


def untolerated_taint(pod: Pod, node: Node, effect: str) -> Taint | None:
    """FindMatchingUntoleratedTaint over the node's taints of one effect (the kubelet asks of
    NoExecute, the scheduler's pre-check of NoSchedule)."""
    return find_matching_untolerated_taint(
        node.spec.taints, pod.spec.tolerations, lambda t: t.effect == effect
    )
