"""The scheduler's integer views of the one model's resource lists, computed once per object.

pykubelet.api keeps quantities as written (``Quantity``: "500m", "1Gi"); the scheduler
compares integers, in upstream's canonical units: ``cpu`` in millicores
(Quantity.MilliValue()), every other resource in whole units (Quantity.Value(), bytes for
memory), both rounded up as apimachinery does. As upstream's framework.PodInfo precomputes
what plugins read, a pod's view (each container's requests, sidecars marked, pod-level
requests, overhead) is computed on first use and kept on the pod object: the scheduler's pods
are its own decoded copies (pysched.decode) and never change in place, so the view cannot go
stale. A container's request defaults to its limit, as the API server defaults it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.types import Pod, ResourceRequirements

IntResources = dict[str, int]

_VIEW = "_pysched_resources"  # the attribute a pod's view is kept in


# (quantity, millis, units) by text: Quantity.parse hands out one object per text, so a hit is
# that very object (hashing a Quantity hashes its Fraction, slower than the arithmetic)
_INTS: dict[str, tuple[Quantity, int, int]] = {}
_INTS_MAX = 4096


def _ints(q: Quantity) -> tuple[Quantity, int, int]:
    hit = _INTS.get(q.text)
    if hit is None or hit[0] is not q:
        hit = (q, q.milli_value(), q.value())
        if len(_INTS) < _INTS_MAX:
            _INTS[q.text] = hit
    return hit


def int_resources(rl: Mapping[str, Quantity]) -> IntResources:
    """A v1.ResourceList as canonical ints (cpu: millicores; others: units, rounded up);
    cached per quantity, as clusters repeat a few ("100m", "1Gi") thousands of times."""
    return {name: (_ints(q)[1] if name == "cpu" else _ints(q)[2]) for name, q in rl.items()}


def requests_of(res: ResourceRequirements) -> IntResources:
    """Requests, each missing one taken from its limit (the API server's defaulting)."""
    if not res.limits:
        return int_resources(res.requests)
    out = int_resources(res.limits)
    out.update(int_resources(res.requests))
    return out


@dataclass(slots=True)
class PodResources:
    """A pod's requests as ints: what pysched.resources totals (PodRequests); read only."""

    containers: list[IntResources]
    init_containers: list[tuple[IntResources, bool]]  # (requests, is a sidecar)
    pod_level: IntResources | None
    overhead: IntResources
    # pysched.resources.pod_requests' totals by (non-zero defaults, exclude overhead, skip
    # pod-level): summed once per pod, as upstream's PodInfo.CalculateResource caches them
    totals: dict[tuple[bool, bool, bool], IntResources] = field(default_factory=dict)
    # framework.PodInfo.calculate_resource's (Resource, non-zero cpu, non-zero memory), read only
    calculated: tuple[object, int, int] | None = None


def pod_resources(pod: Pod) -> PodResources:
    """The pod's integer view, computed on first use and kept on the pod."""
    view: PodResources | None = pod.__dict__.get(_VIEW)
    if view is None:
        spec = pod.spec
        view = PodResources(
            [requests_of(c.resources) for c in spec.containers],
            [(requests_of(c.resources), c.is_sidecar) for c in spec.init_containers],
            None if spec.resources is None else requests_of(spec.resources),
            int_resources(spec.overhead),
        )
        pod.__dict__[_VIEW] = view
    return view
