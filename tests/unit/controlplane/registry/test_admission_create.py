"""Admission on a create (kube-apiserver's admission chain over one decoded object):
NamespaceLifecycle judges the create from its attributes (namespace and name), as
upstream's Admit does, so the chain encodes the new object once, after the mutating
plugins, for the plugins that read it (NodeRestriction, RBAC escalation) and the write;
and its answers stay upstream's (404 for a missing namespace, 403 for a terminating one,
system namespaces not deletable)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.resources import NAMESPACES, PODS
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Entry


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_a_pod_create_encodes_the_admitted_object_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with memory_registry() as registry:
            store = registry.store(PODS)
            strategy = type(store.strategy)
            encodes: list[Any] = []
            real = strategy.encoded

            def counted(self: Any, typed: Any) -> Any:
                encodes.append(typed)
                return real(self, typed)

            monkeypatch.setattr(strategy, "encoded", counted)
            created = await store.create(Context(field_manager="t"), "default", _pod("web"))
            assert isinstance(created, Entry)
            assert len(encodes) == 1
            obj = created.obj()
            # what the mutating plugins added is in the one encoding that was stored
            assert [t["key"] for t in obj["spec"]["tolerations"]] == [
                "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
            assert obj["spec"]["priority"] == 0

    asyncio.run(main())


def test_namespace_lifecycle_answers_as_upstream() -> None:
    async def main() -> None:
        async with memory_registry(("default", "kube-system", "doomed")) as registry:
            pods, namespaces = registry.store(PODS), registry.store(NAMESPACES)
            with pytest.raises(errors.StatusError) as err:
                await pods.create(Context(), "missing", _pod("web"))
            assert (err.value.code, str(err.value)) == (404, 'namespaces "missing" not found')
            doomed = namespaces.get("", "doomed").obj()
            doomed["spec"] = {"finalizers": ["kubernetes"]}
            await namespaces.update(Context(), "", "doomed", doomed)
            await namespaces.delete(Context(), "", "doomed", DeleteOptions())
            with pytest.raises(errors.StatusError) as err:
                await pods.create(Context(), "doomed", _pod("web"))
            assert err.value.code == 403
            assert str(err.value) == ('pods "web" is forbidden: unable to create new content '
                                      "in namespace doomed because it is being terminated")
            assert err.value.details["causes"] == [
                {"reason": "NamespaceTerminating",
                 "message": "namespace doomed is being terminated",
                 "field": "metadata.namespace"}]
            with pytest.raises(errors.StatusError) as err:
                await namespaces.delete(Context(), "", "kube-system", DeleteOptions())
            assert err.value.code == 403
            assert str(err.value) == ('namespaces "kube-system" is forbidden: this namespace '
                                      "may not be deleted")

    asyncio.run(main())
