"""The registry's semantics per served resource, with no HTTP (upstream's resttest,
k8s.io/apiserver/pkg/registry/rest/resttest): create, get, list, update, delete and watch
against the generic store and its strategy, over the store seam (an in-memory SQLite
store and the watch cache), parametrized over every resource registry/resources.py
serves. A resource added there without a sample here fails the first test."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.gcpolicy import ORPHAN_DEPENDENTS
from pykubelet.controlplane.registry.patch import JSON_PATCH, MERGE_PATCH
from pykubelet.controlplane.registry.resources import ALL, CONFIGMAPS, ResourceInfo
from pykubelet.controlplane.registry.store import (
    Context,
    DeleteOptions,
    Entry,
    GenericStore,
    Registry,
)
from pykubelet.controlplane.storage.cacher import TooOldError

NS = "default"
LABEL = {"resttest": "yes"}

# the smallest valid object of each served resource (metadata.name is set per test)
SAMPLES: dict[str, dict[str, Any]] = {
    "pods": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    "nodes": {},
    "namespaces": {},
    "events": {"involvedObject": {"kind": "Pod", "name": "p", "namespace": NS},
               "reason": "Tested", "message": "resttest", "type": "Normal"},
    "configmaps": {"data": {"k": "v"}},
    "secrets": {"stringData": {"k": "v"}},
    "serviceaccounts": {"automountServiceAccountToken": False},
    "leases": {"spec": {"holderIdentity": "me"}},
    "priorityclasses": {"value": 1000},
    "poddisruptionbudgets": {"spec": {"minAvailable": 1,
                                      "selector": {"matchLabels": {"app": "x"}}}},
    "replicasets": {"spec": {"selector": {"matchLabels": {"app": "x"}},
                             "template": {"metadata": {"labels": {"app": "x"}},
                                          "spec": {"containers": [{"name": "c",
                                                                   "image": "busybox"}]}}}},
    "deployments": {"spec": {"selector": {"matchLabels": {"app": "x"}},
                             "template": {"metadata": {"labels": {"app": "x"}},
                                          "spec": {"containers": [{"name": "c",
                                                                   "image": "busybox"}]}}}},
    "jobs": {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}},
    "cronjobs": {"spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": {
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
                 "restartPolicy": "Never"}}}}}},
    "statefulsets": {"spec": {"selector": {"matchLabels": {"app": "x"}},
                              "template": {"metadata": {"labels": {"app": "x"}},
                                           "spec": {"containers": [{"name": "c",
                                                                    "image": "busybox"}]}}}},
    "controllerrevisions": {"data": {"spec": {"template": {"$patch": "replace"}}},
                            "revision": 1},
    "daemonsets": {"spec": {"selector": {"matchLabels": {"app": "x"}},
                            "template": {"metadata": {"labels": {"app": "x"}},
                                         "spec": {"containers": [{"name": "c",
                                                                  "image": "busybox"}]}}}},
    "services": {"spec": {"ports": [{"port": 80}]}},
    "endpoints": {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
    "endpointslices": {"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]},
    "roles": {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    "clusterroles": {"rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]},
    "rolebindings": {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": "r"},
                     "subjects": [{"kind": "User", "name": "alice"}]},
    "clusterrolebindings": {"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                        "kind": "ClusterRole", "name": "view"},
                            "subjects": [{"kind": "Group", "name": "g"}]},
}

RESOURCES = [pytest.param(r, id=r.resource) for r in ALL]


def body(info: ResourceInfo, name: str, **meta: Any) -> dict[str, Any]:
    out = copy.deepcopy(SAMPLES[info.resource])
    out.update({"apiVersion": info.group_version, "kind": info.kind,
                "metadata": {"name": name, "labels": dict(LABEL), **meta}})
    return out


def ns_of(info: ResourceInfo) -> str:
    return NS if info.namespaced else ""


def obj_of(result: Entry | dict[str, Any]) -> dict[str, Any]:
    return result.obj() if isinstance(result, Entry) else result


def run(info: ResourceInfo, test: Callable[[Registry, GenericStore], Awaitable[None]]) -> None:
    async def main() -> None:
        async with memory_registry() as reg:
            await test(reg, reg.store(info))

    asyncio.run(main())


def status_of(exc: pytest.ExceptionInfo[errors.StatusError]) -> tuple[int, str]:
    return exc.value.code, exc.value.reason


def test_every_served_resource_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(r.resource for r in ALL)


@pytest.mark.parametrize("info", RESOURCES)
def test_create_then_get(info: ResourceInfo) -> None:
    """A create stores the object with its system fields; a get reads it back."""

    async def test(reg: Registry, store: GenericStore) -> None:
        created = obj_of(await store.create(Context(), ns_of(info), body(info, "rt-a")))
        meta = created["metadata"]
        assert meta["uid"]
        assert meta["creationTimestamp"]
        assert int(meta["resourceVersion"]) > 0
        assert (created["kind"], created["apiVersion"]) == (info.kind, info.group_version)
        got = store.get(ns_of(info), "rt-a").obj()
        assert got == created
        if info.namespaced:
            assert meta["namespace"] == NS

    run(info, test)


@pytest.mark.parametrize("info", RESOURCES)
def test_create_errors(info: ResourceInfo) -> None:
    """The same name twice is 409 AlreadyExists, an invalid name 422 Invalid, a
    resourceVersion on a create 400, and a get of no such object 404 NotFound."""

    async def test(reg: Registry, store: GenericStore) -> None:
        ns = ns_of(info)
        await store.create(Context(), ns, body(info, "rt-twice"))
        with pytest.raises(errors.StatusError) as exc:
            await store.create(Context(), ns, body(info, "rt-twice"))
        assert status_of(exc) == (409, errors.ALREADY_EXISTS)
        with pytest.raises(errors.StatusError) as exc:
            # "/" is invalid in every kind's names (RBAC names need only be path segments)
            await store.create(Context(), ns, body(info, "Not_A/Name!"))
        assert status_of(exc) == (422, errors.INVALID)
        with pytest.raises(errors.StatusError) as exc:
            await store.create(Context(), ns, body(info, "rt-rv", resourceVersion="5"))
        assert exc.value.code == 400
        with pytest.raises(errors.StatusError) as exc:
            store.get(ns, "rt-none")
        assert status_of(exc) == (404, errors.NOT_FOUND)

    run(info, test)


@pytest.mark.parametrize("info", RESOURCES)
def test_create_generate_name_and_dry_run(info: ResourceInfo) -> None:
    """generateName gets a random suffix; a dry-run create answers the object and stores
    nothing."""

    async def test(reg: Registry, store: GenericStore) -> None:
        ns = ns_of(info)
        b = body(info, "")
        del b["metadata"]["name"]
        b["metadata"]["generateName"] = "rt-gen-"
        made = obj_of(await store.create(Context(), ns, b))
        assert made["metadata"]["name"].startswith("rt-gen-")
        assert len(made["metadata"]["name"]) == len("rt-gen-") + 5
        before = store.revision
        dry = obj_of(await store.create(Context(dry_run=True), ns, body(info, "rt-dry")))
        assert dry["metadata"]["name"] == "rt-dry"
        assert store.lookup(ns, "rt-dry") is None
        assert store.revision == before

    run(info, test)


@pytest.mark.parametrize("info", RESOURCES)
def test_list_with_a_selector(info: ResourceInfo) -> None:
    """A list answers the objects that match, in key order, at the cache's revision."""

    async def test(reg: Registry, store: GenericStore) -> None:
        ns = ns_of(info)
        for name in ("rt-b", "rt-a"):
            await store.create(Context(), ns, body(info, name))
        await store.create(Context(), ns, body(info, "rt-other", labels={"resttest": "no"}))
        result = store.list_objects(ns if info.namespaced else None,
                                    lambda a: a.labels.get("resttest") == "yes")
        assert [e.attrs.name for e in result.entries] == ["rt-a", "rt-b"]
        assert result.revision == store.revision
        paged = store.list_objects(ns if info.namespaced else None,
                                   lambda a: a.labels.get("resttest") == "yes", limit=1)
        assert [e.attrs.name for e in paged.entries] == ["rt-a"]
        assert paged.continue_token
        assert paged.remaining == 1

    run(info, test)


@pytest.mark.parametrize("info", RESOURCES)
def test_update(info: ResourceInfo) -> None:
    """An update at the current resourceVersion writes; a stale one is 409 Conflict; an
    update of no such object is 404, unless the resource creates on update."""

    async def test(reg: Registry, store: GenericStore) -> None:
        ns = ns_of(info)
        created = obj_of(await store.create(Context(), ns, body(info, "rt-u")))
        changed = copy.deepcopy(created)
        changed["metadata"]["labels"]["extra"] = "1"
        updated = obj_of(await store.update(Context(), ns, "rt-u", changed))
        assert updated["metadata"]["labels"]["extra"] == "1"
        assert int(updated["metadata"]["resourceVersion"]) > int(
            created["metadata"]["resourceVersion"])
        assert updated["metadata"]["uid"] == created["metadata"]["uid"]
        with pytest.raises(errors.StatusError) as exc:
            await store.update(Context(), ns, "rt-u", changed)  # the old resourceVersion
        assert status_of(exc) == (409, errors.CONFLICT)
        missing = body(info, "rt-missing")
        if store.strategy.allow_create_on_update:
            made = obj_of(await store.update(Context(), ns, "rt-missing", missing))
            assert made["metadata"]["name"] == "rt-missing"
        else:
            with pytest.raises(errors.StatusError) as exc:
                await store.update(Context(), ns, "rt-missing", missing)
            assert status_of(exc) == (404, errors.NOT_FOUND)

    run(info, test)


@pytest.mark.parametrize("info", RESOURCES)
def test_delete(info: ResourceInfo) -> None:
    """A delete removes the object, or only marks it when its strategy holds it
    (finalizers, a grace period, a default policy that orphans dependents, as batch/v1
    Jobs': the collector's ``orphan`` finalizer); a delete of no such object is 404; a
    precondition on another uid is 409."""

    async def test(reg: Registry, store: GenericStore) -> None:
        ns = ns_of(info)
        created = obj_of(await store.create(Context(), ns, body(info, "rt-d")))
        with pytest.raises(errors.StatusError) as exc:
            await store.delete(Context(), ns, "rt-d", DeleteOptions(uid="not-its-uid"))
        assert status_of(exc) == (409, errors.CONFLICT)
        held = (store.strategy.pending_finalizers(created)
                or store.strategy.grace_period(created, None) > 0
                or store.strategy.garbage_collection_policy == ORPHAN_DEPENDENTS)
        last, gone = await store.delete(Context(), ns, "rt-d", DeleteOptions())
        assert gone is not held
        assert obj_of(last)["metadata"]["uid"] == created["metadata"]["uid"]
        if held:
            assert store.get(ns, "rt-d").obj()["metadata"]["deletionTimestamp"]
        else:
            assert store.lookup(ns, "rt-d") is None
        with pytest.raises(errors.StatusError) as exc:
            await store.delete(Context(), ns, "rt-none", DeleteOptions())
        assert status_of(exc) == (404, errors.NOT_FOUND)

    run(info, test)


@pytest.mark.parametrize("info", RESOURCES)
def test_watch(info: ResourceInfo) -> None:
    """A watch from a revision sees the create (ADDED), the update (MODIFIED) and the
    delete (DELETED, or MODIFIED when the delete is only marked) in order; one without a
    revision starts with the matching objects; one from a revision the cache no longer
    holds carries only that error."""

    async def test(reg: Registry, store: GenericStore) -> None:
        ns = ns_of(info)

        def mine(a: Any) -> bool:
            return bool(a.name == "rt-w")

        watcher = await store.watch(ns or None, mine, str(store.revision))
        try:
            created = obj_of(await store.create(Context(), ns, body(info, "rt-w")))
            changed = copy.deepcopy(created)
            changed["metadata"]["labels"]["extra"] = "1"
            await store.update(Context(), ns, "rt-w", changed)
            _, gone = await store.delete(Context(), ns, "rt-w", DeleteOptions())
            seen = []
            while not watcher.queue.empty():
                item = watcher.queue.get_nowait()
                assert item is not None
                seen.append(item[0])
            assert seen == ["ADDED", "MODIFIED", "DELETED" if gone else "MODIFIED"]
        finally:
            watcher.close()
        if not gone:
            initial = await store.watch(ns or None, mine, "")
            assert [e.attrs.name for e in initial.initial] == ["rt-w"]
            initial.close()
        store.cache.floor = store.revision  # as if the ring had been trimmed up to here
        expired = await store.watch(ns or None, mine, "1")
        assert isinstance(expired.error, TooOldError)
        assert expired.closed

    run(info, test)


def test_a_patchs_resource_version_is_its_precondition() -> None:
    """A merge patch carrying a stale resourceVersion is 409 Conflict, one carrying the
    current one writes; a JSON patch (a list) carries none."""
    async def test(reg: Registry, store: GenericStore) -> None:
        created = obj_of(await store.create(Context(), NS, body(CONFIGMAPS, "rt-p")))
        rv = created["metadata"]["resourceVersion"]
        patched = obj_of(await store.patch(Context(), NS, "rt-p", MERGE_PATCH, {
            "metadata": {"resourceVersion": rv, "labels": {"a": "1"}}}))
        assert patched["metadata"]["labels"]["a"] == "1"
        with pytest.raises(errors.StatusError) as exc:
            await store.patch(Context(), NS, "rt-p", MERGE_PATCH, {
                "metadata": {"resourceVersion": rv, "labels": {"a": "2"}}})
        assert status_of(exc) == (409, errors.CONFLICT)
        patched = obj_of(await store.patch(Context(), NS, "rt-p", JSON_PATCH, [
            {"op": "replace", "path": "/metadata/labels/a", "value": "3"}]))
        assert patched["metadata"]["labels"]["a"] == "3"

    run(CONFIGMAPS, test)
