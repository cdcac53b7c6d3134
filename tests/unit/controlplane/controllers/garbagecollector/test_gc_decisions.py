"""The garbage collector's decisions as tables (garbagecollector.go's attemptToDeleteItem,
classifyReferences, processDeletingDependentsItem), no server."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.controlplane.controllers.garbagecollector import decisions as gc
from pykubelet.controlplane.controllers.garbagecollector.graph import Graph, Node


def obj(name: str, uid: str, *owners: dict[str, Any], ns: str = "default",
        deleting: bool = False, finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "uid": uid}
    if ns:
        m["namespace"] = ns
    if owners:
        m["ownerReferences"] = list(owners)
    if deleting:
        m["deletionTimestamp"] = "2026-12-03T18:00:00Z"
    if finalizers:
        m["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m}


def ref(uid: str, name: str = "owner", block: bool | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid}
    if block is not None:
        r["blockOwnerDeletion"] = block
    return r


OWNER = obj("owner", "o1")
FOREGROUND_OWNER = obj("owner", "o1", deleting=True, finalizers=("foregroundDeletion",))


@pytest.mark.parametrize(("ref_", "owner", "namespaced", "ns", "want"), [
    (ref("o1"), OWNER, True, "default", gc.SOLID),
    (ref("o1"), None, True, "default", gc.DANGLING),
    (ref("o2"), OWNER, True, "default", gc.DANGLING),  # same name, another uid
    (ref("o1"), FOREGROUND_OWNER, True, "default", gc.WAITING),
    (ref("o1"), obj("owner", "o1", deleting=True, finalizers=("orphan",)), True, "default",
     gc.SOLID),
    (ref("o1"), None, True, "", gc.INVALID),  # cluster-scoped dependent, namespaced owner
    (ref("o1"), obj("owner", "o1", ns=""), False, "default", gc.SOLID),  # cluster owner
])
def test_owner_state(ref_: dict[str, Any], owner: dict[str, Any] | None, namespaced: bool,
                     ns: str, want: str) -> None:
    assert gc.owner_state(ref_, owner, namespaced, ns) == want


@pytest.mark.parametrize(("item", "states", "dependents", "want"), [
    # no owners: nothing to collect
    (obj("d", "d1"), {}, [], gc.NOTHING),
    # a live owner keeps it
    (obj("d", "d1", ref("o1")), {"o1": gc.SOLID}, [], gc.NOTHING),
    # its only owner is gone: background delete
    (obj("d", "d1", ref("o1")), {"o1": gc.DANGLING}, [], gc.Action("delete",
                                                                    policy="Background")),
    # an orphan finalizer already on it is honoured
    (obj("d", "d1", ref("o1"), finalizers=("orphan",)), {"o1": gc.DANGLING}, [],
     gc.Action("delete", policy="Orphan")),
    # one owner gone, one alive: the dangling reference is dropped, the object stays
    (obj("d", "d1", ref("o1"), ref("o2", "other")), {"o1": gc.DANGLING, "o2": gc.SOLID}, [],
     gc.Action("patch-owners", uids=("o1",))),
    # its owner waits for it and it has dependents of its own: foreground
    (obj("d", "d1", ref("o1", block=True)), {"o1": gc.WAITING}, [obj("e", "e1", ref("d1"))],
     gc.Action("delete", policy="Foreground")),
    # ... and a dependent waits for it too: unblock first (a possible cycle)
    (obj("d", "d1", ref("o1", block=True)), {"o1": gc.WAITING},
     [obj("e", "e1", ref("d1"), deleting=True, finalizers=("foregroundDeletion",))],
     gc.Action("unblock-then-delete", policy="Foreground")),
    # its owner waits and it has no dependents: background
    (obj("d", "d1", ref("o1", block=True)), {"o1": gc.WAITING}, [],
     gc.Action("delete", policy="Background")),
    # already being deleted: nothing more
    (obj("d", "d1", ref("o1"), deleting=True), {"o1": gc.DANGLING}, [], gc.NOTHING),
    # a cluster-scoped object naming a namespaced owner: never collected, not retried
    (obj("d", "d1", ref("o1"), ns=""), {"o1": gc.INVALID}, [], gc.Action(
        "forget", reason="a cluster-scoped object cannot have a namespaced owner")),
])
def test_attempt_to_delete(item: dict[str, Any], states: dict[str, str],
                           dependents: list[dict[str, Any]], want: gc.Action) -> None:
    assert gc.attempt_to_delete(item, states, dependents) == want


def test_foreground_owner_waits_for_blocking_dependents_only() -> None:
    blocking = obj("a", "a1", ref("o1", block=True))
    loose = obj("b", "b1", ref("o1"))
    assert gc.attempt_to_delete(FOREGROUND_OWNER, {}, [blocking, loose]) == gc.Action(
        "enqueue", uids=("a1",))
    going = obj("a", "a1", ref("o1", block=True), deleting=True)
    assert gc.attempt_to_delete(FOREGROUND_OWNER, {}, [going, loose]) == gc.NOTHING
    assert gc.attempt_to_delete(FOREGROUND_OWNER, {}, [loose]) == gc.Action(
        "remove-finalizer", finalizer="foregroundDeletion")


def test_orphaning_edits() -> None:
    dep = obj("d", "d1", ref("o1"), ref("o2", "other"))
    out = gc.without_owner(dep, "o1")
    assert out is not None
    assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["o2"]
    assert gc.without_owner(out, "o1") is None
    last = gc.without_owner(out, "o2")
    assert last is not None
    assert "ownerReferences" not in last["metadata"]
    fin = obj("o", "o1", finalizers=("orphan", "x"))
    assert gc.without_finalizer(fin, "orphan") == obj("o", "o1", finalizers=("x",))
    assert gc.unblocked(obj("d", "d1", ref("o1", block=True)))["metadata"][
        "ownerReferences"][0]["blockOwnerDeletion"] is False


def test_graph_links_owners_and_dependents() -> None:
    g = Graph()
    g.observe("d1", Node("/registry/configmaps/", "default", "d", frozenset({"o1", "o2"})))
    g.observe("d2", Node("/registry/pods/", "default", "p", frozenset({"o1"})))
    assert g.dependents("o1") == {"d1", "d2"}
    assert g.observe("d1", Node("/registry/configmaps/", "default", "d",
                                frozenset({"o2"}))) == {"o1"}
    assert g.dependents("o1") == {"d2"}
    g.forget("d2")
    assert g.dependents("o1") == set()
    assert g.dependents("o2") == {"d1"}
