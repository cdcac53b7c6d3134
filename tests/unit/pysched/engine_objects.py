"""Small Node/Pod makers for the engine's tests, built through the strict decoders."""

from __future__ import annotations

from typing import Any

from pykubelet.api.objects import Node, PodDisruptionBudget
from pykubelet.api.types import Pod
from pysched import decode as sched_decode
from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code, Status
from pysched.framework.types import NodeInfo
from pysched.views import pod_resources


def node_dict(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    images: list[tuple[str, int]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    d: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)}},
    }
    if taints:
        d["spec"]["taints"] = taints
    if unschedulable:
        d["spec"]["unschedulable"] = True
    if images:
        d["status"]["images"] = [{"names": [n], "sizeBytes": s} for n, s in images]
    return d


def make_node(name: str, **kw: Any) -> Node:
    return sched_decode.node(node_dict(name, **kw))


def pod_dict(
    name: str,
    cpu: str | None = "100m",
    memory: str | None = "100Mi",
    node: str = "",
    priority: int | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    host_port: int = 0,
    image: str = "busybox:1.36",
    preemption_policy: str | None = None,
    nominated: str = "",
    start_time: str | None = None,
) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    if host_port:
        container["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    status: dict[str, Any] = {}
    if nominated:
        status["nominatedNodeName"] = nominated
    if start_time:
        status["startTime"] = start_time
    d = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "labels": labels or {},
        },
        "spec": spec,
        "status": status,
    }
    return d


def make_pod(name: str, **kw: Any) -> Pod:
    return sched_decode.pod(pod_dict(name, **kw))


def make_pdb(
    name: str, match_labels: dict[str, str], allowed: int, namespace: str = "default"
) -> PodDisruptionBudget:
    return sched_decode.pdb(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": match_labels}, "minAvailable": 1},
            "status": {"disruptionsAllowed": allowed},
        }
    )


# ---------------------------------------------------------------- small fake plugins


class CPUFit:
    def name(self) -> str:
        return "FakeFit"

    def filter(self, state: CycleState, pod: Any, ni: NodeInfo) -> Status | None:
        want = sum(r.get("cpu", 0) for r in pod_resources(pod).containers)
        if ni.requested.milli_cpu + want > ni.allocatable.milli_cpu:
            return Status(Code.UNSCHEDULABLE, ["Insufficient cpu"])
        return None


class NoTaints:
    def name(self) -> str:
        return "FakeTaint"

    def filter(self, state: CycleState, pod: Any, ni: NodeInfo) -> Status | None:
        for t in ni.node.spec.taints:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                [f"node(s) had untolerated taint {{{t.key}: {t.value}}}"],
            )
        return None


class FreeCPUScore:
    """Score = free millicores / 100, capped at 100 (no normalisation)."""

    def name(self) -> str:
        return "FakeScore"

    def score(self, state: CycleState, pod: Any, ni: NodeInfo) -> tuple[int, Status | None]:
        return min(100, (ni.allocatable.milli_cpu - ni.requested.milli_cpu) // 100), None

    def score_extensions(self) -> None:
        return None
