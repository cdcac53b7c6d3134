"""Events the control plane's components record (client-go's event recorder, in process):
a repeat of the same event on the same object bumps ``count`` and ``lastTimestamp``
instead of adding a new object, as the recorder's correlator does.

A new event is named as makeEvent names it, ``<object>.<UnixNano in hex>``, so the API
lists an object's events (by key) in the order they happened; the correlator remembers,
per object, type, reason and message, the name it gave (an LRU, as client-go's), which is
how a repeat finds the event to bump.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import OrderedDict
from typing import Any

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.resources import EVENTS
from pykubelet.controlplane.registry.store import Context, Registry

log = logging.getLogger(__name__)

NORMAL, WARNING = "Normal", "Warning"
MAX_LRU_ENTRIES = 4096  # client-go's maxLruCacheEntries


class _Names:
    """Event names: makeEvent's, unique within this process even within one nanosecond."""

    last_ns = 0

    @classmethod
    def make(cls, obj_name: str) -> str:
        cls.last_ns = max(time.time_ns(), cls.last_ns + 1)
        return f"{obj_name}.{cls.last_ns:x}"


class EventRecorder:
    def __init__(self, registry: Registry, component: str, host: str = "") -> None:
        self.registry = registry
        self.component = component
        self.host = host
        self._names: OrderedDict[tuple[str, ...], str] = OrderedDict()

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
        key = (ns, kind, involved["name"], involved["uid"], type_, reason, message)
        store = self.registry.store(EVENTS)
        t = now()
        ctx = Context()
        name = self._names.get(key, "")
        existing = store.lookup(ns, name) if name else None
        if existing is None:
            name = _Names.make(meta.get("name") or "object")
        self._names[key] = name
        self._names.move_to_end(key)
        while len(self._names) > MAX_LRU_ENTRIES:
            self._names.popitem(last=False)
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
        except errors.StatusError as exc:
            with contextlib.suppress(Exception):
                log.debug("event %s/%s not recorded: %s", ns, name, exc.message)
