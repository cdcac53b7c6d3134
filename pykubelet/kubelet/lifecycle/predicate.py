"""Pod admission as kubelet's predicateAdmitHandler does it (lifecycle/predicate.go).

Before a pod runs, the node checks it against its allocatable resources and the
pods it already admitted (noderesources.Fits: pods, cpu, memory,
ephemeral-storage, extended resources), then node name, node selector, host ports
and NoExecute taints. Only the first failure is reported: an insufficient resource
gives reason `OutOf<resource>` (OutOfcpu, OutOfmemory, OutOfpods) and the message
"Node didn't have enough resource: cpu, requested: 2000, used: 500, capacity: 2000";
a predicate gives its plugin name and "Predicate NodeName failed: ...". A rejected
pod changes nothing on the node; the caller marks it Failed with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.types import Container, Pod, Toleration, is_restartable_init_container

OUT_OF_CPU = "OutOfcpu"
OUT_OF_MEMORY = "OutOfmemory"
OUT_OF_EPHEMERAL_STORAGE = "OutOfephemeral-storage"
OUT_OF_PODS = "OutOfpods"

NODE_AFFINITY = "NodeAffinity"
NODE_NAME = "NodeName"
NODE_PORTS = "NodePorts"
TAINT_TOLERATION = "TaintToleration"
ERR_REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"
ERR_REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
ERR_REASON_TAINTS = "node(s) had taints that the pod didn't tolerate"

_NATIVE = ("cpu", "memory", "ephemeral-storage")


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

    def allocatable_amount(self, resource: str) -> int:
        q = self.allocatable.get(resource)
        if q is None:
            return 0
        return q.milli_value() if resource == "cpu" else q.value()


@dataclass(frozen=True)
class AdmitResult:
    admit: bool
    reason: str = ""
    message: str = ""


def _amount(resource: str, q: Quantity) -> int:
    return q.milli_value() if resource == "cpu" else q.value()


def _container_requests(c: Container) -> dict[str, int]:
    return {name: _amount(name, q) for name, q in c.resources.requests.items()}


def pod_requests(pod: Pod) -> dict[str, int]:
    """resourcehelper.PodRequests: max(sum of app containers and sidecars, each init
    container plus the sidecars started before it) plus overhead; cpu in millicores,
    the rest in units (bytes)."""
    total: dict[str, int] = {}
    for c in pod.spec.containers:
        for name, amount in _container_requests(c).items():
            total[name] = total.get(name, 0) + amount
    sidecars: dict[str, int] = {}  # the sidecars started so far, summed
    init_max: dict[str, int] = {}
    for c in pod.spec.init_containers:
        reqs = _container_requests(c)
        if is_restartable_init_container(c):
            for name, amount in reqs.items():
                total[name] = total.get(name, 0) + amount  # it runs beside the app
                sidecars[name] = sidecars.get(name, 0) + amount
            during = dict(sidecars)
        else:
            during = dict(sidecars)
            for name, amount in reqs.items():
                during[name] = during.get(name, 0) + amount
        for name, amount in during.items():
            init_max[name] = max(init_max.get(name, 0), amount)
    for name, amount in init_max.items():
        total[name] = max(total.get(name, 0), amount)
    for name, q in pod.spec.overhead.items():
        total[name] = total.get(name, 0) + _amount(name, q)
    return total


def _is_extended(resource: str) -> bool:
    return resource not in _NATIVE and not resource.startswith("hugepages-") and "/" in resource


def _insufficient(resource: str, requested: int, used: int, capacity: int) -> AdmitResult:
    reason = {
        "cpu": OUT_OF_CPU,
        "memory": OUT_OF_MEMORY,
        "ephemeral-storage": OUT_OF_EPHEMERAL_STORAGE,
        "pods": OUT_OF_PODS,
    }.get(resource, f"OutOf{resource}")
    return AdmitResult(
        admit=False,
        reason=reason,
        message=(
            f"Node didn't have enough resource: {resource}, requested: {requested}, "
            f"used: {used}, capacity: {capacity}"
        ),
    )


def _predicate(name: str, desc: str) -> AdmitResult:
    return AdmitResult(admit=False, reason=name, message=f"Predicate {name} failed: {desc}")


def fits_resources(pod: Pod, node: NodeInfo, admitted: Sequence[Pod]) -> list[AdmitResult]:
    """noderesources.Fits, every failure in upstream's order."""
    out: list[AdmitResult] = []
    allowed_pods = node.allocatable_amount("pods")
    if len(admitted) + 1 > allowed_pods:
        out.append(_insufficient("pods", 1, len(admitted), allowed_pods))
    request = {
        name: amount
        for name, amount in pod_requests(pod).items()
        if not (_is_extended(name) and name not in node.allocatable)
    }
    if not any(request.values()):
        return out
    used: dict[str, int] = {}
    for other in admitted:
        for name, amount in pod_requests(other).items():
            used[name] = used.get(name, 0) + amount
    ordered = [r for r in _NATIVE if r in request] + sorted(r for r in request if r not in _NATIVE)
    for name in ordered:
        wanted = request[name]
        if wanted <= 0:
            continue
        capacity = node.allocatable_amount(name)
        if wanted > capacity - used.get(name, 0):
            out.append(_insufficient(name, wanted, used.get(name, 0), capacity))
    return out


def _host_ports(pod: Pod) -> set[tuple[str, str, int]]:
    ports = set()
    for c in (*pod.spec.init_containers, *pod.spec.containers):
        for p in c.ports:
            if p.host_port:
                ports.add((p.host_ip or "0.0.0.0", p.protocol or "TCP", p.host_port))
    return ports


def _ports_conflict(a: set[tuple[str, str, int]], b: set[tuple[str, str, int]]) -> bool:
    for ip, proto, port in a:
        for ip2, proto2, port2 in b:
            if port == port2 and proto == proto2 and (ip == ip2 or "0.0.0.0" in (ip, ip2)):
                return True
    return False


def _tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.value == taint.value  # "Equal" (the default operator)


def admit(
    pod: Pod, node: NodeInfo, admitted: Sequence[Pod], *, static: bool = False
) -> AdmitResult:
    """The predicate admit handler: the first failure, or admit.

    `admitted` are the node's other active (admitted, not terminal) pods.
    """
    failures = fits_resources(pod, node, admitted)
    if pod.spec.node_selector and any(
        node.labels.get(k) != v for k, v in pod.spec.node_selector.items()
    ):
        failures.append(_predicate(NODE_AFFINITY, ERR_REASON_NODE_AFFINITY))
    if pod.spec.node_name and pod.spec.node_name != node.name:
        failures.append(_predicate(NODE_NAME, ERR_REASON_NODE_NAME))
    wanted = _host_ports(pod)
    if wanted and any(_ports_conflict(wanted, _host_ports(other)) for other in admitted):
        failures.append(_predicate(NODE_PORTS, ERR_REASON_NODE_PORTS))
    if not static:
        for taint in node.taints:
            if taint.effect != "NoExecute":
                continue
            if not any(_tolerates(t, taint) for t in pod.spec.tolerations):
                failures.append(_predicate(TAINT_TOLERATION, ERR_REASON_TAINTS))
                break
    return failures[0] if failures else AdmitResult(admit=True)
