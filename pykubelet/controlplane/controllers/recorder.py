"""Events the control plane's components record (client-go's event recorder, in process):
a repeat of the same event on the same object bumps ``count`` and ``lastTimestamp``
instead of adding a new object, as the recorder's correlator does."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.resources import EVENTS
from pykubelet.controlplane.registry.store import Context, Registry
from pykubelet.controlplane.registry.strategy import now, rfc3339

log = logging.getLogger(__name__)

NORMAL, WARNING = "Normal", "Warning"


class EventRecorder:
    def __init__(self, registry: Registry, component: str, host: str = "") -> None:
        self.registry = registry
        self.component = component
        self.host = host

    async def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """Record ``reason``/``message`` about ``obj`` (a Pod, Node, ... dict)."""
        meta = obj.get("metadata") or {}
        kind = obj.get("kind", "")
        ns = meta.get("namespace") or "default"
        involved = {"kind": kind, "namespace": meta.get("namespace", ""),
                    "name": meta.get("name", ""), "uid": meta.get("uid", ""),
                    "apiVersion": obj.get("apiVersion", "v1"),
                    "resourceVersion": meta.get("resourceVersion", "")}
        if kind == "Node":  # kubelet-style node events: uid = name, namespace default
            involved["uid"] = meta.get("name", "")
        key = hashlib.sha1(f"{involved['uid']}/{reason}/{message}".encode()).hexdigest()[:10]
        name = f"{meta.get('name', 'object')}.{key}"
        store = self.registry.store(EVENTS)
        t = now()
        ctx = Context()
        existing = store.lookup(ns, name)
        try:
            if existing is not None:
                def bump(ev: dict[str, Any]) -> dict[str, Any]:
                    ev["count"] = int(ev.get("count") or 1) + 1
                    ev["lastTimestamp"] = rfc3339(t)
                    return ev

                await store.guaranteed_update(ns, name, bump, ctx=ctx)
                return
            await store.create(ctx, ns, {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": ns},
                "involvedObject": involved, "reason": reason, "message": message,
                "source": {"component": self.component, **({"host": self.host}
                                                           if self.host else {})},
                "firstTimestamp": rfc3339(t), "lastTimestamp": rfc3339(t), "count": 1,
                "type": type_, "eventTime": None, "reportingComponent": self.component,
                "reportingInstance": self.host or self.component,
            })
        except errors.APIError as exc:
            with contextlib.suppress(Exception):
                log.debug("event %s/%s not recorded: %s", ns, name, exc.message)
