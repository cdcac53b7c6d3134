"""List, then watch from the list's resourceVersion, and on a lost watch resume from the
last resourceVersion seen (an event's or a bookmark's), as client-go's reflector does; only
410 Gone (the server no longer holds that history) makes it list again. The cursor is pure
(what to ask next, what a line means); :func:`reflect` carries it over aiohttp."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger("pykubectl.dashboard")
Obj = dict[str, Any]
WATCH_SECONDS = 290  # the server ends a watch after this; the cursor then resumes


@dataclass
class WatchCursor:
    """Where a reflector stands: no resourceVersion means list next."""

    rv: str = ""

    def list_params(self) -> dict[str, str]:
        return {}

    def watch_params(self) -> dict[str, str]:
        return {"watch": "1", "resourceVersion": self.rv, "allowWatchBookmarks": "true",
                "timeoutSeconds": str(WATCH_SECONDS)}

    def listed(self, body: Obj) -> list[Obj]:
        self.rv = str((body.get("metadata") or {}).get("resourceVersion") or "")
        return list(body.get("items") or [])

    def on_line(self, ev: Obj) -> tuple[str, Obj] | None:
        """A watch line: (type, object) to apply, or None (a bookmark, or an error). After
        410 Gone the cursor is reset, so the next step is a list."""
        type_ = ev.get("type", "")
        obj = ev.get("object") or {}
        if type_ == "ERROR":
            if obj.get("code") == 410:
                self.rv = ""
            return None
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.rv = str(rv)
        if type_ == "BOOKMARK":
            return None
        return type_, obj


Replace = Callable[[str, list[Obj]], Awaitable[None]]
Apply = Callable[[str, str, Obj], Awaitable[None]]
Trouble = Callable[[str, str], Awaitable[None]]  # (kind, what failed; "" when it works again)


async def reflect(session: aiohttp.ClientSession, base: str, path: str, kind: str,
                  on_list: Replace, on_event: Apply, ready: asyncio.Event | None = None,
                  on_trouble: Trouble | None = None) -> None:
    """Keep ``kind`` at ``path`` mirrored for ever (cancel the task to stop)."""
    import aiohttp

    cursor = WatchCursor()
    delay = 0.2
    said = ""  # the last failure logged: a server that stays down is said once
    while True:
        try:
            if not cursor.rv:
                async with session.get(base + path) as resp:
                    body = await resp.json(content_type=None)
                    if resp.status != 200:
                        raise OSError(f"list {path}: {resp.status} "
                                      f"{(body or {}).get('message', '')}")
                await on_list(kind, cursor.listed(body))
                if ready is not None:
                    ready.set()
            timeout = aiohttp.ClientTimeout(total=None, sock_read=WATCH_SECONDS + 30)
            async with session.get(base + path, params=cursor.watch_params(),
                                   timeout=timeout) as resp:
                if resp.status == 410:
                    cursor.rv = ""
                    continue
                if resp.status != 200:
                    raise OSError(f"watch {path}: {resp.status}")
                if said:  # it reads again
                    delay, said = 0.2, ""
                    if on_trouble is not None:
                        await on_trouble(kind, "")
                async for line in resp.content:
                    if not line.strip():
                        continue
                    got = cursor.on_line(json.loads(line))
                    if got is not None:
                        await on_event(kind, got[0], got[1])
            # the server closed the watch (its timeout): resume from cursor.rv at once
        except asyncio.CancelledError:
            raise
        except (TimeoutError, OSError, aiohttp.ClientError, ValueError) as exc:
            if str(exc) != said:
                said = str(exc)
                log.warning("%s: %s; retrying%s", path, exc,
                            f" from resourceVersion {cursor.rv}" if cursor.rv else "")
                if on_trouble is not None:
                    await on_trouble(kind, f"{path}: {exc}")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
