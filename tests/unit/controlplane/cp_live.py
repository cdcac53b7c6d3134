"""Requests to the module's live control plane (conftest's ``cp_thread``: SQLite, loopback,
no scheduler or controllers, its event loop in a thread) for the request-shape tests (the
``api`` fixture): ``api.call`` sends one request from that loop and says how long it took,
so a test can tell a request that blocked the loop."""

from __future__ import annotations

import asyncio
import io
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from pykubelet.controlplane.server import ControlPlaneThread


@dataclass
class Reply:
    status: int
    body: bytes
    seconds: float
    headers: dict[str, str]

    def json(self) -> Any:
        return orjson.loads(self.body)


class LiveAPI:
    def __init__(self, thread: ControlPlaneThread) -> None:
        self.loop = thread.loop
        self.cp = thread.cp
        self.session: aiohttp.ClientSession = self._run(self._session())
        assert self.cp.tokens is not None
        self.admin = self.cp.tokens.admin

    async def _session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession()

    def _run(self, coro: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def node_token(self, node: str) -> str:
        """The node's current token (a new one the first time, as a join gives)."""
        assert self.cp.tokens is not None
        return self.cp.tokens.nodes.get(node) or self.cp.tokens.new_node_token(node)

    def call(self, method: str, path: str, body: Any = None, *, data: bytes | None = None,
             content_type: str = "application/json", token: str | None = None,
             headers: dict[str, str] | None = None, timeout: float = 30) -> Reply:
        """One request; ``body`` is sent as JSON, ``data`` as it is."""
        if body is not None:
            data = orjson.dumps(body)
        hdrs = {"Authorization": f"Bearer {token or self.admin}"}
        if data is not None:
            hdrs["Content-Type"] = content_type
        hdrs.update(headers or {})

        payload: Any = data
        if data is not None and len(data) > 1 << 20:  # aiohttp wants big bodies as streams
            payload = io.BytesIO(data)

        async def go() -> Reply:
            t0 = time.monotonic()
            async with self.session.request(method, self.cp.local_url + path, data=payload,
                                            headers=hdrs, ssl=False) as resp:
                raw = await resp.read()
                return Reply(resp.status, raw, time.monotonic() - t0, dict(resp.headers))

        reply: Reply = self._run(go(), timeout)
        return reply

    def close(self) -> None:
        """Close the session (the control plane is the ``cp_thread`` fixture's to stop)."""
        self._run(self.session.close())
