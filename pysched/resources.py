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
"""

from __future__ import annotations

from collections.abc import Mapping

from pysched.objects import Pod, ResourceList

DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest: 0.1 core
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest: 200 MiB
NON_ZERO_DEFAULTS: Mapping[str, int] = {
    "cpu": DEFAULT_MILLI_CPU_REQUEST,
    "memory": DEFAULT_MEMORY_REQUEST,
}


def _add(into: dict[str, int], add: Mapping[str, int]) -> None:
    for k, v in add.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        cur = into.get(k)
        if cur is None or v > cur:
            into[k] = v


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


def is_supported_pod_level_resource(name: str) -> bool:
    """cpu, memory and hugepages-* may be set at pod level."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def aggregate_container_requests(
    pod: Pod, non_missing: Mapping[str, int] | None = None
) -> ResourceList:
    """AggregateContainerRequests: containers, sidecars and init containers combined."""
    reqs: dict[str, int] = {}
    for c in pod.spec.containers:
        creqs: Mapping[str, int] = c.resources.requests
        if non_missing:
            creqs = _apply_non_missing(creqs, non_missing)
        _add(reqs, creqs)

    restartable: dict[str, int] = {}
    init_reqs: dict[str, int] = {}
    for c in pod.spec.init_containers:
        creqs = c.resources.requests
        if non_missing:
            creqs = _apply_non_missing(creqs, non_missing)
        if c.restart_policy == "Always":
            _add(reqs, creqs)
            _add(restartable, creqs)
            creqs = restartable
        else:
            tmp: dict[str, int] = {}
            _add(tmp, creqs)
            _add(tmp, restartable)
            creqs = tmp
        _max(init_reqs, creqs)
    _max(reqs, init_reqs)
    return reqs


def pod_requests(
    pod: Pod,
    non_missing: Mapping[str, int] | None = None,
    exclude_overhead: bool = False,
    skip_pod_level_resources: bool = False,
) -> ResourceList:
    """PodRequests: the pod's effective requests (cpu in millicores)."""
    reqs = aggregate_container_requests(pod, non_missing)
    pod_level = pod.spec.resources
    if not skip_pod_level_resources and pod_level is not None and pod_level.requests:
        for name, q in pod_level.requests.items():
            if is_supported_pod_level_resource(name):
                reqs[name] = q
    if not exclude_overhead and pod.spec.overhead:
        _add(reqs, pod.spec.overhead)
    return reqs


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
