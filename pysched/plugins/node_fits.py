"""The per-node checks of the filters the kubelet shares (noderesources.Fits, nodename.Fits,
nodeports.Fits, the NodeAffinity and TaintToleration names and reasons), in plain Python.

The plugins (node_resources_fit, node_name, node_ports, node_affinity, taint_toleration) filter
with them and add their vectorised paths over the node table (numpy) on top; AdmissionCheck
(pysched.admission), which the kubelet calls before it runs a pod, needs only these, so a
node agent that admits pods does not import numpy or the plugins' machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykubelet.api.types import Pod
from pysched.framework.types import HostPortInfo, NodeInfo, Resource
from pysched.resources import is_extended_resource_name, is_scalar_resource_name, pod_requests

NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_NAME = "NodeName"
NODE_NAME_ERR_REASON = "node(s) didn't match the requested node name"
NODE_PORTS = "NodePorts"
NODE_PORTS_ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
NODE_AFFINITY = "NodeAffinity"
NODE_AFFINITY_ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
TAINT_TOLERATION = "TaintToleration"
# ErrReasonNotMatch: the kubelet's reason when it refuses a pod for a NoExecute taint
TAINT_TOLERATION_ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"


def compute_pod_resource_request(pod: Pod) -> Resource:
    """computePodResourceRequest: SetMaxResource over PodRequests (cpu, memory, eph., scalars)."""
    r = Resource()
    for name, q in pod_requests(pod).items():
        if name == "cpu":
            r.milli_cpu = q
        elif name == "memory":
            r.memory = q
        elif name == "ephemeral-storage":
            r.ephemeral_storage = q
        elif is_scalar_resource_name(name):
            r.scalar[name] = q
    return r


@dataclass(slots=True)
class InsufficientResource:
    """noderesources.InsufficientResource: what did not fit, by how much; ``unresolvable`` when
    the request exceeds the node's whole allocatable (preemption cannot help)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def is_ignored(name: str, ignored: frozenset[str], ignored_groups: frozenset[str]) -> bool:
    """An extended resource the Fit args say not to check (by name or by its domain)."""
    return is_extended_resource_name(name) and (
        name in ignored or bool(ignored_groups and name.split("/")[0] in ignored_groups)
    )


def fits_request(
    req: Resource,
    ni: NodeInfo,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    out: list[InsufficientResource] = []
    alloc, used = ni.allocatable, ni.requested
    if len(ni.pods) + 1 > alloc.allowed_pod_number:
        out.append(
            InsufficientResource("pods", "Too many pods", 1, len(ni.pods), alloc.allowed_pod_number)
        )
    if req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar:
        return out
    if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(
            InsufficientResource(
                "cpu",
                "Insufficient cpu",
                req.milli_cpu,
                used.milli_cpu,
                alloc.milli_cpu,
                req.milli_cpu > alloc.milli_cpu,
            )
        )
    if req.memory > 0 and req.memory > alloc.memory - used.memory:
        out.append(
            InsufficientResource(
                "memory",
                "Insufficient memory",
                req.memory,
                used.memory,
                alloc.memory,
                req.memory > alloc.memory,
            )
        )
    if (
        req.ephemeral_storage > 0
        and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage
    ):
        out.append(
            InsufficientResource(
                "ephemeral-storage",
                "Insufficient ephemeral-storage",
                req.ephemeral_storage,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
                req.ephemeral_storage > alloc.ephemeral_storage,
            )
        )
    for name, q in req.scalar.items():
        if q == 0 or is_ignored(name, ignored, ignored_groups):
            continue
        a = alloc.scalar.get(name, 0)
        u = used.scalar.get(name, 0)
        if q > a - u:
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a, q > a))
    return out


def fits(pod: Pod, ni: NodeInfo) -> list[InsufficientResource]:
    """Fits: the insufficient resources of `pod` on `ni` (empty when it fits)."""
    return fits_request(compute_pod_resource_request(pod), ni)


def node_name_fits(pod: Pod, node_info: NodeInfo) -> bool:
    """nodename.Fits: a pod with spec.nodeName fits only that node."""
    return not pod.spec.node_name or pod.spec.node_name == node_info.name


def fits_ports(want: list[tuple[str, str, int]], used: HostPortInfo) -> bool:
    """nodeports.Fits over the pod's host ports: none in use on the node (0.0.0.0 conflicts
    with every IP)."""
    return not any(used.check_conflict(ip, proto, port) for ip, proto, port in want)
