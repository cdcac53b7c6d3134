"""spec.schedulingGates: typed in the one model (PodSchedulingGate), so the update rule
(gates may only be removed) reads the typed field, as the scheduler does."""

from __future__ import annotations

import copy
from typing import Any

from pykubelet.api.decode import decode_pod, encode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod, PodSchedulingGate
from pykubelet.api.validation import pod_update_errors


def gated(*names: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "1"},
        "spec": {
            "containers": [{"name": "app", "image": "busybox:1.36"}],
            "schedulingGates": [{"name": n} for n in names],
        },
    }


def pod(*names: str) -> Pod:
    return set_defaults_pod(decode_pod(gated(*names)))


def test_gates_are_typed_and_round_trip() -> None:
    p = pod("example.com/a", "example.com/b")
    assert p.spec.scheduling_gates == [
        PodSchedulingGate(name="example.com/a"),
        PodSchedulingGate(name="example.com/b"),
    ]
    assert "schedulingGates" not in p.spec.unmodelled
    assert encode_pod(p)["spec"]["schedulingGates"] == [
        {"name": "example.com/a"}, {"name": "example.com/b"}]


def test_gates_may_be_removed_not_added() -> None:
    old = pod("example.com/a", "example.com/b")
    assert pod_update_errors(pod("example.com/b"), old) == []
    assert pod_update_errors(pod(), old) == []
    errors = pod_update_errors(pod("example.com/a", "example.com/c"), old)
    assert [(e.field, e.detail) for e in errors] == [(
        "spec.schedulingGates[1]",
        "only deletion is allowed, but found new scheduling gate 'example.com/c'",
    )]
    assert pod_update_errors(pod("example.com/a"), pod()) != []


def test_a_gate_change_is_the_only_spec_change_allowed_with_it() -> None:
    old = pod("example.com/a")
    new_doc = copy.deepcopy(gated())
    new_doc["spec"]["containers"][0]["name"] = "other"
    errors = pod_update_errors(set_defaults_pod(decode_pod(new_doc)), old)
    assert [e.field for e in errors] == ["spec"]
