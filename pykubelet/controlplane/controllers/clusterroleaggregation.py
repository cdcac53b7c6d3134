"""The ClusterRole aggregation controller (pkg/controller/clusterroleaggregation): a
ClusterRole with an ``aggregationRule`` has as its rules those of every other ClusterRole
its selectors pick (selector by selector, the picked roles by name, each distinct rule
once), written whenever they differ. Any ClusterRole change queues every aggregated one,
as upstream's enqueue does: a labelled role added, changed or deleted changes the
aggregates (``admin``, ``edit``, ``view`` gather ``aggregate-to-*`` roles this way)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.labels import RequirementError, label_selector_as_selector
from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.informer import InformerController, entry_key
from pykubelet.controlplane.controllers.workqueue import WorkQueue
from pykubelet.controlplane.registry.resources import CLUSTER_ROLES
from pykubelet.controlplane.registry.store import Context, Registry
from pykubelet.controlplane.storage.cacher import CachedEvent, ResourceCache

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def aggregated_rules(role: Obj, cluster_roles: Iterable[Obj]) -> list[Obj] | None:
    """The rules ``role`` aggregates from ``cluster_roles`` (syncClusterRole), or None when
    it has no aggregationRule (its rules are its own). A selector that does not parse
    selects nothing here (upstream returns the error and retries; it can never parse)."""
    rule = role.get("aggregationRule")
    if rule is None:
        return None
    name = (role.get("metadata") or {}).get("name")
    roles = sorted(cluster_roles, key=lambda r: str((r.get("metadata") or {}).get("name")))
    out: list[Obj] = []
    for sel in rule.get("clusterRoleSelectors") or []:
        try:
            selector = label_selector_as_selector(
                sel.get("matchLabels"),
                ((e.get("key", ""), e.get("operator", ""), e.get("values") or ())
                 for e in sel.get("matchExpressions") or []))
        except RequirementError:
            continue
        for other in roles:
            meta = other.get("metadata") or {}
            if meta.get("name") == name or not selector.matches(meta.get("labels") or {}):
                continue
            for r in other.get("rules") or []:
                if r not in out:  # ruleExists: equal rules are kept once
                    out.append(r)
    return out


class ClusterRoleAggregation(InformerController):
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.roles = self.primary = registry.store(CLUSTER_ROLES)
        self.queue: WorkQueue = WorkQueue("clusterrole-aggregation-controller", self.sync)

    def _on_event(self, cache: ResourceCache, ev: CachedEvent) -> None:
        if cache.prefix != CLUSTER_ROLES.storage_prefix:
            return
        for entry in self.roles.select(None, None):
            if entry.obj().get("aggregationRule") is not None:
                self.queue.add(entry_key(entry))

    async def sync(self, key: str) -> None:
        role = self.get_primary(key)
        if role is None:
            return
        rules = aggregated_rules(role, (e.obj() for e in self.roles.select(None, None)))
        if rules is None or rules == (role.get("rules") or []):
            return
        role["rules"] = rules
        try:
            await self.roles.update(Context(), "", role["metadata"]["name"], role)
        except errors.StatusError as exc:
            if exc.code == 409:  # changed meanwhile: that change queued it again
                return
            if exc.code != 404:
                raise


async def run_clusterrole_aggregation(cp: ControlPlane) -> None:
    await ClusterRoleAggregation(cp.registry).run()
