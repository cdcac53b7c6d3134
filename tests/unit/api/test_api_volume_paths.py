"""Volume item paths and nodeSelector as upstream's ValidatePodSpec checks them (issue 24
item 20): configMap, secret, downwardAPI and projected item paths are local, without '..'
elements and not starting with '..' (the atomic writer's ``..data`` lives there); a
nodeSelector's keys and values are labels."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.validation import pod_errors

MINIMAL: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "app", "image": "busybox"}]},
}


def errors_for(spec: dict[str, Any]) -> list[str]:
    obj = copy.deepcopy(MINIMAL)
    obj["spec"].update(spec)
    return [str(e) for e in pod_errors(set_defaults_pod(decode_pod(obj)))]


def volume(source: dict[str, Any]) -> dict[str, Any]:
    return {"volumes": [{"name": "v", **source}]}


@pytest.mark.parametrize(("source", "field"), [
    ({"configMap": {"name": "c", "items": [{"key": "k", "path": "..data"}]}},
     "spec.volumes[0].configMap.items[0].path"),
    ({"secret": {"secretName": "s", "items": [{"key": "k", "path": "..x"}]}},
     "spec.volumes[0].secret.items[0].path"),
    ({"downwardAPI": {"items": [{"path": "..x",
                                 "fieldRef": {"fieldPath": "metadata.name"}}]}},
     "spec.volumes[0].downwardAPI.items[0].path"),
    ({"projected": {"sources": [{"configMap": {"name": "c",
                                               "items": [{"key": "k", "path": "..x"}]}}]}},
     "spec.volumes[0].projected.sources[0].configMap.items[0].path"),
])
def test_item_paths_may_not_start_with_dot_dot(source: dict[str, Any], field: str) -> None:
    assert errors_for(volume(source)) == [
        f"{field}: Invalid value: \"{'..data' if 'configMap' in source else '..x'}\": "
        "must not start with '..'"]


@pytest.mark.parametrize("source", [
    {"downwardAPI": {"items": [{"path": "../x", "fieldRef": {"fieldPath": "metadata.name"}}]}},
    {"projected": {"sources": [{"downwardAPI": {"items": [
        {"path": "../x", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
    {"projected": {"sources": [{"secret": {"name": "s",
                                           "items": [{"key": "k", "path": "a/../x"}]}}]}},
    {"projected": {"sources": [{"serviceAccountToken": {"path": "/abs"}}]}},
])
def test_projected_and_downward_paths_stay_inside(source: dict[str, Any]) -> None:
    errs = errors_for(volume(source))
    assert len(errs) == 1
    assert errs[0].endswith(("must not contain '..'", "must be a relative path"))


def test_good_paths_pass() -> None:
    assert errors_for(volume({"projected": {"sources": [
        {"configMap": {"name": "c", "items": [{"key": "k", "path": "a/b.txt"}]}},
        {"downwardAPI": {"items": [{"path": "labels",
                                    "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"serviceAccountToken": {"path": "token"}}]}})) == []


def test_node_selector_is_labels() -> None:
    errs = errors_for({"nodeSelector": {"bad key!": "v", "ok": "bad value!"}})
    assert errs[0].startswith('spec.nodeSelector: Invalid value: "bad key!": name part must')
    assert errs[1].startswith('spec.nodeSelector: Invalid value: "bad value!": a valid label')
    assert len(errs) == 2
