"""pods/binding's write (BindingREST.setPodNodeAndMetadata): a GuaranteedUpdate on the
pod's storage, past the field manager, so a binding leaves ``metadata.managedFields`` as
it was (a scheduled pod lists no binder among its managers on a real cluster), and costs
each binding of a burst no field-manager pass."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.binding import bind_pod
from pykubelet.controlplane.registry.resources import PODS
from pykubelet.controlplane.registry.store import Context, Entry


def _obj(result: Any) -> dict[str, Any]:
    return result.obj() if isinstance(result, Entry) else dict(result)


def test_a_binding_sets_the_node_and_leaves_managed_fields_as_they_were() -> None:
    async def main() -> None:
        async with memory_registry() as registry:
            store = registry.store(PODS)
            created = _obj(await store.create(
                Context(field_manager="creator"), "default",
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
            before = created["metadata"]["managedFields"]
            assert [m["manager"] for m in before] == ["creator"]
            bound = _obj(await bind_pod(store, "default", "web", "n1", {},
                                        Context(field_manager="kube-scheduler")))
            assert bound["spec"]["nodeName"] == "n1"
            cond = [c["status"] for c in bound["status"]["conditions"]
                    if c["type"] == "PodScheduled"]
            assert cond == ["True"]
            assert bound["metadata"]["managedFields"] == before
            stored = store.get("default", "web").obj()
            assert stored["metadata"]["managedFields"] == before
            assert int(stored["metadata"]["resourceVersion"]) > int(
                created["metadata"]["resourceVersion"])
            # bound once: a second binding is refused as upstream's is
            with pytest.raises(errors.StatusError) as err:
                await bind_pod(store, "default", "web", "n2", {}, Context())
            assert err.value.code == 409
            assert 'is already assigned to node "n1"' in str(err.value)

    asyncio.run(main())
