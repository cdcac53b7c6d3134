"""ClaimPods and its writes, shared by the workload controllers
(controller_ref_manager.go): the decision as a table, and the manager's writes over a
stand-in store: adoption after canAdopt's fresh read (a stale or deleting owner adopts
nothing), an adopted object returned as written, one taken by another controller in
between left out, releases written, and the adopt/release hooks applied."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.controller_ref_manager import (
    ControllerRefManager,
    claim_pods,
)

Obj = dict[str, Any]
SELECTOR = {"matchLabels": {"app": "web"}}


def owner(uid: str = "u1", **meta: Any) -> Obj:
    return {"metadata": {"name": "web", "namespace": "ns", "uid": uid, **meta},
            "spec": {"selector": SELECTOR}}


def pod(name: str, labels: dict[str, str] | None = None, controller: str | None = None,
        **meta: Any) -> Obj:
    m: Obj = {"name": name, "namespace": "ns", "labels": labels or {"app": "web"}, **meta}
    if controller is not None:
        m["ownerReferences"] = [{"uid": controller, "controller": True, "kind": "ReplicaSet",
                                 "name": "web"}]
    return {"metadata": m}


class Entry:
    def __init__(self, obj: Obj) -> None:
        self._obj = obj

    def obj(self) -> Obj:
        return self._obj


class Store:
    """guaranteed_update and lookup over a dict, as GenericStore does them."""

    def __init__(self, *objs: Obj) -> None:
        self.objs = {o["metadata"]["name"]: o for o in objs}

    def lookup(self, namespace: str, name: str) -> Entry | None:
        return Entry(self.objs[name]) if name in self.objs else None

    async def guaranteed_update(self, namespace: str, name: str,
                                mutate: Callable[[Obj], Obj | None]) -> Obj:
        if name not in self.objs:
            raise errors.StatusError(404, "NotFound", f'pods "{name}" not found')
        out = mutate(copy.deepcopy(self.objs[name]))
        if out is not None:
            self.objs[name] = out
        return self.objs[name]


def refs(obj: Obj) -> list[Any]:
    return [r["uid"] for r in obj["metadata"].get("ownerReferences") or []]


def test_claim_pods_keeps_adopts_and_releases() -> None:
    mine, orphan = pod("mine", controller="u1"), pod("orphan")
    moved = pod("moved", {"app": "db"}, controller="u1")
    theirs, dying = pod("theirs", controller="u2"), pod("dying", deletionTimestamp="t")
    got = claim_pods(owner(), [mine, orphan, moved, theirs, dying])
    assert got.owned == [mine, orphan]
    assert got.adopt == [orphan]
    assert got.release == [moved]
    deleting = claim_pods(owner(deletionTimestamp="t"), [mine, orphan, moved])
    assert deleting.owned == [mine]
    assert not deleting.adopt
    assert not deleting.release


def test_manager_adopts_releases_and_returns_the_written_objects() -> None:
    mine, orphan, moved = pod("mine", controller="u1"), pod("orphan"), pod(
        "moved", {"app": "db"}, controller="u1")
    pods, owners = Store(mine, orphan, moved), Store(owner())
    mgr = ControllerRefManager(pods, owners, "apps/v1", "ReplicaSet")  # type: ignore[arg-type]
    owned = asyncio.run(mgr.claim(owner(), claim_pods(owner(), [mine, orphan, moved])))
    assert [p["metadata"]["name"] for p in owned] == ["mine", "orphan"]
    assert refs(owned[1]) == ["u1"]
    assert owned[1] is pods.objs["orphan"]
    assert refs(pods.objs["moved"]) == []


def test_manager_adopts_nothing_for_a_stale_or_deleting_owner() -> None:
    for fresh in (owner("other-uid"), owner(deletionTimestamp="t")):
        orphan = pod("orphan")
        pods = Store(orphan)
        mgr = ControllerRefManager(pods, Store(fresh), "apps/v1", "ReplicaSet")  # type: ignore[arg-type]
        owned = asyncio.run(mgr.claim(owner(), claim_pods(owner(), [orphan])))
        assert owned == []
        assert refs(pods.objs["orphan"]) == []


def test_an_orphan_taken_or_gone_in_between_is_left_out() -> None:
    orphan, gone = pod("orphan"), pod("gone")
    pods = Store(pod("orphan", controller="u2"))  # another controller took it; "gone" is gone
    mgr = ControllerRefManager(pods, Store(owner()), "apps/v1", "ReplicaSet")  # type: ignore[arg-type]
    owned = asyncio.run(mgr.claim(owner(), claim_pods(owner(), [orphan, gone])))
    assert owned == []
    assert refs(pods.objs["orphan"]) == ["u2"]


def test_hooks_extend_the_adopt_and_release_patches() -> None:
    def add(o: Obj | None) -> Obj | None:
        if o is not None:
            o["metadata"]["finalizers"] = ["f"]
        return o

    def drop(o: Obj | None) -> Obj | None:
        if o is not None:
            o["metadata"].pop("finalizers", None)
        return o

    orphan = pod("orphan")
    moved = pod("moved", {"app": "db"}, controller="u1", finalizers=["f"])
    pods = Store(orphan, moved)
    mgr = ControllerRefManager(pods, Store(owner()), "batch/v1", "Job",  # type: ignore[arg-type]
                               on_adopt=add, on_release=drop)
    owned = asyncio.run(mgr.claim(owner(), claim_pods(owner(), [orphan, moved])))
    assert owned[0]["metadata"]["finalizers"] == ["f"]
    assert "finalizers" not in pods.objs["moved"]["metadata"]
