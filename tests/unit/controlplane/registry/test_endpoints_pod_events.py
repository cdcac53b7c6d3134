"""A pod's event wakes the EndpointSlice and Endpoints controllers only for the Services
whose selector picks the pod before or after the change, judged from the pod's labels
the watch cache already holds and each Service's selector read once (upstream's
ServiceSelectorCache): no JSON is parsed per pod event, so a pod nobody selects (the
bench's, a burst's) costs these controllers ~nothing."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane.controllers.endpointslice import (
    EndpointsController,
    EndpointSliceController,
)
from pykubelet.controlplane.registry.resources import PODS, SERVICES
from pykubelet.controlplane.registry.store import Context
from pykubelet.controlplane.storage.cacher import MODIFIED, CachedEvent, Entry


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _service(name: str, selector: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("controller", [EndpointSliceController, EndpointsController])
def test_pod_events_queue_the_selecting_services_without_parsing(
        controller: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with memory_registry() as registry:
            ctrl = controller(SimpleNamespace(registry=registry))
            services, pods = registry.store(SERVICES), registry.store(PODS)
            for svc in (_service("web", {"app": "web"}), _service("plain", None),
                        _service("db", {"app": "db", "tier": "back"})):
                await services.create(Context(), "default", svc)
            for name, labels in (("w", {"app": "web"}), ("x", {"app": "other"}),
                                 ("d", {"app": "db", "tier": "back", "more": "1"})):
                await pods.create(Context(), "default", _pod(name, labels))
            cache = registry.cacher.resources[PODS.storage_prefix]

            def event(name: str, prev: str | None = None) -> CachedEvent:
                entry = cache.entries[PODS.key("default", name)]
                old = cache.entries[PODS.key("default", prev)] if prev else None
                return CachedEvent(MODIFIED, entry.rev, entry, old)

            def queued(ev: CachedEvent) -> set[str]:
                ctrl.queue = SimpleNamespace(added=set())
                ctrl.queue.add = ctrl.queue.added.add
                ctrl._on_event(cache, ev)
                return set(ctrl.queue.added)

            assert queued(event("w")) == {"default/web"}  # the first reads the selectors
            parsed: list[str] = []
            for method in ("obj", "view"):
                real = getattr(Entry, method)
                monkeypatch.setattr(Entry, method, lambda self, real=real, m=method: (
                    parsed.append(f"{m} {self.key}"), real(self))[1])
            assert queued(event("w")) == {"default/web"}
            assert queued(event("x")) == set()
            assert queued(event("d")) == {"default/db"}
            assert queued(event("x", prev="w")) == {"default/web"}  # it left the selector
            assert parsed == []

    asyncio.run(main())
