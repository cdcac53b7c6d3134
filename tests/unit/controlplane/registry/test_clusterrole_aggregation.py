"""The ClusterRole aggregation controller (pkg/controller/clusterroleaggregation): the rules
of an aggregated ClusterRole are those of the roles its selectors pick, selector by
selector, by name, each rule once; a labelled role's change reaches the aggregate through
the watch; a role without aggregationRule keeps its own rules."""

from __future__ import annotations

import asyncio
from typing import Any

from registry_fixture import memory_registry

from pykubelet.controlplane.controllers.clusterroleaggregation import (
    ClusterRoleAggregation,
    aggregated_rules,
)
from pykubelet.controlplane.registry.resources import CLUSTER_ROLES
from pykubelet.controlplane.registry.store import Context, DeleteOptions

Obj = dict[str, Any]
PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}
JOBS = {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"]}


def role(name: str, labels: dict[str, str] | None = None, rules: list[Obj] | None = None,
         selectors: list[Obj] | None = None) -> Obj:
    out: Obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": labels or {}}, "rules": rules or []}
    if selectors is not None:
        out["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return out


def test_rules_gathered_selector_by_selector_by_name_once() -> None:
    agg = role("agg", selectors=[{"matchLabels": {"a": "1"}},
                                 {"matchExpressions": [{"key": "b", "operator": "Exists"}]}])
    others = [role("z", {"a": "1"}, [PODS]), role("y", {"a": "1"}, [NODES, PODS]),
              role("x", {"b": "2"}, [JOBS, PODS]), role("w", {}, [JOBS]),
              role("agg", {"a": "1"}, [JOBS])]  # itself: skipped by name
    assert aggregated_rules(agg, others) == [NODES, PODS, JOBS]
    assert aggregated_rules(role("plain", rules=[PODS]), others) is None
    assert aggregated_rules(role("none", selectors=[]), others) == []


def test_controller_follows_labelled_roles() -> None:
    async def main() -> None:
        async with memory_registry() as reg:
            store = reg.store(CLUSTER_ROLES)
            ctx = Context()
            await store.create(ctx, "", role("t-agg", rules=[JOBS], selectors=[
                {"matchLabels": {"t-aggregate": "true"}}]))
            await store.create(ctx, "", role("t-part", {"t-aggregate": "true"}, [PODS]))
            await store.create(ctx, "", role("t-plain", {}, [NODES]))
            controller = ClusterRoleAggregation(reg)
            task = asyncio.create_task(controller.queue.run())
            try:
                with controller.informing():
                    async def rules_become(want: list[Obj]) -> None:
                        for _ in range(200):
                            got = store.get("", "t-agg").obj().get("rules")
                            if got == want:
                                return
                            await asyncio.sleep(0.01)
                        raise AssertionError(f"rules {got} never became {want}")

                    await rules_become([PODS])
                    part = store.get("", "t-part").obj()
                    part["rules"] = [PODS, NODES]
                    await store.update(ctx, "", "t-part", part)
                    await rules_become([PODS, NODES])
                    await store.delete(ctx, "", "t-part", DeleteOptions())
                    await rules_become([])
                    assert store.get("", "t-plain").obj()["rules"] == [NODES]
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
