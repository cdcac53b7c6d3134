"""Admission: noderesources.Fits and the predicates, with kubelet's reasons and messages."""

from __future__ import annotations

import pytest
from kubelet_builders import make_pod

from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.types import ContainerPort, Pod
from pykubelet.kubelet.lifecycle.predicate import NodeInfo, Taint, admit, pod_requests


def node(cpu: str = "2", memory: str = "4Gi", pods: int = 110, **kw: object) -> NodeInfo:
    alloc = {
        "cpu": Quantity.parse(cpu),
        "memory": Quantity.parse(memory),
        "pods": Quantity.parse(pods),
    }
    return NodeInfo(name="node1", allocatable=alloc, **kw)


def requesting(cpu: str | None = None, memory: str | None = None, **spec: object) -> Pod:
    pod = make_pod(**spec)
    req = {}
    if cpu:
        req["cpu"] = Quantity.parse(cpu)
    if memory:
        req["memory"] = Quantity.parse(memory)
    pod.spec.containers[0].resources.requests = req
    return pod


ADMIT_TABLE = [
    # pod cpu, pod memory, already admitted (cpu, memory), allowed pods, reason, message
    ("500m", "1Gi", [], 110, "", ""),
    ("2", None, [], 110, "", ""),
    (
        "2",
        None,
        [("500m", None)],
        110,
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 2000, used: 500, capacity: 2000",
    ),
    (
        None,
        "3Gi",
        [(None, "2Gi")],
        110,
        "OutOfmemory",
        "Node didn't have enough resource: memory, requested: 3221225472, "
        "used: 2147483648, capacity: 4294967296",
    ),
    (
        "100m",
        None,
        [(None, None), (None, None)],
        2,
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
    ),
    # pods is checked first, then cpu, then memory: the first is reported
    (
        "3",
        "8Gi",
        [(None, None)],
        1,
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1",
    ),
    (
        "3",
        "8Gi",
        [],
        110,
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
    ),
    # a best-effort pod fits a full node as long as there is a pod slot
    (None, None, [("2", "4Gi")], 110, "", ""),
]


@pytest.mark.parametrize(("cpu", "memory", "others", "pods", "reason", "message"), ADMIT_TABLE)
def test_admission_resources(
    cpu: str | None,
    memory: str | None,
    others: list[tuple[str | None, str | None]],
    pods: int,
    reason: str,
    message: str,
) -> None:
    admitted = [requesting(c, m) for c, m in others]
    result = admit(requesting(cpu, memory), node(pods=pods), admitted)
    assert result.admit is (reason == "")
    assert result.reason == reason
    assert result.message == message


def test_pod_requests_take_max_of_init_and_sum_of_apps_plus_overhead() -> None:
    pod = make_pod(containers=("a", "b"), init=("i",))
    pod.spec.containers[0].resources.requests = {"cpu": Quantity.parse("200m")}
    pod.spec.containers[1].resources.requests = {"cpu": Quantity.parse("300m")}
    pod.spec.init_containers[0].resources.requests = {
        "cpu": Quantity.parse("1"),
        "memory": Quantity.parse("64Mi"),
    }
    pod.spec.overhead = {"cpu": Quantity.parse("10m")}
    assert pod_requests(pod) == {"cpu": 1010, "memory": 64 * 2**20}


def test_missing_extended_resources_are_ignored_known_ones_checked() -> None:
    pod = make_pod()
    pod.spec.containers[0].resources.requests = {"example.com/gpu": Quantity.parse("1")}
    assert admit(pod, node(), []).admit
    n = node()
    n.allocatable = {**n.allocatable, "example.com/gpu": Quantity.parse("0")}
    result = admit(pod, n, [])
    assert result.reason == "OutOfexample.com/gpu"


def test_predicates() -> None:
    assert admit(make_pod(nodeName="node2"), node(), []).reason == "NodeName"
    assert admit(make_pod(nodeName="node2"), node(), []).message == (
        "Predicate NodeName failed: node(s) didn't match the requested node name"
    )
    selector = make_pod(nodeSelector={"disk": "ssd"})
    assert admit(selector, node(), []).reason == "NodeAffinity"
    assert admit(selector, node(labels={"disk": "ssd"}), []).admit


def test_host_port_conflict() -> None:
    def with_host_port(host_port: int) -> Pod:
        pod = make_pod()
        pod.spec.containers[0].ports = [
            ContainerPort(container_port=80, host_port=host_port, protocol="TCP")
        ]
        return pod

    result = admit(with_host_port(8080), node(), [with_host_port(8080)])
    assert result.reason == "NodePorts"
    assert result.message == (
        "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    )
    assert admit(with_host_port(8080), node(), [with_host_port(8081)]).admit


def test_no_execute_taints_reject_non_static_pods() -> None:
    n = node(taints=[Taint(key="dedicated", value="db", effect="NoExecute")])
    assert admit(make_pod(), n, []).reason == "TaintToleration"
    assert admit(make_pod(), n, [], static=True).admit
    tolerant = make_pod(tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert admit(tolerant, n, []).admit
    n = node(taints=[Taint(key="dedicated", value="db", effect="NoSchedule")])
    assert admit(make_pod(), n, []).admit


REQUIRED_SSD = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
            ]
        }
    }
}


def test_required_node_affinity_is_honoured() -> None:
    """nodeaffinity's required terms, as the scheduler's filter reads them (predicate.go calls
    the scheduler's AdmissionCheck): a node without the label rejects, one with it admits."""
    pod = make_pod(affinity=REQUIRED_SSD)
    result = admit(pod, node(labels={"disk": "hdd"}), [])
    assert (result.admit, result.reason, result.message) == (
        False,
        "NodeAffinity",
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    )
    assert admit(pod, node(labels={"disk": "ssd"}), []).admit


def test_pod_level_requests_are_honoured() -> None:
    """spec.resources.requests (PodLevelResources) replaces the containers' sum for cpu and
    memory, on the pod admitted and on the pods already running."""
    big = make_pod(resources={"requests": {"cpu": "3"}})
    result = admit(big, node(), [])
    assert (result.reason, result.message) == (
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
    )
    running = make_pod(resources={"requests": {"cpu": "1500m"}})
    result = admit(requesting("1"), node(), [running])
    assert (result.reason, result.message) == (
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000",
    )
    assert admit(requesting("500m"), node(), [running]).admit


def test_a_pod_the_scheduler_cannot_read_is_an_unexpected_admission_error() -> None:
    """A spread constraint without a topology key means nothing to the scheduler's model:
    the pod is refused, never admitted unchecked."""
    pod = make_pod(topologySpreadConstraints=[
        {"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "topologyKey": ""}])
    result = admit(pod, node(), [])
    assert (result.admit, result.reason) == (False, "UnexpectedAdmissionError")
    assert "spec.topologySpreadConstraints[0].topologyKey" in result.message


def test_only_sidecars_host_ports_outlive_the_init_phase() -> None:
    """schedutil.GetHostPorts: an init container that runs to completion holds no host port
    beside the running pods; a sidecar (restartPolicy Always) does."""
    def with_init_port(sidecar: bool) -> Pod:
        pod = make_pod(init=("i",))
        pod.spec.init_containers[0].ports = [
            ContainerPort(container_port=80, host_port=8080, protocol="TCP")]
        if sidecar:
            pod.spec.init_containers[0].restart_policy = "Always"
        return pod

    assert admit(with_init_port(False), node(), [with_init_port(False)]).admit
    assert admit(with_init_port(True), node(), [with_init_port(True)]).reason == "NodePorts"


def test_admission_does_not_bring_the_schedulers_numpy() -> None:
    """The node agent admits through the scheduler's per-node checks (pysched.plugins.node_fits),
    not its vectorised plugins: importing admission loads neither numpy nor the plugins."""
    import json
    import subprocess
    import sys

    code = ("import json, sys; import pykubelet.kubelet.lifecycle.predicate; "
            "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, check=True).stdout)
    assert [m for m in loaded if m == "numpy" or m.startswith("numpy.")] == []
    assert "pysched.plugins.node_resources_fit" not in loaded
    assert "pysched.admission" in loaded


def named(pod: Pod, name: str) -> Pod:
    pod.metadata.name, pod.metadata.uid = name, f"uid-{name}"
    return pod


def test_admitted_pods_are_converted_once_per_pod_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A burst admits pod k against the k-1 before it: each admitted pod reaches the
    scheduler's model once, not once per later admission (O(n) conversions, not O(n^2))."""
    from pykubelet.kubelet.lifecycle import predicate

    calls: list[str] = []
    real = predicate.sched_decode.pod

    def counting(wire: dict[str, object]) -> Pod:
        calls.append(str(wire.get("metadata", {}).get("name")))  # type: ignore[union-attr]
        return real(wire)

    monkeypatch.setattr(predicate.sched_decode, "pod", counting)
    cache = predicate.SchedulerPods()
    admitted: list[Pod] = []
    for i in range(10):
        pod = named(requesting("100m"), f"p{i}")
        assert admit(pod, node(), admitted, scheduler_pods=cache).admit
        admitted.append(pod)
    # each pod once as the incoming one, once as an admitted one (p9 never admitted yet)
    assert len(calls) == 10 + 9


def test_an_updated_pod_object_is_converted_afresh() -> None:
    """The cache keys on the Pod object: a new object under the same uid (an update) is
    read again, so its new requests count."""
    from pykubelet.kubelet.lifecycle.predicate import SchedulerPods

    cache = SchedulerPods()
    small = named(requesting("500m"), "a")
    assert admit(named(requesting("1"), "b"), node(), [small], scheduler_pods=cache).admit
    big = named(requesting("1500m"), "a")
    r = admit(named(requesting("1"), "b"), node(), [big], scheduler_pods=cache)
    assert (r.admit, r.reason) == (False, "OutOfcpu")
