"""Pure QoS rules over a Pod (upstream's pkg/apis/core/v1/helper/qos and kubelet's
pkg/kubelet/qos policy): the class the API server writes into status.qosClass, and the
oom_score_adj a container's class earns. No I/O: the node clamps the score to its own
(pykubelet.oom) where it builds the container's config.

The class is written once (``qos_class_of``, over each container's requests and limits) for
every reader: the API server, the kubelet and kubectl describe (a pod without
status.qosClass). Standard library only at run time, so pykubectl imports it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykubelet.api.machinery.quantity import Quantity
    from pykubelet.api.types import Container, Pod

QOS_GUARANTEED = "Guaranteed"
QOS_BURSTABLE = "Burstable"
QOS_BEST_EFFORT = "BestEffort"

GUARANTEED_OOM_SCORE_ADJ = -997
BESTEFFORT_OOM_SCORE_ADJ = 1000

# isSupportedQoSComputeResource: only these two decide the class.
_QOS_RESOURCES = ("cpu", "memory")


def qos_class(pod: Pod) -> str:
    """v1qos.GetPodQOS of a typed pod: its init containers' and containers' resources."""
    return qos_class_of(
        (c.resources.requests, c.resources.limits)
        for c in (*pod.spec.init_containers, *pod.spec.containers)
    )


def qos_class_of(
    containers: Iterable[tuple[Mapping[str, Quantity], Mapping[str, Quantity]]],
) -> str:
    """v1qos.GetPodQOS over every container's (requests, limits), init containers included:
    only cpu and memory count, and zero quantities count as unset."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for container_requests, container_limits in containers:
        for name, q in container_requests.items():
            if name in _QOS_RESOURCES and not q.is_zero():
                requests[name] = requests.get(name, 0) + q.milli_value()
        found = set()
        for name, q in container_limits.items():
            if name in _QOS_RESOURCES and not q.is_zero():
                found.add(name)
                limits[name] = limits.get(name, 0) + q.milli_value()
        if found != set(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QOS_BEST_EFFORT
    if guaranteed and requests == limits:
        return QOS_GUARANTEED
    return QOS_BURSTABLE


def container_oom_score_adj(pod: Pod, container: Container, memory_capacity: int) -> int:
    """kubelet's GetContainerOOMScoreAdjust: -997 guaranteed, 1000 best effort, and for
    burstable 1000 minus the container's share of the node's memory in thousandths, kept
    above a guaranteed container's score and below a best-effort one's."""
    qos = qos_class(pod)
    if qos == QOS_GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == QOS_BEST_EFFORT:
        return BESTEFFORT_OOM_SCORE_ADJ
    req = container.resources.requests.get("memory")
    mem = req.value() if req is not None else 0
    value = 1000 - (1000 * mem) // max(1, memory_capacity)
    # a burstable container always scores above a guaranteed one (1000 + -997)
    value = max(1000 + GUARANTEED_OOM_SCORE_ADJ, value)
    if value == BESTEFFORT_OOM_SCORE_ADJ:
        value = BESTEFFORT_OOM_SCORE_ADJ - 1
    return value
