"""What the scheduler reads is typed on the one model (pykubelet.api): pod-level resources,
taint/toleration matching, sidecars, and the fields round-trip unchanged."""

from __future__ import annotations

from pykubelet.api.decode import decode_pod, encode_pod
from pykubelet.api.machinery.quantity import Quantity
from pykubelet.api.types import Container, Taint, Toleration

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
        "containers": [{"name": "c", "image": "busybox"}],
        "initContainers": [{"name": "s", "image": "busybox", "restartPolicy": "Always"}],
        "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}},
        "overhead": {"cpu": "10m"},
        "priority": 5,
        "preemptionPolicy": "Never",
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        "schedulingGates": [{"name": "g"}],
    },
    "status": {"nominatedNodeName": "n1"},
}


def test_pod_level_resources_are_typed_and_round_trip() -> None:
    pod = decode_pod(POD)
    assert pod.spec.resources is not None
    assert pod.spec.resources.requests["cpu"] == Quantity.parse("250m")
    assert "resources" not in pod.spec.unmodelled
    assert pod.spec.init_containers[0].is_sidecar
    assert not pod.spec.containers[0].is_sidecar
    out = encode_pod(pod)
    for key in ("resources", "overhead", "priority", "preemptionPolicy",
                "topologySpreadConstraints", "schedulingGates"):
        assert out["spec"][key] == POD["spec"][key], key  # type: ignore[index]
    assert out["status"]["nominatedNodeName"] == "n1"


def test_taint_string_and_toleration_matching() -> None:
    t = Taint(key="k", value="v", effect="NoSchedule")
    assert t.to_string() == "k=v:NoSchedule"
    assert Taint(key="k", effect="NoExecute").to_string() == "k:NoExecute"
    assert Toleration(key="k", value="v").tolerates_taint(t)  # no operator: Equal
    assert not Toleration(key="k", value="w", operator="Equal").tolerates_taint(t)
    assert Toleration(operator="Exists").tolerates_taint(t)
    assert not Toleration(operator="Exists", effect="NoExecute").tolerates_taint(t)
    num = Taint(key="n", value="3", effect="NoSchedule")
    assert Toleration(key="n", operator="Lt", value="5").tolerates_taint(num)
    assert not Toleration(key="n", operator="Gt", value="5").tolerates_taint(num)
    assert not Container(name="c").is_sidecar
