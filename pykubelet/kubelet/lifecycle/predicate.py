"""Pod admission as kubelet's predicateAdmitHandler does it (lifecycle/predicate.go).

Upstream's kubelet does not carry predicates of its own: it builds the scheduler's NodeInfo from
the node and the pods it already admitted and calls the scheduler's AdmissionCheck (the filter
logic of NodeResourcesFit, NodeAffinity, NodeName and NodePorts), then checks NoExecute taints
itself (static pods excepted). Here the same: ``pysched.admission.admit`` is that check, so
the node honours what the scheduler honours (the required node affinity, pod-level requests,
sidecars' ports) and the two cannot drift apart.

The pods reach the scheduler in their wire form (encode, then pysched.decode: its own copy,
whose integer views it may keep), with
the requests of extended resources the node does not have removed first
(removeMissingExtendedResources: cluster-level resources). Only the first failure is
reported: an insufficient resource gives reason ``OutOf<resource>`` (OutOfcpu, OutOfmemory,
OutOfpods) and "Node didn't have enough resource: cpu, requested: 2000, used: 500, capacity:
2000"; a predicate gives its plugin name and "Predicate NodeName failed: ...". A pod the
scheduler's model cannot read is refused as UnexpectedAdmissionError. A rejected pod changes
nothing on the node; the caller marks it Failed with that reason.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.decode import encode_pod
from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched import decode as sched_decode
from pysched.admission import AdmissionResult, untolerated_taint
from pysched.admission import admit as scheduler_admit
from pysched.plugins import node_fits
from pysched.resources import is_extended_resource_name
from pysched.resources import pod_requests as scheduler_pod_requests

OUT_OF_CPU = "OutOfcpu"
OUT_OF_MEMORY = "OutOfmemory"
OUT_OF_EPHEMERAL_STORAGE = "OutOfephemeral-storage"
OUT_OF_PODS = "OutOfpods"

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"

NODE_AFFINITY = node_fits.NODE_AFFINITY
NODE_NAME = node_fits.NODE_NAME
NODE_PORTS = node_fits.NODE_PORTS
TAINT_TOLERATION = node_fits.TAINT_TOLERATION
ERR_REASON_NODE_AFFINITY = node_fits.NODE_AFFINITY_ERR_REASON_POD
ERR_REASON_NODE_NAME = node_fits.NODE_NAME_ERR_REASON
ERR_REASON_NODE_PORTS = node_fits.NODE_PORTS_ERR_REASON
ERR_REASON_TAINTS = node_fits.TAINT_TOLERATION_ERR_REASON_NOT_MATCH


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""


@dataclass
class NodeInfo:
    """What admission needs of the node: allocatable (cpu, memory, pods, ...),
    its name, labels and taints."""

    name: str
    allocatable: Mapping[str, Quantity]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Taint] = ()


@dataclass(frozen=True)
class AdmitResult:
    admit: bool
    reason: str = ""
    message: str = ""


def _scheduler_pod(pod: Pod, node_allocatable: Mapping[str, object] | None = None) -> Pod:
    """The pod in the scheduler's model, through its wire form; with ``node_allocatable``,
    without the requests of extended resources the node does not have
    (removeMissingExtendedResources, on a copy)."""
    wire = encode_pod(pod)
    if node_allocatable is not None:
        wire = copy.deepcopy(wire)
        for key in ("containers", "initContainers"):
            for c in wire.get("spec", {}).get(key, []):
                requests = c.get("resources", {}).get("requests")
                if requests:
                    c["resources"]["requests"] = {
                        n: q for n, q in requests.items()
                        if not is_extended_resource_name(n) or n in node_allocatable
                    }
    return sched_decode.pod(wire)


def _scheduler_node(node: NodeInfo) -> Node:
    wire: dict[str, Any] = {
        "metadata": {"name": node.name, "labels": dict(node.labels)},
        "spec": {"taints": [
            {"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints
        ]},
        "status": {"allocatable": {n: str(q) for n, q in node.allocatable.items()}},
    }
    return sched_decode.node(wire)


class SchedulerPods:
    """The node's admitted pods in the scheduler's model, each read once per Pod object.

    Admission sees every admitted pod each time (upstream builds the NodeInfo from them all),
    so a burst of n pods would convert n^2/2 of them; this keeps the conversion of each Pod
    object by uid and reuses it while the pod manager holds that same object (an update
    brings a new object, read afresh). Pods no longer admitted are forgotten at the next
    call. Two sources admitting at once at worst convert a pod twice: each call answers
    from the dict it built."""

    def __init__(self) -> None:
        self._by_uid: dict[str, tuple[Pod, Pod]] = {}

    def convert(self, admitted: Sequence[Pod]) -> list[Pod]:
        kept: dict[str, tuple[Pod, Pod]] = {}
        for p in admitted:
            hit = self._by_uid.get(p.uid)
            if hit is None or hit[0] is not p:
                hit = (p, _scheduler_pod(p))
            kept[p.uid] = hit
        self._by_uid = kept
        return [kept[p.uid][1] for p in admitted]


def pod_requests(pod: Pod) -> dict[str, int]:
    """resourcehelper.PodRequests, the scheduler's (pysched.resources): cpu in millicores,
    the rest in units (bytes)."""
    return scheduler_pod_requests(_scheduler_pod(pod))


def _rejection(r: AdmissionResult) -> AdmitResult:
    """The kubelet's reason and message for one AdmissionCheck failure (predicate.go)."""
    ir = r.insufficient_resource
    if ir is None:
        return AdmitResult(
            admit=False, reason=r.name, message=f"Predicate {r.name} failed: {r.reason}"
        )
    reason = {
        "cpu": OUT_OF_CPU,
        "memory": OUT_OF_MEMORY,
        "ephemeral-storage": OUT_OF_EPHEMERAL_STORAGE,
        "pods": OUT_OF_PODS,
    }.get(ir.resource_name, f"OutOf{ir.resource_name}")
    return AdmitResult(
        admit=False,
        reason=reason,
        message=(
            f"Node didn't have enough resource: {ir.resource_name}, requested: {ir.requested}, "
            f"used: {ir.used}, capacity: {ir.capacity}"
        ),
    )


def admit(
    pod: Pod,
    node: NodeInfo,
    admitted: Sequence[Pod],
    *,
    static: bool = False,
    scheduler_pods: SchedulerPods | None = None,
) -> AdmitResult:
    """The predicate admit handler: the first failure, or admit.

    `admitted` are the node's other active (admitted, not terminal) pods; `scheduler_pods`
    keeps their conversions from one admission to the next.
    """
    try:
        sched_node = _scheduler_node(node)
        sched_pod = _scheduler_pod(pod, node.allocatable)
        others = (scheduler_pods or SchedulerPods()).convert(admitted)
    except DecodeError as exc:
        return AdmitResult(
            admit=False,
            reason=UNEXPECTED_ADMISSION_ERROR,
            message=f"GeneralPredicates failed due to {exc}, which is unexpected.",
        )
    failures = [_rejection(r) for r in scheduler_admit(sched_pod, sched_node, others)]
    if not static and untolerated_taint(sched_pod, sched_node, "NoExecute") is not None:
        failures.append(
            AdmitResult(
                admit=False,
                reason=TAINT_TOLERATION,
                message=f"Predicate {TAINT_TOLERATION} failed: {ERR_REASON_TAINTS}",
            )
        )
    return failures[0] if failures else AdmitResult(admit=True)
