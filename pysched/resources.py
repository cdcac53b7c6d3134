"""Pod request computations (k8s.io/component-helpers/resource.PodRequests).

Rules, as upstream:
- regular containers add up;
- a sidecar (init container with restartPolicy Always) adds to the running
  total, and every later init container runs alongside the sidecars started
  before it; the pod needs the max of (sum of containers + sidecars) and each
  init container's (own + earlier sidecars) requests;
- pod-level `spec.resources.requests` (PodLevelResources) replaces the
  aggregate for the resources it names (cpu, memory, hugepages-*);
- `spec.overhead` is added on top unless excluded;
- `non_missing` fills a container's *missing* request (not an explicit 0):
  the scheduler uses cpu 100m / memory 200Mi for the "non-zero" view.
The totals are the ground floor's one rule (pykubelet.api.resourcehelper) over the
scheduler's integer views (pysched.views), computed once per pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pykubelet.api import resourcehelper
from pykubelet.api.types import Pod
from pysched.views import IntResources, pod_resources

ResourceList = IntResources

DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest: 0.1 core
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest: 200 MiB
NON_ZERO_DEFAULTS: Mapping[str, int] = {
    "cpu": DEFAULT_MILLI_CPU_REQUEST,
    "memory": DEFAULT_MEMORY_REQUEST,
}


def _apply_non_missing(
    reqs: Mapping[str, int], non_missing: Mapping[str, int]
) -> Mapping[str, int]:
    if all(k in reqs for k in non_missing):
        return reqs
    out = dict(reqs)
    for k, v in non_missing.items():
        if k not in out:
            out[k] = v
    return out


def _container_requests(
    pod: Pod, non_missing: Mapping[str, int] | None
) -> tuple[Sequence[Mapping[str, int]], Sequence[tuple[Mapping[str, int], bool]]]:
    """Each container's requests (missing ones filled from ``non_missing``), and each init
    container's with whether it is a sidecar: what the one rule totals."""
    view = pod_resources(pod)
    if non_missing:
        fill = _apply_non_missing
        return (
            [fill(r, non_missing) for r in view.containers],
            [(fill(r, non_missing), sidecar) for r, sidecar in view.init_containers],
        )
    return view.containers, view.init_containers  # read, never written


def aggregate_container_requests(
    pod: Pod, non_missing: Mapping[str, int] | None = None
) -> ResourceList:
    """AggregateContainerRequests: containers, sidecars and init containers combined."""
    return resourcehelper.aggregate_containers(*_container_requests(pod, non_missing))


def pod_requests(
    pod: Pod,
    non_missing: Mapping[str, int] | None = None,
    exclude_overhead: bool = False,
    skip_pod_level_resources: bool = False,
) -> ResourceList:
    """PodRequests: the pod's effective requests (cpu in millicores). The totals with no or
    the scheduler's non-zero defaults are kept on the pod's view (its copies share it); each
    caller gets its own dict, free to change."""
    view = pod_resources(pod)
    nz = non_missing is NON_ZERO_DEFAULTS
    key = (nz, exclude_overhead, skip_pod_level_resources)
    if non_missing is None or nz:
        hit = view.totals.get(key)
        if hit is not None:
            return dict(hit)
    total = resourcehelper.pod_requests(
        *_container_requests(pod, non_missing),
        pod_level=None if skip_pod_level_resources else view.pod_level,
        overhead=None if exclude_overhead else view.overhead,
    )
    if non_missing is None or nz:
        view.totals[key] = dict(total)
    return total


def non_zero_pod_requests(pod: Pod) -> ResourceList:
    """PodRequests with missing container cpu/memory requests defaulted to 100m/200Mi."""
    return pod_requests(pod, non_missing=NON_ZERO_DEFAULTS)


def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended, hugepages, prefixed-native, attachable volumes."""
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: domain-prefixed, outside kubernetes.io/, not requests.*."""
    if "/" not in name or "kubernetes.io/" in name:
        return False
    return not name.startswith("requests.")
