"""The garbage collector over the registry (in-memory store, the watch cache's events, no
HTTP): background, foreground and orphan deletion, dangling owners, an owner in another
namespace, a kind not served retried with back-off."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from registry_fixture import memory_registry
from test_registry_resttest import body as sample

from pykubelet.controlplane.controllers.garbagecollector.collector import GarbageCollector
from pykubelet.controlplane.registry.resources import (
    ALL,
    CONFIGMAPS,
    EVENTS,
    NAMESPACES,
    PODS,
)
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Registry

NS = "default"


def cm(name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owners:
        meta["ownerReferences"] = list(owners)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def pod(name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "ownerReferences": list(owners)},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def owner_ref(owner: dict[str, Any], kind: str = "ConfigMap", block: bool | None = None
              ) -> dict[str, Any]:
    r: dict[str, Any] = {"apiVersion": "v1", "kind": kind,
                         "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    if block is not None:
        r["blockOwnerDeletion"] = block
    return r


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def run(test: Callable[[Registry, GarbageCollector], Awaitable[None]]) -> None:
    async def main() -> None:
        async with memory_registry() as registry:
            collector = GarbageCollector(registry)
            collector.start()
            task = asyncio.create_task(collector.run())
            try:
                await test(registry, collector)
            finally:
                collector.stop()
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
    asyncio.run(main())


async def create(registry: Registry, body: dict[str, Any]) -> dict[str, Any]:
    info = PODS if body["kind"] == "Pod" else CONFIGMAPS
    out = await registry.store(info).create(Context(), NS, body)
    return out.obj() if hasattr(out, "obj") else out


def exists(registry: Registry, info: Any, name: str) -> bool:
    return registry.store(info).lookup(NS, name) is not None


def test_background_deletes_dependents_after_the_owner() -> None:
    async def t(registry: Registry, _: GarbageCollector) -> None:
        owner = await create(registry, cm("owner"))
        await create(registry, cm("dep", owner_ref(owner)))
        await create(registry, pod("dep-pod", owner_ref(owner)))
        await asyncio.sleep(0.1)
        assert exists(registry, CONFIGMAPS, "dep")  # a live owner keeps them
        await registry.store(CONFIGMAPS).delete(Context(), NS, "owner",
                                                DeleteOptions(propagation_policy="Background"))
        await eventually(lambda: not exists(registry, CONFIGMAPS, "dep")
                         and not exists(registry, PODS, "dep-pod"))
    run(t)


def test_foreground_waits_for_blocking_dependents() -> None:
    async def t(registry: Registry, _: GarbageCollector) -> None:
        owner = await create(registry, cm("owner"))
        await create(registry, cm("blocker", owner_ref(owner, block=True)))
        # a finalizer of its own keeps the blocking dependent (deleting) for a while
        held = cm("held", owner_ref(owner, block=True))
        held["metadata"]["finalizers"] = ["example.com/hold"]
        await create(registry, held)
        await registry.store(CONFIGMAPS).delete(Context(), NS, "owner",
                                                DeleteOptions(propagation_policy="Foreground"))
        store = registry.store(CONFIGMAPS)
        await eventually(lambda: not exists(registry, CONFIGMAPS, "blocker"))
        await eventually(lambda: bool((store.get(NS, "held").obj()["metadata"])
                                      .get("deletionTimestamp")))
        entry = store.lookup(NS, "owner")
        assert entry is not None  # waits for "held"
        assert entry.obj()["metadata"]["finalizers"] == ["foregroundDeletion"]

        def release(o: dict[str, Any]) -> dict[str, Any]:
            o["metadata"].pop("finalizers", None)
            return o
        await store.guaranteed_update(NS, "held", release)
        await eventually(lambda: not exists(registry, CONFIGMAPS, "owner"))
    run(t)


def test_orphan_keeps_dependents_without_the_reference() -> None:
    async def t(registry: Registry, _: GarbageCollector) -> None:
        owner = await create(registry, cm("owner"))
        other = await create(registry, cm("other"))
        await create(registry, cm("dep", owner_ref(owner)))
        await create(registry, cm("shared", owner_ref(owner), owner_ref(other)))
        await registry.store(CONFIGMAPS).delete(Context(), NS, "owner",
                                                DeleteOptions(propagation_policy="Orphan"))
        await eventually(lambda: not exists(registry, CONFIGMAPS, "owner"))
        dep = registry.store(CONFIGMAPS).get(NS, "dep").obj()
        assert "ownerReferences" not in dep["metadata"]
        shared = registry.store(CONFIGMAPS).get(NS, "shared").obj()
        assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["other"]
    run(t)


def test_dangling_owner_is_collected_and_a_live_one_kept() -> None:
    async def t(registry: Registry, _: GarbageCollector) -> None:
        owner = await create(registry, cm("owner"))
        await create(registry, cm("orphaned", {"apiVersion": "v1", "kind": "ConfigMap",
                                               "name": "owner", "uid": "no-such-uid"}))
        await create(registry, cm("kept", owner_ref(owner)))
        await eventually(lambda: not exists(registry, CONFIGMAPS, "orphaned"))
        await asyncio.sleep(0.1)
        assert exists(registry, CONFIGMAPS, "kept")
    run(t)


def test_owner_in_another_namespace_is_not_an_owner() -> None:
    async def t(registry: Registry, _: GarbageCollector) -> None:
        await registry.store(NAMESPACES).create(
            Context(), "", {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "elsewhere"}})
        out = await registry.store(CONFIGMAPS).create(
            Context(), "elsewhere", {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "owner", "namespace": "elsewhere"}})
        owner = out.obj() if hasattr(out, "obj") else out
        await create(registry, cm("dep", owner_ref(owner)))
        await eventually(lambda: not exists(registry, CONFIGMAPS, "dep"))
        events = [e.obj() for e in registry.store(EVENTS).select(NS, None)]
        bad = [e for e in events if e.get("reason") == "OwnerRefInvalidNamespace"]
        assert len(bad) == 1
        assert bad[0]["type"] == "Warning"
        assert bad[0]["involvedObject"]["name"] == "dep"
        assert bad[0]["message"] == (
            f"ownerRef [v1/ConfigMap, namespace: default, name: owner, uid: "
            f"{owner['metadata']['uid']}] does not exist in namespace \"default\"")
    run(t)


def test_namespaced_owner_of_a_cluster_scoped_object_is_left_alone() -> None:
    async def t(registry: Registry, _: GarbageCollector) -> None:
        owner = await create(registry, cm("owner"))
        await registry.store(NAMESPACES).create(
            Context(), "", {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "owned", "ownerReferences": [
                                owner_ref(owner)]}})
        await eventually(lambda: any(
            e.obj().get("reason") == "OwnerRefInvalidNamespace"
            for e in registry.store(EVENTS).select(None, None)))
        await registry.store(CONFIGMAPS).delete(Context(), NS, "owner", DeleteOptions())
        await asyncio.sleep(0.2)
        assert registry.store(NAMESPACES).lookup("", "owned") is not None
    run(t)


def test_unknown_owner_kind_is_retried_with_back_off(caplog: pytest.LogCaptureFixture
                                                     ) -> None:
    async def t(registry: Registry, collector: GarbageCollector) -> None:
        dep = await create(registry, cm("dep", {"apiVersion": "example.com/v1",
                                                "kind": "Widget", "name": "w", "uid": "w1"}))
        uid = dep["metadata"]["uid"]
        await eventually(lambda: collector.attempt_to_delete.failures(uid) >= 3)
        assert exists(registry, CONFIGMAPS, "dep")  # not deleted on an error
        # other objects are still handled
        await create(registry, cm("orphaned", {"apiVersion": "v1", "kind": "ConfigMap",
                                               "name": "x", "uid": "gone"}))
        await eventually(lambda: not exists(registry, CONFIGMAPS, "orphaned"))
    with caplog.at_level(logging.WARNING):
        run(t)
    assert any("default/dep" in r.getMessage() and "Widget" in r.getMessage()
               for r in caplog.records)


def test_idle_collector_does_no_work() -> None:
    """Watch-driven: after the initial list, nothing is handled until something changes
    (no polling), and an unrelated write handles nothing either."""
    async def t(registry: Registry, collector: GarbageCollector) -> None:
        calls: list[str] = []
        handle = collector.process_delete

        async def counted(uid: str) -> None:
            calls.append(uid)
            await handle(uid)
        collector.process_delete = counted  # type: ignore[method-assign]
        owner = await create(registry, cm("owner"))
        await create(registry, cm("dep", owner_ref(owner)))
        await eventually(lambda: len(calls) == 1)
        await asyncio.sleep(0.3)
        await create(registry, cm("unrelated"))
        await asyncio.sleep(0.2)
        assert calls == [registry.store(CONFIGMAPS).get(NS, "dep").obj()["metadata"]["uid"]]
    run(t)


def _gone_or_going(registry: Registry, info: Any, ns: str, name: str) -> bool:
    entry = registry.store(info).lookup(ns, name)
    return entry is None or bool(entry.obj()["metadata"].get("deletionTimestamp"))


@pytest.mark.parametrize("info", [pytest.param(r, id=r.resource) for r in ALL])
def test_every_served_resource_is_collected_and_collects(info: Any) -> None:
    """Generic over registry/resources.py: an object of each served resource whose owner
    does not exist is collected, and deleting one (background) collects its dependents;
    a resource added there is covered without a change to the collector."""
    async def t(registry: Registry, _: GarbageCollector) -> None:
        ns = NS if info.namespaced else ""
        ghost = ({"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "g1"}
                 if info.namespaced else
                 {"apiVersion": "v1", "kind": "Node", "name": "ghost", "uid": "g1"})
        await registry.store(info).create(Context(), ns, sample(info, "dep",
                                                                 ownerReferences=[ghost]))
        await eventually(lambda: _gone_or_going(registry, info, ns, "dep"))
        if info.kind == "Event":
            return  # validation: an Event is disallowed from being an owner
        made = await registry.store(info).create(Context(), ns, sample(info, "owner"))
        owner = made.obj() if hasattr(made, "obj") else made
        await create(registry, cm("cm-dep", {"apiVersion": info.group_version,
                                             "kind": info.kind, "name": "owner",
                                             "uid": owner["metadata"]["uid"]}))
        await asyncio.sleep(0.05)
        assert exists(registry, CONFIGMAPS, "cm-dep")
        await registry.store(info).delete(Context(), ns, "owner", DeleteOptions())
        if registry.store(info).lookup(ns, "owner") is None:  # (a namespace terminates)
            await eventually(lambda: not exists(registry, CONFIGMAPS, "cm-dep"))
    run(t)
