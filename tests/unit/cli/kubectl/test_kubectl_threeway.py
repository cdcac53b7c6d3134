"""apply's three-way strategic merge patch equals kubectl's: the vectors in
apply_patches.json were captured from kubectl 1.32's own PATCH bodies (-v=9) against a
pykube control plane (current object, the new manifest, kubectl's patch)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pykubelet.cli.kubectl.apply import _modified, _original, _serialized
from pykubelet.cli.kubectl.threeway import three_way_patch

VECTORS = json.loads((Path(__file__).parent / "apply_patches.json").read_text())


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_patch_is_kubectls(case: dict[str, Any]) -> None:
    manifest = copy.deepcopy(case["manifest"])
    manifest["metadata"]["namespace"] = case["namespace"]
    patch = three_way_patch(_original(case["current"]), _modified(manifest), case["current"])
    assert patch == case["patch"]


def test_last_applied_annotation_is_kubectls_bytes() -> None:
    case = next(c for c in VECTORS if c["name"] == "labels")
    manifest = copy.deepcopy(case["manifest"])
    manifest["metadata"]["namespace"] = case["namespace"]
    want = case["patch"]["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"]
    assert _serialized(manifest) == want
    assert want.endswith("}\n")
    assert '"annotations":{}' in want


def test_merge_patch_for_unknown_kinds_replaces_lists_without_directives() -> None:
    original = {"kind": "Thing", "spec": {"items": [{"name": "a"}], "x": 1}}
    modified = {"kind": "Thing", "spec": {"items": [{"name": "b"}]}}
    current = {"kind": "Thing", "spec": {"items": [{"name": "a", "extra": 1}], "x": 1,
                                         "server": True}}
    patch = three_way_patch(original, modified, current, strategic=False)
    assert patch == {"spec": {"items": [{"name": "b"}], "x": None}}


def test_numbers_compare_as_go_does() -> None:
    # 1 and 1.0 are one JSON number; true is not 1
    assert three_way_patch({}, {"a": 1.0, "b": True}, {"a": 1, "b": 1}) == {"b": True}


def test_nothing_to_do_is_an_empty_patch() -> None:
    obj = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c"}]}}
    assert three_way_patch(obj, obj, copy.deepcopy(obj)) == {}
