"""The dashboard's reflector over a real connection (an aiohttp server on loopback that
plays the API): a broken watch resumes from the last resourceVersion it saw (an event's or a
bookmark's) without listing again; 410 Gone, as an ERROR event or as the watch's answer,
makes it list again; the page is told when the API cannot be read and when it can again."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from aiohttp import web

from pykubelet.cli.kubectl.dashboard.reflector import reflect

Obj = dict[str, Any]


def pod(name: str, rv: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": rv}}


async def scenario() -> tuple[list[tuple[str, str]], list[Any], list[str]]:
    requests: list[tuple[str, str]] = []  # (list|watch, resourceVersion asked)
    applied: list[Any] = []
    troubles: list[str] = []
    watches = 0
    done, finish = asyncio.Event(), asyncio.Event()

    async def pods(request: web.Request) -> web.StreamResponse:
        nonlocal watches
        if request.query.get("watch") != "1":
            requests.append(("list", ""))
            return web.json_response({"metadata": {"resourceVersion": "10"},
                                      "items": [pod("a", "9")]})
        requests.append(("watch", request.query["resourceVersion"]))
        watches += 1
        if watches == 3:  # the first resumed watch after a failure: the API is down once
            return web.json_response({"message": "unavailable"}, status=503)
        if watches == 5:
            return web.json_response({"code": 410}, status=410)
        resp = web.StreamResponse()
        await resp.prepare(request)
        lines: list[Obj] = []
        if watches == 1:
            lines = [{"type": "ADDED", "object": pod("b", "11")},
                     {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}]
        elif watches == 2:
            lines = [{"type": "MODIFIED", "object": pod("b", "16")}]
        elif watches == 4:
            lines = [{"type": "ERROR", "object": {"kind": "Status", "code": 410}}]
        else:
            done.set()
            await finish.wait()
        for line in lines:
            await resp.write(json.dumps(line).encode() + b"\n")
        # the connection ends here (a lost watch, or the server's end of one)
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/pods", pods)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]

    async def on_list(kind: str, items: list[Obj]) -> None:
        applied.append(("LIST", [i["metadata"]["name"] for i in items]))

    async def on_event(kind: str, type_: str, obj: Obj) -> None:
        applied.append((type_, obj["metadata"]["resourceVersion"]))

    async def on_trouble(kind: str, text: str) -> None:
        troubles.append(text)

    async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as session:
        task = asyncio.create_task(reflect(session, "", "/api/v1/pods", "Pod", on_list,
                                           on_event, on_trouble=on_trouble))
        try:
            await asyncio.wait_for(done.wait(), 20)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            finish.set()
    await runner.cleanup()
    return requests, applied, troubles


def test_a_lost_watch_resumes_from_its_resource_version_and_gone_relists() -> None:
    requests, applied, troubles = asyncio.run(scenario())
    assert requests == [
        ("list", ""), ("watch", "10"),
        ("watch", "15"),  # resumed after the bookmark, no list
        ("watch", "16"),  # resumed after the last event: answered 503
        ("watch", "16"),  # still from there: then an ERROR 410 event
        ("list", ""), ("watch", "10"),  # 410 as the answer
        ("list", ""), ("watch", "10"),
    ]
    assert applied == [("LIST", ["a"]), ("ADDED", "11"), ("MODIFIED", "16"),
                       ("LIST", ["a"]), ("LIST", ["a"])]
    assert len(troubles) == 2
    assert "503" in troubles[0]
    assert troubles[1] == ""
