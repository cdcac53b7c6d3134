"""The three patch types, strategic merge as apimachinery's strategicpatch does it."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.controlplane.registry.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
)
from pykubelet.controlplane.registry.patch import apply_patch as _apply
from pykubelet.controlplane.registry.pods import PodStrategy

META = PodStrategy().patch_meta


def apply_patch(kind: str, original: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Patches of a Pod, with the Pod's patch metadata (as the registry applies them)."""
    return _apply(kind, original, patch, META)

POD = {
    "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
    "spec": {
        "containers": [
            {"name": "c1", "image": "i1", "env": [{"name": "E", "value": "1"}],
             "ports": [{"containerPort": 80}]},
            {"name": "c2", "image": "i2"},
        ],
        "tolerations": [{"key": "k", "operator": "Exists"}],
    },
}


def test_strategic_merge_merges_lists_by_key_and_keeps_other_fields() -> None:
    out = apply_patch(STRATEGIC_MERGE_PATCH, POD, {
        "spec": {"containers": [{"name": "c1", "image": "new"}]}})
    c1, c2 = out["spec"]["containers"]
    assert c1 == {"name": "c1", "image": "new", "env": [{"name": "E", "value": "1"}],
                  "ports": [{"containerPort": 80}]}
    assert c2 == {"name": "c2", "image": "i2"}
    assert POD["spec"]["containers"][0]["image"] == "i1"  # the input is untouched


def test_strategic_merge_nulls_delete_and_directives_apply() -> None:
    out = apply_patch(STRATEGIC_MERGE_PATCH, POD, {
        "metadata": {"labels": {"a": None, "c": "3"}, "finalizers": ["y"]},
        "spec": {"containers": [{"name": "c2", "$patch": "delete"}],
                 "tolerations": [{"key": "other", "operator": "Exists"}]}})
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert out["metadata"]["finalizers"] == ["x", "y"]  # a merge-strategy set
    assert [c["name"] for c in out["spec"]["containers"]] == ["c1"]
    assert out["spec"]["tolerations"] == [{"key": "other", "operator": "Exists"}]  # replaced
    ordered = apply_patch(STRATEGIC_MERGE_PATCH, POD, {
        "$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}],
        "spec": {}})
    assert ordered["spec"] == POD["spec"]
    ordered = apply_patch(STRATEGIC_MERGE_PATCH, POD, {"spec": {
        "$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}]}})
    assert [c["name"] for c in ordered["spec"]["containers"]] == ["c2", "c1"]
    replaced = apply_patch(STRATEGIC_MERGE_PATCH, POD, {"metadata": {"$patch": "replace",
                                                                     "name": "q"}})
    assert replaced["metadata"] == {"name": "q"}
    cordon = apply_patch(STRATEGIC_MERGE_PATCH, {"spec": {"unschedulable": True}},
                         {"spec": {"unschedulable": None}})
    assert cordon == {"spec": {}}


def test_merge_patch_replaces_lists() -> None:
    out = apply_patch(MERGE_PATCH, POD, {"spec": {"containers": [{"name": "only"}]}})
    assert out["spec"]["containers"] == [{"name": "only"}]


def test_json_patch_and_its_errors() -> None:
    out = apply_patch(JSON_PATCH, POD, [{"op": "replace", "path": "/metadata/name",
                                         "value": "z"}])
    assert out["metadata"]["name"] == "z"
    with pytest.raises(PatchError):
        apply_patch(JSON_PATCH, POD, [{"op": "remove", "path": "/nope"}])
    with pytest.raises(PatchError):
        apply_patch(JSON_PATCH, POD, {"op": "add"})
    with pytest.raises(PatchError):
        apply_patch(STRATEGIC_MERGE_PATCH, POD, {"spec": {"containers": [{"image": "x"}]}})
