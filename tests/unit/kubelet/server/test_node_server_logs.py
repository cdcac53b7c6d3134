"""The node server's container logs: ``--since``/``--since-time`` filter by the lines' own
times (conmon writes them with a numeric offset, ``+00:00``), and a handler that fails
answers 500 with its message, never an empty 200."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from pykubelet.controlplane.pki import PKI
from pykubelet.kubelet.server.node_server import LogOptions, LogTarget, NodeServer, read_log


def stamp(t: dt.datetime, z: bool = False) -> str:
    """A CRI log time as conmon (numeric offset) or containerd (Z) writes it."""
    text = t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123"  # nanoseconds
    return text + ("Z" if z else t.strftime("%z")[:3] + ":" + t.strftime("%z")[3:])


def write_log(path: Path, now: dt.datetime, z: bool = False) -> None:
    old = now - dt.timedelta(minutes=5)
    path.write_text(f"{stamp(old, z)} stdout F old line\n"
                    f"{stamp(now, z)} stdout F new line\n")


@pytest.mark.parametrize("z", [False, True])
@pytest.mark.parametrize("offset_hours", [0, 2])
def test_since_keeps_the_lines_time_zone(tmp_path: Path, z: bool, offset_hours: int) -> None:
    tz = dt.UTC if z else dt.timezone(dt.timedelta(hours=offset_hours))
    now = dt.datetime.now(tz)
    log = tmp_path / "0.log"
    write_log(log, now, z)
    since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=10)
    lines, _ = read_log(str(log), LogOptions(since=since))
    assert lines == [b"new line\n"]


def node_server(tmp_path: Path, lookup: Any) -> NodeServer:
    pki = PKI(tmp_path / "pki")
    paths = pki.issue("kubelet", "system:node:n1", dns=["n1"], ips=["127.0.0.1"])
    server = NodeServer("127.0.0.1", 0, paths.cert, paths.key, pki.ca_pem, lookup)

    @web.middleware
    async def anyone(request: web.Request, handler: Any) -> web.StreamResponse:
        resp: web.StreamResponse = await handler(request)
        return resp

    server._auth = anyone  # type: ignore[method-assign]  # no client certificate here
    return server


def get(server: NodeServer, path: str) -> tuple[int, str]:
    async def main() -> tuple[int, str]:
        async with TestClient(TestServer(server.app())) as client:
            resp = await client.get(path)
            return resp.status, await resp.text()

    return asyncio.run(main())


def test_logs_since_seconds_and_since_time_through_the_server(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    write_log(log, dt.datetime.now(dt.UTC).astimezone())  # local offset, as conmon
    server = node_server(tmp_path, lambda ns, pod, c, prev: LogTarget(str(log), lambda: False))
    assert get(server, "/containerLogs/default/web/app?sinceSeconds=10") == (200, "new line\n")
    since = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert get(server, f"/containerLogs/default/web/app?sinceTime={since}") == (
        200, "new line\n")
    assert get(server, "/containerLogs/default/web/app") == (200, "old line\nnew line\n")


def test_a_handler_that_fails_answers_500_with_its_message(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken(ns: str, pod: str, c: str, prev: bool) -> LogTarget:
        raise TypeError("can't compare offset-naive and offset-aware datetimes")

    server = node_server(tmp_path, broken)
    code, text = get(server, "/containerLogs/default/web/app")
    assert code == 500
    assert "can't compare offset-naive and offset-aware datetimes" in text
    assert any("can't compare" in r.getMessage() or (r.exc_info and "can't compare" in str(
        r.exc_info[1])) for r in caplog.records)


def test_metrics_resource_is_served_to_the_control_plane(tmp_path: Path) -> None:
    server = node_server(tmp_path, lambda *a: LogTarget("", lambda: False))
    assert get(server, "/metrics/resource")[0] == 404  # no source given
    server.resource_metrics = lambda: b"resource_scrape_error 0\n"
    assert get(server, "/metrics/resource") == (200, "resource_scrape_error 0\n")
