"""controllers/controller_ref.py: reading, making, adopting and releasing controller
ownerReferences (metav1.GetControllerOf/NewControllerRef, ControllerRefManager)."""

from __future__ import annotations

import copy
from typing import Any

from pykubelet.controlplane.controllers.controller_ref import (
    adopt,
    controller_of,
    controller_ref,
    new_controller_ref,
    release,
)

OWNER = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}}
REF = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1",
       "controller": True, "blockOwnerDeletion": True}


def test_new_controller_ref_sets_controller_and_block_owner_deletion() -> None:
    assert new_controller_ref(OWNER, "apps/v1", "ReplicaSet") == REF
    assert new_controller_ref({}, "batch/v1", "Job")["name"] == ""


def test_controller_ref_and_controller_of() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u2"}
    obj: dict[str, Any] = {"metadata": {"ownerReferences": [other, REF]}}
    assert controller_ref(obj) is REF
    assert controller_ref({"metadata": {"ownerReferences": [other]}}) is None
    assert controller_of(obj, "ReplicaSet", "apps/v1") == REF
    assert controller_of(obj, "ReplicaSet", "apps/v1") is not REF  # a copy
    assert controller_of(obj, "Job", "batch/v1") is None
    assert controller_of(obj, "ReplicaSet", "extensions/v1beta1") is None


def test_adopt_appends_the_ref_unless_owned_or_deleting() -> None:
    orphan: dict[str, Any] = {"metadata": {"name": "p"}}
    assert adopt(orphan, REF) is orphan
    assert orphan["metadata"]["ownerReferences"] == [REF]
    owned = copy.deepcopy(orphan)
    assert adopt(owned, dict(REF, uid="u9")) is None
    deleting: dict[str, Any] = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert adopt(deleting, REF) is None


def test_release_drops_the_owners_refs_and_the_field_when_none_remain() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u2"}
    two: dict[str, Any] = {"metadata": {"ownerReferences": [other, REF]}}
    assert release(two, "u1") is two
    assert two["metadata"]["ownerReferences"] == [other]
    one: dict[str, Any] = {"metadata": {"ownerReferences": [REF]}}
    assert release(one, "u1") is one
    assert "ownerReferences" not in one["metadata"]
    assert release({"metadata": {"ownerReferences": [other]}}, "u1") is None
