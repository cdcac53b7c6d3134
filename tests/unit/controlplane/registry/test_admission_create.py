"""Admission on a create (kube-apiserver's admission chain over one decoded object):
NamespaceLifecycle judges the create from its attributes (namespace and name), as
upstream's Admit does, so the object is encoded twice only: before mutating admission
for the field manager (upstream's order), and after the mutating plugins for the plugins
that read it (NodeRestriction, RBAC escalation) and the write; and its answers stay
upstream's (404 for a missing namespace, 403 for a terminating one, system namespaces
not deletable)."""

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


def test_a_pod_create_encodes_its_object_before_and_after_admission_only(
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
            assert len(encodes) == 2  # the field manager's, then the admitted object's
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


def test_a_creates_managers_own_what_it_sent_and_the_defaults_not_what_admission_added(
        ) -> None:
    """kube-apiserver's create handler runs the field manager on the decoded, defaulted
    object before mutating admission (handlers/create.go: UpdateNoErrors, then Admit), so
    kubectl's entry owns the pod's defaults but not the ServiceAccount's token volume and
    mounts, the default tolerations, the priority or the service account name that
    admission set."""
    async def main() -> None:
        async with memory_registry() as registry:
            created = await registry.store(PODS).create(
                Context(field_manager="kubectl"), "default", _pod("web"))
            assert isinstance(created, Entry)
            obj = created.obj()
            assert [v["name"][:16] for v in obj["spec"]["volumes"]] == ["kube-api-access-"]
            assert obj["spec"]["serviceAccountName"] == "default"
            (entry,) = obj["metadata"]["managedFields"]
            assert entry["manager"] == "kubectl"
            spec = entry["fieldsV1"]["f:spec"]
            assert sorted(spec) == [
                "f:containers", "f:dnsPolicy", "f:enableServiceLinks", "f:restartPolicy",
                "f:schedulerName", "f:securityContext", "f:terminationGracePeriodSeconds"]
            container = spec["f:containers"]['k:{"name":"c"}']
            assert "f:volumeMounts" not in container
            assert {"f:image", "f:imagePullPolicy", "f:terminationMessagePath"} <= set(container)

    asyncio.run(main())
