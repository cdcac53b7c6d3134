"""The generic store decodes a body once, and knows no resource by name: what a
namespace does on delete is its strategy's (pending_finalizers, begin_deletion)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any
from unittest import mock

from registry_fixture import memory_registry

from pykubelet.api.machinery import codec
from pykubelet.controlplane.registry import store as store_module
from pykubelet.controlplane.registry.configdata import ConfigMapStrategy
from pykubelet.controlplane.registry.resources import CONFIGMAPS, NAMESPACES, PODS
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


def test_a_create_decodes_the_body_once() -> None:
    """A pod's create walks its body once (unknown fields found in the same pass, the QoS
    class read from the decoded object) and decodes the object it will store once more,
    for validation after admission changed it: two decodes, where there were four (an
    unknown-field walk, the decode, one for the QoS class, one for validation)."""

    async def run() -> list[str]:
        calls, p1, p2 = _count_decodes()
        async with memory_registry(("default",)) as reg:
            with p1, p2:
                entry = await reg.store(PODS).create(Context(), "default", dict(POD))
        assert entry.obj()["status"]["qosClass"] == "BestEffort"  # type: ignore[union-attr]
        return calls

    assert asyncio.run(run()) == ["decode", "decode"]


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
