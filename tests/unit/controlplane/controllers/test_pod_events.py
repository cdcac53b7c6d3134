"""The pod event handlers the ReplicaSet and DaemonSet controllers share
(replica_set.go's addPod/updatePod/deletePod): which owners a pod's event queues and what
it tells their expectations. Over stand-in cache entries and an owner store."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from pykubelet.controlplane.controllers.expectations import Expectations
from pykubelet.controlplane.controllers.pod_events import (
    controller_keys,
    owner_event_key,
    pod_owner_keys,
)
from pykubelet.controlplane.storage.cacher import ADDED, DELETED, MODIFIED, CachedEvent

Obj = dict[str, Any]


class Attrs:
    def __init__(self, name: str) -> None:
        self.name = name


class Entry:
    def __init__(self, obj: Obj) -> None:
        self._obj = obj
        self.attrs = Attrs(obj["metadata"]["name"])

    def obj(self) -> Obj:
        return self._obj

    def view(self) -> Obj:  # the listeners' shared parse
        return self._obj

    def derived(self, key: str, make: Any) -> Any:  # a view kept on the entry
        return make()


class Owners:
    def __init__(self, *objs: Obj) -> None:
        self.objs = {o["metadata"]["name"]: o for o in objs}

    def lookup(self, namespace: str, name: str) -> Entry | None:
        return Entry(self.objs[name]) if name in self.objs else None

    def select(self, namespace: str | None, _: Any) -> list[Entry]:
        return [Entry(o) for o in self.objs.values()]


def owner(name: str, uid: str, app: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid},
            "spec": {"selector": {"matchLabels": {"app": app}}}}


def pod(controller: tuple[str, str] | None = None, app: str = "web", **meta: Any) -> Obj:
    m: Obj = {"name": "p", "namespace": "ns", "labels": {"app": app}, **meta}
    if controller is not None:
        m["ownerReferences"] = [{"kind": "ReplicaSet", "name": controller[0],
                                 "uid": controller[1], "controller": True}]
    return {"metadata": m}


def event(type_: str, new: Obj, old: Obj | None = None) -> CachedEvent:
    return CachedEvent(type_, 1, Entry(new), Entry(old) if old is not None else None)


OWNERS = Owners(owner("web", "u1", "web"), owner("db", "u2", "db"))


def test_a_changed_controller_ref_syncs_both_controllers() -> None:
    ev = event(MODIFIED, pod(("db", "u2")), pod(("web", "u1")))
    assert controller_keys(ev, "ReplicaSet") == {"ns/web", "ns/db"}
    assert controller_keys(ev, "DaemonSet") == set()


def test_an_orphan_queues_every_owner_whose_selector_picks_it() -> None:
    exp = Expectations()
    assert pod_owner_keys(event(ADDED, pod()), "ReplicaSet", OWNERS, exp) == {  # type: ignore[arg-type]
        "ns/web"}
    assert pod_owner_keys(event(DELETED, pod()), "ReplicaSet", OWNERS, exp) == set()  # type: ignore[arg-type]


def test_expectations_observe_creations_and_deletions_of_resolved_pods() -> None:
    exp = Expectations()
    exp.expect("ns/web", 1, ["ns/p"])
    pod_owner_keys(event(ADDED, pod(("web", "u1"))), "ReplicaSet", OWNERS, exp)  # type: ignore[arg-type]
    assert not exp.satisfied("ns/web")
    deleting = pod(("web", "u1"), deletionTimestamp="t")
    pod_owner_keys(event(MODIFIED, deleting, pod(("web", "u1"))), "ReplicaSet", OWNERS, exp)  # type: ignore[arg-type]
    assert exp.satisfied("ns/web")


def test_a_stale_controller_ref_tells_the_expectations_nothing() -> None:
    exp = Expectations()
    exp.expect_creations("ns/web", 1)
    keys = pod_owner_keys(event(ADDED, pod(("web", "old-uid"))), "ReplicaSet", OWNERS, exp)  # type: ignore[arg-type]
    assert keys == {"ns/web"}
    assert not exp.satisfied("ns/web")


def test_an_owners_own_event_queues_it_and_its_delete_forgets_its_expectations() -> None:
    """addRS/updateRS/deleteRS (and the DaemonSet's): the owner's key; a delete also drops
    what it expected, so a recreated one of that name starts afresh."""
    exp = Expectations()
    exp.expect_creations("ns/web", 2)
    entry = SimpleNamespace(attrs=SimpleNamespace(namespace="ns", name="web"))
    assert owner_event_key(CachedEvent(MODIFIED, 1, entry, None), exp) == "ns/web"  # type: ignore[arg-type]
    assert not exp.satisfied("ns/web")
    assert owner_event_key(CachedEvent(DELETED, 2, entry, None), exp) == "ns/web"  # type: ignore[arg-type]
    assert exp.satisfied("ns/web")


def test_an_orphans_events_read_each_owners_selector_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An ownerless pod's events match it against every owner of its namespace (an orphan
    may be adopted): each owner's selector is read from its cache entry once and kept on
    it (a parse of every ReplicaSet of the namespace per pod event, per controller,
    before), the pod's labels from its shared view."""
    from registry_fixture import memory_registry

    from pykubelet.controlplane.registry.resources import PODS, REPLICA_SETS
    from pykubelet.controlplane.registry.store import Context
    from pykubelet.controlplane.storage import cacher

    def rs(name: str, app: str) -> Obj:
        labels = {"app": app}
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"selector": {"matchLabels": labels}, "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}

    async def main() -> None:
        async with memory_registry(("default", "kube-system", "ns")) as registry:
            owners = registry.store(REPLICA_SETS)
            for i in range(5):
                await owners.create(Context(), "ns", rs(f"rs{i}", f"app{i}"))
            await registry.store(PODS).create(Context(), "ns", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"app": "app3"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
            pods = registry.cacher.resources[PODS.storage_prefix]
            entry = pods.entries[PODS.key("ns", "p")]
            ev = CachedEvent(ADDED, entry.rev, entry, None)
            exp = Expectations()
            assert pod_owner_keys(ev, "ReplicaSet", owners, exp) == {"ns/rs3"}
            parsed: list[str] = []
            real = cacher.Entry.obj
            monkeypatch.setattr(cacher.Entry, "obj", lambda self: (
                parsed.append(self.key), real(self))[1])
            for _ in range(3):
                assert pod_owner_keys(ev, "ReplicaSet", owners, exp) == {"ns/rs3"}
            assert [k for k in parsed if "/replicasets/" in k] == []

    asyncio.run(main())
