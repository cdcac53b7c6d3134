"""A delete's propagation policy as the API server applies it (apiserver's
deletionFinalizersForGarbageCollection): Foreground and Orphan keep the object, marked
with deletionTimestamp and the collector's finalizer; Background (and no policy, for
resources whose default is DeleteDependents) deletes at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane.registry.gcpolicy import (
    DELETE_DEPENDENTS,
    ORPHAN_DEPENDENTS,
    UNSUPPORTED,
    deletion_finalizers,
)
from pykubelet.controlplane.registry.resources import CONFIGMAPS
from pykubelet.controlplane.registry.store import Context, DeleteOptions


@pytest.mark.parametrize(("finalizers", "policy", "orphan", "default", "want"), [
    ([], None, None, DELETE_DEPENDENTS, None),
    ([], "Background", None, DELETE_DEPENDENTS, None),
    ([], "Foreground", None, DELETE_DEPENDENTS, ["foregroundDeletion"]),
    ([], "Orphan", None, DELETE_DEPENDENTS, ["orphan"]),
    ([], None, True, DELETE_DEPENDENTS, ["orphan"]),
    ([], None, False, ORPHAN_DEPENDENTS, None),
    ([], None, None, ORPHAN_DEPENDENTS, ["orphan"]),  # batch/v1 Jobs' default
    ([], "Foreground", None, UNSUPPORTED, None),
    (["x"], "Foreground", None, DELETE_DEPENDENTS, ["x", "foregroundDeletion"]),
    (["orphan"], "Foreground", None, DELETE_DEPENDENTS, ["foregroundDeletion"]),
    (["foregroundDeletion"], "Background", None, DELETE_DEPENDENTS, []),
    (["foregroundDeletion"], None, None, DELETE_DEPENDENTS, None),  # the finalizer decides
    (["orphan"], None, None, DELETE_DEPENDENTS, None),
])
def test_deletion_finalizers(finalizers: list[str], policy: str | None, orphan: bool | None,
                             default: str, want: list[str] | None) -> None:
    assert deletion_finalizers(finalizers, policy, orphan, default) == want


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}}


def run_delete(options: DeleteOptions, finalizers: list[str] | None = None
               ) -> tuple[dict[str, Any] | None, bool]:
    """Delete a ConfigMap with ``options``: (what the store holds after, deleted now?)."""
    async def main() -> tuple[dict[str, Any] | None, bool]:
        async with memory_registry() as registry:
            store = registry.store(CONFIGMAPS)
            body = cm("owner")
            if finalizers:
                body["metadata"]["finalizers"] = finalizers
            await store.create(Context(), "default", body)
            _, gone = await store.delete(Context(), "default", "owner", options)
            entry = store.lookup("default", "owner")
            return (entry.obj() if entry is not None else None), gone
    return asyncio.run(main())


def test_foreground_marks_the_owner() -> None:
    obj, gone = run_delete(DeleteOptions(propagation_policy="Foreground"))
    assert not gone
    assert obj is not None
    assert obj["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0


@pytest.mark.parametrize("options", [DeleteOptions(propagation_policy="Orphan"),
                                     DeleteOptions(orphan_dependents=True)])
def test_orphan_marks_the_owner(options: DeleteOptions) -> None:
    obj, gone = run_delete(options)
    assert not gone
    assert obj is not None
    assert obj["metadata"]["finalizers"] == ["orphan"]
    assert obj["metadata"]["deletionTimestamp"]


@pytest.mark.parametrize("options", [DeleteOptions(propagation_policy="Background"),
                                     DeleteOptions()])
def test_background_deletes_at_once(options: DeleteOptions) -> None:
    obj, gone = run_delete(options)
    assert gone
    assert obj is None


def test_background_drops_a_foreground_finalizer_asked_before() -> None:
    """A second delete may change the collector's finalizers while no graceful deletion
    is pending: Background over a foreground deletion lets the object go."""
    async def main() -> tuple[dict[str, Any] | None, bool]:
        async with memory_registry() as registry:
            store = registry.store(CONFIGMAPS)
            await store.create(Context(), "default", cm("owner"))
            await store.delete(Context(), "default", "owner",
                               DeleteOptions(propagation_policy="Foreground"))
            _, gone = await store.delete(Context(), "default", "owner",
                                         DeleteOptions(propagation_policy="Background"))
            entry = store.lookup("default", "owner")
            return (entry.obj() if entry is not None else None), gone
    obj, gone = asyncio.run(main())
    assert gone
    assert obj is None


def test_orphan_dependents_from_the_body() -> None:
    assert DeleteOptions.from_dict({"orphanDependents": True}).orphan_dependents is True


def test_a_batch_v1_job_deleted_without_a_policy_orphans_its_pods() -> None:
    """jobStrategy.DefaultGarbageCollectionPolicy: OrphanDependents for batch/v1, so the
    job stays with the orphan finalizer until the collector has released its pods."""
    from pykubelet.controlplane.registry.resources import JOBS

    async def main() -> list[str]:
        async with memory_registry() as registry:
            store = registry.store(JOBS)
            await store.create(Context(), "default", {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "j", "namespace": "default"},
                "spec": {"template": {"spec": {
                    "containers": [{"name": "c", "image": "busybox"}],
                    "restartPolicy": "Never"}}}})
            _, gone = await store.delete(Context(), "default", "j", DeleteOptions())
            assert not gone
            entry = store.lookup("default", "j")
            assert entry is not None
            return list(entry.obj()["metadata"].get("finalizers") or [])

    assert asyncio.run(main()) == ["orphan"]
