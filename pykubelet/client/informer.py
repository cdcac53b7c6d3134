"""An informer over the REST client: client-go's Reflector plus a store and handlers.

List, then watch from the list's resourceVersion; when the watch ends, watch again from the
last resourceVersion seen (bookmarks included), so nothing is missed or repeated; on 410
Gone list again (and report what changed meanwhile as adds, updates and deletes). As the
reflector: a watch that was established and then broke (the API server went away) is
watched again at once; a list or watch that cannot start (refused, an error Status, a watch
ending within a second with nothing) backs off, 0.8 s doubling to 30 s, and that back-off
starts again from 0.8 s once none was needed for 2 minutes (ExponentialBackoffManager), so
an API server that restarts again later is not waited for as long as the last outage
ended. The handlers run on the informer's thread and must be quick; ``has_synced`` turns
true after the first full list.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from pykubelet.client.rest import ClientError, Resource, RESTClient, StatusError

log = logging.getLogger(__name__)

Obj = dict[str, Any]
INITIAL_BACKOFF_S = 0.8
MAX_BACKOFF_S = 30.0
BACKOFF_RESET_S = 120.0  # no back-off for this long: the next starts from the first step
BACKOFF_JITTER = 0.1  # the reflector's is 1.0 (a wait in [d, 2d)); ours waits less
SHORT_WATCH_S = 1.0  # a watch ending sooner with no event did not really start (watchHandler)


class Backoff:
    """client-go's ExponentialBackoffManager as the reflector makes it: each step doubles
    up to the cap; a step asked for more than ``reset_after`` seconds after the last one
    starts again from the first."""

    def __init__(self, initial: float = INITIAL_BACKOFF_S, cap: float = MAX_BACKOFF_S,
                 reset_after: float = BACKOFF_RESET_S, jitter: float = BACKOFF_JITTER,
                 clock: Callable[[], float] = time.monotonic,
                 rand: Callable[[], float] = random.random) -> None:
        self.initial, self.cap, self.reset_after = initial, cap, reset_after
        self.jitter, self.clock, self.rand = jitter, clock, rand
        self._next = initial
        self._last: float | None = None

    def next(self) -> float:
        """Seconds to wait now."""
        now = self.clock()
        if self._last is None or now - self._last > self.reset_after:
            self._next = self.initial
        self._last = now
        step = self._next
        self._next = min(self.cap, step * 2)
        return step * (1 + self.rand() * self.jitter)


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


class Informer:
    """Keep a local copy of a resource (optionally filtered) and tell handlers of changes."""

    def __init__(
        self,
        client: RESTClient,
        resource: Resource,
        *,
        namespace: str = "",
        field_selector: str = "",
        label_selector: str = "",
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
        on_sync: Callable[[list[Obj]], None] | None = None,
        name: str = "",
        watch_timeout: int = 300,
        clock: Callable[[], float] = time.monotonic,
        transform: Callable[[Obj], Obj] | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.params: dict[str, str] = {}
        if field_selector:
            self.params["fieldSelector"] = field_selector
        if label_selector:
            self.params["labelSelector"] = label_selector
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.on_sync = on_sync
        self.name = name or resource.plural
        self.watch_timeout = watch_timeout
        self.clock = clock
        # client-go's SetTransform: each listed or watched object passes through it
        # before it is stored and handed to the handlers (strip_managed_fields: what the
        # cache's owner never reads is not kept for every object)
        self.transform = transform
        self._backoff = Backoff(clock=clock)
        self._watch_ran = False  # the last watch was established (see SHORT_WATCH_S)
        self.store: dict[str, Obj] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.connected = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lock = threading.Lock()

    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def items(self) -> list[Obj]:
        with self.lock:
            return list(self.store.values())

    def get(self, key: str) -> Obj | None:
        with self.lock:
            return self.store.get(key)

    # ------------------------------------------------------------------ the reflector
    def _run(self) -> None:
        need_list = True
        while not self._stop.is_set() and not self.client.closed:
            self._watch_ran = False
            try:
                if need_list:
                    self._list()
                    need_list = False
                self.connected.set()
                self._watch()
                if not self._watch_ran and not self._stop.is_set():  # a failed start
                    self._stop.wait(self._backoff.next())
            except StatusError as exc:
                self.connected.clear()
                if exc.gone or exc.reason in ("Expired", "Gone"):
                    log.info("%s: watch expired (%s); listing again", self.name, exc.message)
                    need_list = True
                    continue
                log.warning("%s: %s", self.name, exc.message)
                self._stop.wait(self._backoff.next())
            except (ClientError, OSError, ValueError) as exc:
                self.connected.clear()
                if self.client.closed or self._stop.is_set():
                    return  # its owner ended the client: the informer ends with it
                if self._watch_ran:  # it ran, then broke: watch again at once
                    log.info("%s: watch broke (%s); watching again", self.name, exc)
                    continue
                delay = self._backoff.next()
                log.warning("%s: lost the API server (%s); retrying in %.1fs", self.name, exc,
                            delay)
                self._stop.wait(delay)
            except Exception:
                self.connected.clear()
                log.exception("%s: informer failed; retrying", self.name)
                self._stop.wait(self._backoff.next())

    def _list(self) -> None:
        items: list[Obj] = []
        cont = ""
        rv = ""
        while True:
            params = dict(self.params, limit=500)
            if cont:
                params["continue"] = cont
            page = self.client.list(self.resource, self.namespace, **params)
            items += page.get("items") or []
            meta = page.get("metadata") or {}
            rv = rv or meta.get("resourceVersion", "")
            cont = meta.get("continue", "")
            if not cont:
                break
        kind = self.resource.plural
        for obj in items:  # list items may come without their kind
            obj.setdefault("kind", _kind_of(kind))
        if self.transform is not None:
            items = [self.transform(o) for o in items]
        fresh = {key_of(o): o for o in items}
        with self.lock:
            old = self.store
            self.store = fresh
            self.resource_version = rv
        # a relist after a gap tells handlers what they missed (Replace's deltas)
        for k, o in fresh.items():
            if k not in old:
                self._call(self.on_add, o)
            elif old[k].get("metadata", {}).get("resourceVersion") != o.get(
                    "metadata", {}).get("resourceVersion"):
                self._call(self.on_update, old[k], o)
        for k, o in old.items():
            if k not in fresh:
                self._call(self.on_delete, o)
        if self.on_sync is not None:
            self.on_sync(list(fresh.values()))
        self.synced.set()

    def _watch(self) -> None:
        started = self.clock()
        for ev in self.client.watch(self.resource, self.namespace,
                                    resource_version=self.resource_version,
                                    timeout_seconds=self.watch_timeout,
                                    params=self.params):
            self._watch_ran = True
            if self._stop.is_set():
                return
            obj = ev.get("object") or {}
            rv = (obj.get("metadata") or {}).get("resourceVersion", "")
            kind = ev.get("type")
            if kind == "BOOKMARK":
                if rv:
                    self.resource_version = rv
                continue
            if self.transform is not None:
                obj = self.transform(obj)
            k = key_of(obj)
            with self.lock:
                old = self.store.get(k)
                if kind == "DELETED":
                    self.store.pop(k, None)
                else:
                    self.store[k] = obj
                if rv:
                    self.resource_version = rv
            if kind == "ADDED" or kind == "MODIFIED":
                if old is None:
                    self._call(self.on_add, obj)
                else:
                    self._call(self.on_update, old, obj)
            elif kind == "DELETED":
                self._call(self.on_delete, obj)
        self._watch_ran = self._watch_ran or self.clock() - started >= SHORT_WATCH_S

    def _call(self, fn: Callable[..., None] | None, *args: Obj) -> None:
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:
            log.exception("%s: handler failed", self.name)


def strip_managed_fields(obj: Obj) -> Obj:
    """client-go's TransformStripManagedFields: drops metadata.managedFields (the server
    side apply bookkeeping, ~1 KiB of JSON and several KiB of dicts per pod), which no
    informer owner here reads."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def _kind_of(plural: str) -> str:
    return {"pods": "Pod", "nodes": "Node", "namespaces": "Namespace", "events": "Event",
            "configmaps": "ConfigMap", "secrets": "Secret", "leases": "Lease"}.get(plural, "")
