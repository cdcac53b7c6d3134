"""The QoS class written once (v1qos.GetPodQOS in pykubelet.api.qos): the API server's
status.qosClass, the kubelet's cgroups and kubectl describe's fallback (a pod without
status.qosClass) give the same class."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pykubelet.api.decode import decode_pod, encode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.qos import qos_class
from pykubelet.cli.kubectl.describe import describe_pod


def doc(containers: list[dict[str, Any]], inits: list[dict[str, Any]] | None = None
        ) -> dict[str, Any]:
    def c(i: int, r: dict[str, Any], prefix: str) -> dict[str, Any]:
        return {"name": f"{prefix}{i}", "image": "busybox", "resources": r}

    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [c(i, r, "c") for i, r in enumerate(containers)],
                 "initContainers": [c(i, r, "i") for i, r in enumerate(inits or [])]},
    }


GUARANTEED = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
CASES = [
    (doc([{}]), "BestEffort"),
    (doc([GUARANTEED]), "Guaranteed"),
    (doc([{"limits": {"cpu": "1", "memory": "1Gi"}}]), "Guaranteed"),
    (doc([{"requests": {"cpu": "500m"}}]), "Burstable"),
    # zero quantities count as unset
    (doc([{"requests": {"cpu": "0"}}]), "BestEffort"),
    # init containers count: one without limits makes the pod burstable
    (doc([GUARANTEED], [{"requests": {"cpu": "100m"}}]), "Burstable"),
    # a resource QoS does not consider changes nothing
    (doc([{"requests": {"example.com/gpu": "1"}}]), "BestEffort"),
]


def described_qos(pod: dict[str, Any]) -> str:
    (line,) = [ln for ln in describe_pod(pod, None).splitlines() if ln.startswith("QoS Class:")]
    return line.split()[-1]


@pytest.mark.parametrize(("pod", "qos"), CASES)
def test_one_class_everywhere(pod: dict[str, Any], qos: str) -> None:
    """The API server's class of the defaulted pod, and describe's of the pod as served
    (defaulted, without status.qosClass)."""
    served = set_defaults_pod(decode_pod(pod))
    assert qos_class(served) == qos
    assert described_qos(encode_pod(served)) == qos


def test_describe_prefers_the_recorded_class() -> None:
    pod = doc([{}])
    pod["status"] = {"qosClass": "Guaranteed"}
    assert described_qos(pod) == "Guaranteed"


def test_the_rule_stands_on_the_standard_library() -> None:
    code = ("import json, sys; before = set(sys.modules); import pykubelet.api.qos; "
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    new = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True).stdout)
    ours = {"pykubelet", "pykubelet.api", "pykubelet.api.qos"}
    assert [m for m in new if m.split(".")[0] not in sys.stdlib_module_names
            and m not in ours] == []
