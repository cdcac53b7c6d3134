"""An informer over the REST client: client-go's Reflector plus a store and handlers.

List, then watch from the list's resourceVersion; when the watch ends, watch again from the
last resourceVersion seen (bookmarks included), so nothing is missed or repeated; on 410
Gone list again (and report what changed meanwhile as adds, updates and deletes); on a
broken connection back off (0.8 s doubling to 30 s, as the reflector does) and resume. The
handlers run on the informer's thread and must be quick; ``has_synced`` turns true after
the first full list.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from pykubelet.client.rest import ClientError, Resource, RESTClient, StatusError

log = logging.getLogger(__name__)

Obj = dict[str, Any]
INITIAL_BACKOFF_S = 0.8
MAX_BACKOFF_S = 30.0


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
        backoff = INITIAL_BACKOFF_S
        need_list = True
        while not self._stop.is_set() and not self.client.closed:
            try:
                if need_list:
                    self._list()
                    need_list = False
                self.connected.set()
                self._watch()
                backoff = INITIAL_BACKOFF_S
            except StatusError as exc:
                self.connected.clear()
                if exc.gone or exc.reason in ("Expired", "Gone"):
                    log.info("%s: watch expired (%s); listing again", self.name, exc.message)
                    need_list = True
                    continue
                log.warning("%s: %s", self.name, exc.message)
                self._stop.wait(backoff * (1 + random.random() * 0.1))
                backoff = min(MAX_BACKOFF_S, backoff * 2)
            except (ClientError, OSError, ValueError) as exc:
                self.connected.clear()
                if self.client.closed or self._stop.is_set():
                    return  # its owner ended the client: the informer ends with it
                log.warning("%s: lost the API server (%s); retrying in %.1fs", self.name, exc,
                            backoff)
                self._stop.wait(backoff * (1 + random.random() * 0.1))
                backoff = min(MAX_BACKOFF_S, backoff * 2)
            except Exception:
                self.connected.clear()
                log.exception("%s: informer failed; retrying", self.name)
                self._stop.wait(backoff)
                backoff = min(MAX_BACKOFF_S, backoff * 2)

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
        for ev in self.client.watch(self.resource, self.namespace,
                                    resource_version=self.resource_version,
                                    timeout_seconds=self.watch_timeout,
                                    params=self.params):
            if self._stop.is_set():
                return
            obj = ev.get("object") or {}
            rv = (obj.get("metadata") or {}).get("resourceVersion", "")
            kind = ev.get("type")
            if kind == "BOOKMARK":
                if rv:
                    self.resource_version = rv
                continue
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

    def _call(self, fn: Callable[..., None] | None, *args: Obj) -> None:
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:
            log.exception("%s: handler failed", self.name)


def _kind_of(plural: str) -> str:
    return {"pods": "Pod", "nodes": "Node", "namespaces": "Namespace", "events": "Event",
            "configmaps": "ConfigMap", "secrets": "Secret", "leases": "Lease"}.get(plural, "")
