"""pysched.admission: AdmissionCheck, the scheduler's filters as the kubelet calls them."""

from __future__ import annotations

from engine_objects import make_node, make_pod, pod_dict

from pysched import decode as sched_decode
from pysched.admission import admission_check, admit, untolerated_taint
from pysched.framework.types import NodeInfo


def test_every_failure_in_upstream_order() -> None:
    """Fits (pods, then each resource), node affinity, node name, node ports."""
    node = make_node("n1", cpu="1", memory="1Gi", pods=1, labels={"disk": "hdd"})
    running = make_pod("running", cpu="500m", memory="100Mi", node="n1", host_port=8080)
    pod = make_pod("p", cpu="2", memory="2Gi", node="n2", node_selector={"disk": "ssd"},
                   host_port=8080)
    results = admit(pod, node, [running])
    assert [(r.insufficient_resource.resource_name if r.insufficient_resource else r.name)
            for r in results] == ["pods", "cpu", "memory", "NodeAffinity", "NodeName", "NodePorts"]
    cpu = results[1].insufficient_resource
    assert cpu is not None
    assert (cpu.requested, cpu.used, cpu.capacity) == (2000, 500, 1000)
    assert results[3].reason == "node(s) didn't match Pod's node affinity/selector"


def test_first_failure_only_unless_all_are_asked() -> None:
    ni = NodeInfo()
    ni.set_node(make_node("n1", cpu="1", labels={"disk": "hdd"}))
    pod = make_pod("p", cpu="2", node_selector={"disk": "ssd"})
    assert len(admission_check(pod, ni, include_all_failures=False)) == 1
    assert len(admission_check(pod, ni, include_all_failures=True)) == 2


def test_required_node_affinity_and_pod_level_requests() -> None:
    node = make_node("n1", cpu="2", labels={"disk": "ssd"})
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "disk", "operator": "In", "values": ["nvme"]}]}]}}}
    assert [r.name for r in admit(make_pod("p", affinity=required), node, [])] == [
        "NodeAffinity"]
    d = pod_dict("p", cpu=None, memory=None)
    d["spec"]["resources"] = {"requests": {"cpu": "3"}}
    (fit,) = admit(sched_decode.pod(d), node, [])
    assert fit.insufficient_resource is not None
    assert (fit.insufficient_resource.resource_name, fit.insufficient_resource.requested) == (
        "cpu", 3000)


def test_untolerated_taint_of_one_effect() -> None:
    node = make_node("n1", taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])
    assert untolerated_taint(make_pod("p"), node, "NoExecute") is not None
    assert untolerated_taint(make_pod("p"), node, "NoSchedule") is None
    tolerant = make_pod("p", tolerations=[{"key": "k", "operator": "Exists"}])
    assert untolerated_taint(tolerant, node, "NoExecute") is None
