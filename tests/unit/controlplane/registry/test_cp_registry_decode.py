"""The generic store decodes a body once, and knows no resource by name: what a
namespace does on delete is its strategy's (pending_finalizers, begin_deletion)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any
from unittest import mock

from cp_live import LiveAPI
from registry_fixture import memory_registry

from pykubelet.api.machinery import codec
from pykubelet.controlplane.registry import store as store_module
from pykubelet.controlplane.registry.configdata import ConfigMapStrategy
from pykubelet.controlplane.registry.resources import (
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    PODS,
    SERVICE_ACCOUNTS,
)
from pykubelet.controlplane.registry.store import Context, DeleteOptions, GenericStore
from pykubelet.controlplane.registry.strategy import Obj

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _count_decodes() -> tuple[list[str], Any, Any]:
    calls: list[str] = []
    real_decode, real_unknown = codec.decode, codec.unknown_fields

    def decode(*a: Any, **k: Any) -> Any:
        calls.append("decode")
        return real_decode(*a, **k)

    def unknown(*a: Any, **k: Any) -> Any:
        calls.append("unknown_fields")
        return real_unknown(*a, **k)

    return (calls, mock.patch.object(codec, "decode", decode),
            mock.patch.object(codec, "unknown_fields", unknown))


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {"app": "d"}},
                       "template": {"metadata": {"labels": {"app": "d"}},
                                    "spec": {"containers": [{"name": "c",
                                                             "image": "busybox"}]}}}}


def _create_counting(resource: Any, body: Obj) -> tuple[list[str], Obj]:
    async def run() -> tuple[list[str], Obj]:
        calls, p1, p2 = _count_decodes()
        async with memory_registry(("default",)) as reg:
            # the namespace's default ServiceAccount exists (else admission makes it: a
            # decode of its own)
            await reg.store(SERVICE_ACCOUNTS).create(Context(), "default", {
                "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
            with p1, p2:
                entry = await reg.store(resource).create(Context(), "default", dict(body))
        return calls, entry.obj()  # type: ignore[union-attr]

    return asyncio.run(run())


def test_a_create_decodes_the_body_once() -> None:
    """A pod's create walks its body once: unknown fields found in the same pass, and
    PrepareForCreate (the QoS class), admission (tolerations, priority) and validation all
    work on that one decoded object, as kube-apiserver's create does; the stored object is
    its encoding. There were four decodes, then two (validation decoded the object again
    after admission changed it)."""
    calls, pod = _create_counting(PODS, POD)
    assert calls == ["decode"]
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert pod["spec"]["priority"] == 0
    assert [t["key"] for t in pod["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert pod["metadata"]["uid"]
    assert pod["metadata"]["creationTimestamp"]


def test_a_deployment_create_decodes_the_body_once() -> None:
    """The same for an apps/v1 Deployment: one decode, generation 1, no status."""
    calls, dep = _create_counting(DEPLOYMENTS, DEPLOYMENT)
    assert calls == ["decode"]
    assert dep["metadata"]["generation"] == 1
    assert "status" not in dep or not dep["status"]


def test_a_post_decodes_once_through_the_http_layer(api: LiveAPI) -> None:
    """The whole POST (create.py: the body read in its media type, then the registry's
    create) walks the object model once, for a Deployment and a Pod alike."""
    path = "/apis/apps/v1/namespaces/default/deployments"
    body = {**DEPLOYMENT, "metadata": {"name": "d-http"}}
    calls, p1, p2 = _count_decodes()
    try:
        with p1, p2:
            reply = api.call("POST", path, body)
            pod_reply = api.call("POST", "/api/v1/namespaces/default/pods",
                                 {**POD, "metadata": {"name": "p-http"}})
        assert (reply.status, pod_reply.status) == (201, 201), (reply.body, pod_reply.body)
        assert calls == ["decode", "decode"]  # one each
    finally:
        api.call("DELETE", f"{path}/d-http")
        api.call("DELETE", "/api/v1/namespaces/default/pods/p-http?gracePeriodSeconds=0")


class DictPreparedConfigMaps(ConfigMapStrategy):
    """A strategy still written against the canonical dict (PrepareForCreate on ``obj``)."""

    def prepare_for_create(self, obj: Obj, typed: Any = None) -> None:
        super().prepare_for_create(obj, typed)
        obj.setdefault("data", {})["prepared"] = "yes"


def test_a_strategy_preparing_the_dict_still_works() -> None:
    """What such a strategy writes is stored and validated: the prepared dict is decoded
    once more for validation (its cost, until it prepares the typed object)."""

    async def run() -> tuple[list[str], Obj]:
        async with memory_registry(("default",)) as reg:
            store = GenericStore(reg, DictPreparedConfigMaps(), reg.store(CONFIGMAPS).cache)
            calls, p1, p2 = _count_decodes()
            with p1, p2:
                entry = await store.create(Context(), "default", {"metadata": {"name": "c"}})
            return calls, entry.obj()  # type: ignore[union-attr]

    calls, cm = asyncio.run(run())
    assert cm["data"] == {"prepared": "yes"}
    assert calls == ["decode", "decode"]


def test_strict_decoding_still_names_unknown_fields_before_type_errors() -> None:
    """One pass does not change what a strict create answers: every unknown field at once,
    even when another field is ill-typed."""

    async def run() -> str:
        async with memory_registry(("default",)) as reg:
            body = {**POD, "bogus": 1, "spec": {"containers": "nope", "alsoBogus": 2}}
            try:
                await reg.store(PODS).create(Context(), "default", body)
            except Exception as exc:  # StatusError 400
                return str(exc)
            return ""

    assert 'strict decoding error: unknown field "spec.alsoBogus", unknown field "bogus"' in (
        asyncio.run(run()))


class HeldConfigMaps(ConfigMapStrategy):
    """A strategy with finalizers of its own, as a namespace's spec.finalizers."""

    def pending_finalizers(self, obj: Obj) -> bool:
        return bool((obj.get("data") or {}).get("held"))

    def begin_deletion(self, obj: Obj) -> None:
        obj.setdefault("data", {})["state"] = "Terminating"


def test_deletion_rules_come_from_the_strategy() -> None:
    """A delete is held by the strategy's pending finalizers and marked by its
    begin_deletion; once they are gone, the update that removes them deletes it."""

    async def run() -> None:
        async with memory_registry(("default",)) as reg:
            store = reg.store(CONFIGMAPS)
            held = GenericStore(reg, HeldConfigMaps(), store.cache)
            ctx = Context()
            await held.create(ctx, "default", {"metadata": {"name": "c"},
                                               "data": {"held": "yes"}})
            obj, gone = await held.delete(ctx, "default", "c", DeleteOptions())
            assert not gone
            data = (obj.obj() if not isinstance(obj, dict) else obj)["data"]
            assert data == {"held": "yes", "state": "Terminating"}

            def release(o: Obj) -> Obj:
                o["data"] = {}
                return o

            await held.guaranteed_update("default", "c", release)
            assert held.lookup("default", "c") is None

    asyncio.run(run())


def test_a_namespace_is_terminating_until_its_finalizers_go() -> None:
    """The namespace's rules, now in its strategy, behave as before: Terminating while
    spec.finalizers hold it."""

    async def run() -> None:
        async with memory_registry(("default", "gone")) as reg:
            ns = reg.store(NAMESPACES)
            obj, gone = await ns.delete(Context(), "", "gone", DeleteOptions())
            assert not gone
            got = obj.obj() if not isinstance(obj, dict) else obj
            assert got["status"]["phase"] == "Terminating"
            assert got["spec"]["finalizers"] == ["kubernetes"]

    asyncio.run(run())


def test_the_generic_store_names_no_resource() -> None:
    """registry/store.py has no string naming a resource: per-resource rules are the
    strategies'."""
    tree = ast.parse(Path(store_module.__file__).read_text())
    names = {"pods", "nodes", "namespaces", "events", "configmaps", "secrets", "leases"}
    found = {n.value for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names}
    assert found == set()


def test_times_are_canonical_on_every_write_path() -> None:
    """Leases and events write their times back as the API does (MicroTime: six digits
    and Z), on a create and on an update, whatever RFC 3339 form the client sent (the
    decode-once path once skipped the strategies' canonicalisation: kubectl describe
    node could then not parse a node's lease)."""
    from pykubelet.controlplane.registry.resources import EVENTS, LEASES

    async def run() -> None:
        async with memory_registry(("default",)) as reg:
            leases = reg.store(LEASES)
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": "n1"},
                     "spec": {"holderIdentity": "n1", "renewTime": "2026-01-02T03:04:05+00:00"}}
            made = await leases.create(Context(), "default", lease)
            assert made.obj()["spec"]["renewTime"] == "2026-01-02T03:04:05.000000Z"  # type: ignore[union-attr]
            lease["spec"]["renewTime"] = "2026-01-02T04:04:05.5+01:00"
            lease["metadata"]["resourceVersion"] = made.obj()["metadata"]["resourceVersion"]  # type: ignore[union-attr]
            updated = await leases.update(Context(), "default", "n1", lease)
            assert updated.obj()["spec"]["renewTime"] == "2026-01-02T03:04:05.500000Z"  # type: ignore[union-attr]
            event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
                     "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                     "reason": "R", "message": "m", "type": "Normal",
                     "lastTimestamp": "2026-01-02T03:04:05+00:00"}
            made = await reg.store(EVENTS).create(Context(), "default", event)
            assert made.obj()["lastTimestamp"] == "2026-01-02T03:04:05Z"  # type: ignore[union-attr]

    asyncio.run(run())
