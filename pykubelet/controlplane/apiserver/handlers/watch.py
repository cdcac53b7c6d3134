"""Watches: newline-delimited ``WatchEvent`` JSON on a chunked response, served from the
watch cache (apiserver's handlers/watch.go and the cacher).

Without a resourceVersion (or with "0") the watch starts with a synthetic ADDED for every
matching object, then follows changes; with one it replays the cache's events after that
revision, or sends one ERROR event (410 Expired) when they are no longer held, as the
watch cache does. BOOKMARKs go out only when asked for (``allowWatchBookmarks``). A Table
watch (``kubectl get -w``) sends one-row Tables, the columns in the first one only.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver import tables
from pykubelet.controlplane.apiserver.handlers.rest import int64_param
from pykubelet.controlplane.apiserver.negotiation import wants_table
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_bool
from pykubelet.controlplane.registry.store import Attrs, Entry, GenericStore, Watcher

MIN_TIMEOUT_S = 1800  # kube-apiserver's --min-request-timeout: watches end in [1x, 2x)


def _event_line(kind: str, data: bytes) -> bytes:
    return b'{"type":"%s","object":%s}\n' % (kind.encode(), data)


def error_event(err: errors.StatusError) -> bytes:
    return b'{"type":"ERROR","object":%s}\n' % orjson.dumps(err.status())


class WatchStream:
    """One watch request, from its first byte to its end."""

    def __init__(
        self,
        store: GenericStore,
        namespace: str | None,
        predicate: Callable[[Attrs], bool],
        resource_version: str,
        timeout_s: float | None,
        bookmarks: bool,
        bookmark_interval: float,
        table: tuple[str, str] | None = None,  # (apiVersion of the Table, includeObject)
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.predicate = predicate
        self.resource_version = resource_version
        self.timeout_s = timeout_s if timeout_s else MIN_TIMEOUT_S * (1 + random.random())
        self.bookmarks = bookmarks
        self.bookmark_interval = bookmark_interval
        self.table = table
        self._headers_sent = False

    def _format(self, kind: str, entry: Entry) -> bytes:
        if self.table is None:
            # one encoding per event, however many watchers send it
            return bytes(entry.derived(kind, lambda: _event_line(kind, entry.data)))
        api_version, include = self.table
        t = tables.table(self.store.info.kind, [entry], entry.rev, include,
                         headers=not self._headers_sent,
                         printer=getattr(self.store.strategy, "printer", None))
        t["apiVersion"] = api_version
        self._headers_sent = True
        return _event_line(kind, orjson.dumps(t))

    def _bookmark(self, rev: int) -> bytes:
        info = self.store.info
        obj: dict[str, Any] = {"kind": info.kind, "apiVersion": info.group_version,
                               "metadata": {"resourceVersion": str(rev)}}
        return _event_line("BOOKMARK", orjson.dumps(obj))

    async def serve(self, request: web.Request) -> web.StreamResponse:
        watcher = await self.store.watch(self.namespace, self.predicate,
                                         self.resource_version)
        expired = errors.expired(str(watcher.error)) if watcher.error is not None else None
        initial = [self._format("ADDED", entry) for entry in watcher.initial]
        watcher.initial = []
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            if expired is not None:
                await resp.write(error_event(expired))
                return resp
            if initial:
                await resp.write(b"".join(initial))
            await self._follow(resp, watcher)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            watcher.close()
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await resp.write_eof()
        return resp

    async def _follow(self, resp: web.StreamResponse, watcher: Watcher) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        next_bookmark = loop.time() + self.bookmark_interval
        while True:
            now = loop.time()
            if now >= deadline:
                if self.bookmarks:  # what the watcher took first: the client resumes after
                    await resp.write(self._flush(watcher, bookmark=True)[0])
                return
            wait = deadline - now
            if self.bookmarks:
                wait = min(wait, max(0.0, next_bookmark - now))
            try:
                item = await asyncio.wait_for(watcher.queue.get(), wait)
            except TimeoutError:
                if self.bookmarks and loop.time() >= next_bookmark:
                    out, closed = self._flush(watcher, bookmark=True)
                    await resp.write(out)
                    if closed:
                        return
                    next_bookmark = loop.time() + self.bookmark_interval
                continue
            if item is None:
                return
            out, closed = self._flush(watcher, first=self._format(*item))
            await resp.write(out)
            if closed:
                return

    def _flush(self, watcher: Watcher, first: bytes = b"",
               bookmark: bool = False) -> tuple[bytes, bool]:
        """What the watcher holds, formatted (after ``first``), then with ``bookmark`` a
        BOOKMARK at the cache's revision; and whether the watcher closed. Taken in one step,
        with no await: every event up to the cache's revision has been offered to the
        watcher by then, so the bookmark follows all of them and a client resuming from it
        misses none. (A bookmark at the watcher's last revision written while events it had
        taken still waited in the queue lost them: the soak's never-started pod, issue 29.)
        Upstream's cacheWatcher sends bookmarks through the events' own channel, in order."""
        out = [first] if first else []
        while not watcher.queue.empty():
            item = watcher.queue.get_nowait()
            if item is None:
                return b"".join(out), True
            out.append(self._format(*item))
        if bookmark:
            out.append(self._bookmark(max(watcher.last_rev, self.store.revision)))
        return b"".join(out), False


async def serve_watch(request: web.Request, store: GenericStore, namespace: str | None,
                      predicate: Callable[[Attrs], bool], info: RequestInfo,
                      bookmark_interval: float) -> web.StreamResponse:
    """A watch request's options (timeoutSeconds, allowWatchBookmarks, a Table's
    includeObject, the legacy /watch/.../NAME form), then its stream."""
    q = request.query
    if info.name:  # the legacy /watch/.../name form
        name = info.name
        inner = predicate
        predicate = lambda a: a.name == name and inner(a)  # noqa: E731
    timeout = (float(int64_param(q["timeoutSeconds"], "timeoutSeconds"))
               if q.get("timeoutSeconds") else None)
    try:
        bookmarks = bool(parse_bool(q.get("allowWatchBookmarks")))
    except ValueError:
        raise errors.bad_request("invalid allowWatchBookmarks") from None
    table_version = wants_table(request.headers.get("Accept", ""))
    table = (table_version, q.get("includeObject", "Metadata")) if table_version else None
    stream = WatchStream(store, namespace, predicate, q.get("resourceVersion", ""), timeout,
                         bookmarks, bookmark_interval, table)
    return await stream.serve(request)
