"""A pod's request and limit totals (k8s.io/component-helpers/resource), written once.

The scheduler (pysched's integer views), the kubelet's admission (through the scheduler's
check) and kubectl describe and the dashboard (quantities read from JSON) all total a pod the
same way, as upstream's PodRequests and PodLimits do:
- regular containers add up;
- a sidecar (an init container with restartPolicy Always) adds to that running total, and
  every later init container runs beside the sidecars started before it; the pod needs the
  larger of the running total and each init container's (own + earlier sidecars) amounts;
- pod-level ``spec.resources`` (PodLevelResources) replaces the containers' total for the
  resources it names that may be set at pod level (cpu, memory, hugepages-*);
- ``spec.overhead`` is added on top: to every request, and to a limit only where the pod
  has that limit (an overhead makes no unlimited resource limited).

The functions take what they total already read, so each caller keeps its own model and
amount type: anything that adds and compares (``int`` millicores/bytes, or ``Quantity``,
whose sums keep the format describe prints). Standard library only: pykubectl imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, Self, TypeVar


class Amount(Protocol):
    """What a total needs of an amount: a sum and an order."""

    def __add__(self, other: Self, /) -> Self: ...

    def __gt__(self, other: Self, /) -> bool: ...


A = TypeVar("A", bound=Amount)

# an init container's amounts and whether it is a sidecar (restartPolicy Always)
InitContainer = tuple[Mapping[str, A], bool]


def is_supported_pod_level_resource(name: str) -> bool:
    """IsSupportedPodLevelResource: cpu, memory and hugepages-* may be set at pod level."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _add(into: dict[str, Any], add: Mapping[str, Any]) -> None:
    for name, amount in add.items():
        into[name] = into[name] + amount if name in into else amount


def _max(into: dict[str, Any], other: Mapping[str, Any]) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def aggregate_containers(
    containers: Iterable[Mapping[str, A]], init_containers: Sequence[InitContainer[A]]
) -> dict[str, A]:
    """AggregateContainerRequests / AggregateContainerLimits: containers, sidecars and init
    containers combined (the same rule for requests and for limits)."""
    total: dict[str, A] = {}
    for amounts in containers:
        _add(total, amounts)
    if not init_containers:
        return total
    sidecars: dict[str, A] = {}  # the sidecars started so far, summed
    init_max: dict[str, A] = {}
    for amounts, sidecar in init_containers:
        if sidecar:
            _add(total, amounts)
            _add(sidecars, amounts)
            during: Mapping[str, A] = sidecars
        else:
            running = dict(amounts)
            _add(running, sidecars)
            during = running
        _max(init_max, during)
    _max(total, init_max)
    return total


def pod_requests(
    containers: Iterable[Mapping[str, A]],
    init_containers: Sequence[InitContainer[A]],
    *,
    pod_level: Mapping[str, A] | None = None,
    overhead: Mapping[str, A] | None = None,
    limits: bool = False,
) -> dict[str, A]:
    """PodRequests: the containers' total, pod-level amounts in its place for what they name,
    plus the overhead. With ``limits``, PodLimits: the same over the limits, but the overhead
    only adds to the limits the pod has."""
    total = aggregate_containers(containers, init_containers)
    if pod_level:
        for name, amount in pod_level.items():
            if is_supported_pod_level_resource(name):
                total[name] = amount
    if overhead and not limits:
        _add(total, overhead)
    elif overhead:
        _add(total, {name: amount for name, amount in overhead.items() if name in total})
    return total
