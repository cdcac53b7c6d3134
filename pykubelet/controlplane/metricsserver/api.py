"""metrics.k8s.io/v1beta1 served from the scraper's storage (metrics-server's
pkg/api/{node,pod}.go): list and get of NodeMetrics (cluster-scoped) and PodMetrics
(namespaced, or across namespaces), selected by the labels of the Node or Pod objects,
as metrics-server lists them from its informers and then looks their metrics up. An
object without metrics yet is left out of a list, and a get of it is NotFound
(``podmetrics.metrics.k8s.io "web" not found``), as metrics-server answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.metricsserver import objects
from pykubelet.controlplane.metricsserver.scraper import Scraper
from pykubelet.controlplane.registry.resources import NODES
from pykubelet.controlplane.registry.store import Attrs, Registry


class MetricsAPI:
    """The group's handlers over the registry's Nodes and Pods and the scraper."""

    def __init__(self, registry: Registry, scraper: Scraper) -> None:
        self.registry = registry
        self.scraper = scraper

    def _objects(self, resource: str, namespace: str | None,
                 predicate: Callable[[Attrs], bool]) -> list[dict[str, Any]]:
        store = (self.registry.store(NODES) if resource == "nodes"
                 else self.registry.by_resource("", "pods"))
        assert store is not None
        return [e.obj() for e in store.select(namespace, predicate)]

    def _metrics_of(self, resource: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        meta = obj.get("metadata") or {}
        storage = self.scraper.storage
        if resource == "nodes":
            usage = storage.node_usage(meta.get("name", ""))
            return objects.node_metrics(obj, usage) if usage is not None else None
        found = storage.pod_usage(meta.get("namespace", ""), meta.get("name", ""))
        if found is None:
            return None
        return objects.pod_metrics(obj, found[0], found[1])

    async def serve(self, verb: str, resource: str, namespace: str, name: str,
                    predicate: Callable[[Attrs], bool]) -> dict[str, Any]:
        """A get or list; ``namespace`` "" lists pods in every namespace."""
        kind, namespaced = objects.RESOURCES[resource]
        await self.scraper.ensure_fresh()
        if verb == "get":
            entries = self._objects(resource, namespace if namespaced else None,
                                    lambda a: a.name == name)
            found = self._metrics_of(resource, entries[0]) if entries else None
            if found is None:
                raise errors.not_found(objects.NOT_FOUND_RESOURCE[resource], objects.GROUP,
                                       name)
            return found
        items = []
        for obj in self._objects(resource, (namespace or None) if namespaced else None,
                                 predicate):
            m = self._metrics_of(resource, obj)
            if m is not None:
                items.append(m)
        return objects.metrics_list(kind, items)
