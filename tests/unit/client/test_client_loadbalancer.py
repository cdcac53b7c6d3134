"""The agent's API server load balancer over real loopback sockets: small aiohttp API
servers on TLS (certificates from our PKI, SAN 127.0.0.1) behind it, and clients that verify
the server's certificate through it, so TLS is shown to stay end to end."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from pykubelet.client.loadbalancer import LoadBalancer, LoadBalancerError, parse_server
from pykubelet.controlplane.pki import PKI

FAST = {"health_interval": 0.2, "dial_timeout": 0.5}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Backend:
    """A tiny API server: /readyz (200 or 500 as set), /who (its name), /watch (a line
    every 50 ms until the connection goes)."""

    def __init__(self, name: str, pki: PKI, port: int = 0) -> None:
        self.name = name
        self.port = port or free_port()
        self.ready = True
        paths = pki.issue("apiserver", "kube-apiserver", ips=["127.0.0.1"])
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(paths.cert, paths.key)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.runner: web.AppRunner | None = None
        self.thread: threading.Thread | None = None

    async def _readyz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok" if self.ready else "[-]etcd failed",
                            status=200 if self.ready else 500)

    async def _who(self, request: web.Request) -> web.Response:
        return web.Response(text=self.name)

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        while True:
            await resp.write(f"{self.name}\n".encode())
            await asyncio.sleep(0.05)

    def start(self) -> None:
        started = threading.Event()

        async def up() -> None:
            app = web.Application()
            app.router.add_get("/readyz", self._readyz)
            app.router.add_get("/who", self._who)
            app.router.add_get("/watch", self._watch)
            self.runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
            await self.runner.setup()
            await web.TCPSite(self.runner, "127.0.0.1", self.port, ssl_context=self.ctx,
                              reuse_address=True).start()

        def run() -> None:
            self.loop = asyncio.new_event_loop()
            self.loop.run_until_complete(up())
            started.set()
            self.loop.run_forever()
            self.loop.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert started.wait(10)

    def stop(self) -> None:
        """Close the listener and every connection: dials are refused afterwards."""
        if self.loop is None or self.thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop = self.thread = None

    async def _close(self) -> None:
        """Stop accepting, let the connections already accepted become transports, close
        the site and aiohttp's connections, then abort what is left (connections still in
        their TLS handshake, which aiohttp never saw). In that order because CPython
        3.11's asyncio leaks a connection accepted just before its server closes: the
        transport made for it after the close fails its Server._attach assertion, and
        nothing closes the socket (asyncio's private parts, for want of public ones)."""
        runner = self.runner
        assert runner is not None
        loop = asyncio.get_running_loop()
        for site in runner.sites:
            server = site._server  # type: ignore[attr-defined]
            for sock in getattr(server, "_sockets", None) or []:
                loop._remove_reader(sock.fileno())  # type: ignore[attr-defined]
        await asyncio.sleep(0.05)
        await runner.cleanup()
        for _ in range(50):
            await asyncio.sleep(0.02)  # connection_lost of what was closed runs
            left = [t for t in getattr(loop, "_transports", {}).values()
                    if not t.is_closing()]
            if not left:
                return
            for transport in left:
                transport.abort()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@pytest.fixture
def pki(tmp_path: Path) -> PKI:
    pki = PKI(tmp_path / "ca")
    pki.ensure_ca()
    return pki


@pytest.fixture
def backends(pki: PKI) -> Iterator[list[Backend]]:
    made = [Backend("a", pki), Backend("b", pki), Backend("c", pki)]
    for b in made:
        b.start()
    yield made
    for b in made:
        b.stop()


@pytest.fixture
def balancers() -> Iterator[Callable[..., LoadBalancer]]:
    made: list[LoadBalancer] = []

    def make(servers: list[str], **kw: object) -> LoadBalancer:
        lb = LoadBalancer(servers, **{**FAST, **kw})  # type: ignore[arg-type]
        lb.start()
        made.append(lb)
        return lb

    yield make
    for lb in made:
        lb.stop()


def client_ctx(pki: PKI) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=pki.ca_pem.decode())  # verifies 127.0.0.1


def who(lb: LoadBalancer, pki: PKI) -> str:
    """One request through the balancer on a fresh connection: the server's name."""
    port = int(lb.url.rsplit(":", 1)[1])
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=client_ctx(pki), timeout=5)
    try:
        conn.request("GET", "/who")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


class Watch:
    """A long response through the balancer, read line by line."""

    def __init__(self, lb: LoadBalancer, pki: PKI) -> None:
        port = int(lb.url.rsplit(":", 1)[1])
        self.conn = http.client.HTTPSConnection("127.0.0.1", port, context=client_ctx(pki),
                                                timeout=5)
        self.conn.request("GET", "/watch")
        self.resp = self.conn.getresponse()

    def line(self) -> str:
        return self.resp.readline().decode().strip()

    def ended_within(self, seconds: float) -> bool:
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                if not self.resp.readline():
                    return True
        except (OSError, http.client.HTTPException):
            return True
        return False

    def close(self) -> None:
        self.conn.close()


def wait_for(pred: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_requests_go_to_the_first_server_with_tls_end_to_end(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer]) -> None:
    a, b, _ = backends
    lb = balancers([a.url, b.url])
    assert lb.url.startswith("https://127.0.0.1:")
    assert lb.current == a.url
    assert [who(lb, pki) for _ in range(3)] == ["a", "a", "a"]
    # the balancer terminates nothing: a client that trusts another CA is refused
    other = PKI(pki.dir.parent.parent / "other")
    other.ensure_ca()
    with pytest.raises(ssl.SSLCertVerificationError):
        who(lb, other)


def test_a_failed_dial_falls_through_to_the_next_server_without_a_client_error(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer]) -> None:
    a, b, _ = backends
    lb = balancers([a.url, b.url], health_interval=60.0)  # only dials notice anything
    wait_for(lambda: lb.healthy() == {a.url: True, b.url: True}, what="first check")
    a.stop()
    assert who(lb, pki) == "b"
    assert lb.current == b.url
    assert lb.healthy()[a.url] is False


def test_a_server_never_reachable_is_skipped(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer]) -> None:
    _, b, _ = backends
    dead = f"https://127.0.0.1:{free_port()}"
    lb = balancers([dead, b.url])
    assert who(lb, pki) == "b"
    wait_for(lambda: lb.current == b.url, what="switch to b")


def test_an_unready_server_loses_its_connections_and_new_ones_go_to_the_next(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer]) -> None:
    a, b, _ = backends
    lb = balancers([a.url, b.url])
    watch = Watch(lb, pki)
    try:
        assert watch.line() == "a"
        a.ready = False  # serving, but /readyz says 500 (its store is gone)
        wait_for(lambda: lb.current == b.url, what="switch to b")
        assert watch.ended_within(3.0), "the watch on the unready server was left open"
    finally:
        watch.close()
    assert who(lb, pki) == "b"


def test_new_connections_return_to_the_preferred_server_and_old_ones_stay(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer]) -> None:
    a, b, _ = backends
    lb = balancers([a.url, b.url])
    a.ready = False
    wait_for(lambda: lb.current == b.url, what="switch to b")
    watch = Watch(lb, pki)
    try:
        assert watch.line() == "b"
        a.ready = True
        wait_for(lambda: lb.current == a.url, what="back to a")
        assert who(lb, pki) == "a"
        for _ in range(5):  # the connection to b was left alone
            assert watch.line() == "b"
    finally:
        watch.close()


def test_a_restarted_preferred_server_is_used_again(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer]) -> None:
    a, b, _ = backends
    lb = balancers([a.url, b.url])
    a.stop()
    wait_for(lambda: lb.current == b.url, what="switch to b")
    again = Backend("a2", pki, port=a.port)
    again.start()
    try:
        wait_for(lambda: lb.current == a.url, what="back to a")
        assert who(lb, pki) == "a2"
    finally:
        again.stop()


def test_no_healthy_server_leaves_current_empty_and_refuses_cleanly(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer]) -> None:
    a, b, _ = backends
    lb = balancers([a.url, b.url])
    a.stop()
    b.stop()
    wait_for(lambda: lb.current == "", what="no current server")
    with pytest.raises((OSError, http.client.HTTPException)):
        who(lb, pki)


def test_the_state_file_follows_every_change(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer],
        tmp_path: Path) -> None:
    a, b, _ = backends
    state = tmp_path / "state" / "agent-load-balancer.json"
    lb = balancers([a.url + "/", b.url], state_file=state)
    wait_for(lambda: state.exists(), what="state file")
    assert json.loads(state.read_text()) == {
        "serverURL": a.url, "serverAddresses": [a.url, b.url], "currentServer": a.url,
        "healthy": {a.url: True, b.url: True}}
    a.ready = False
    wait_for(lambda: json.loads(state.read_text())["currentServer"] == b.url,
             what="state shows b")
    assert json.loads(state.read_text())["healthy"] == {a.url: False, b.url: True}
    assert lb.state()["currentServer"] == b.url
    assert not list(state.parent.glob(".*.tmp"))  # written atomically, nothing left over


def test_set_servers_replaces_the_list_and_drops_connections_to_removed_ones(
        backends: list[Backend], pki: PKI, balancers: Callable[..., LoadBalancer],
        tmp_path: Path) -> None:
    a, b, c = backends
    state = tmp_path / "lb.json"
    lb = balancers([a.url, b.url], state_file=state)
    watch = Watch(lb, pki)
    try:
        assert watch.line() == "a"
        with pytest.raises(LoadBalancerError, match="'http://x:1': expected https://HOST:PORT"):
            lb.set_servers([c.url, "http://x:1"])
        assert lb.servers() == [a.url, b.url]  # bad input changed nothing
        lb.set_servers([c.url, b.url])
        assert lb.servers() == [c.url, b.url]
        assert lb.current == c.url
        assert watch.ended_within(3.0), "the connection to the removed server stayed"
    finally:
        watch.close()
    assert who(lb, pki) == "c"
    wait_for(lambda: json.loads(state.read_text())["serverAddresses"] == [c.url, b.url],
             what="state file with the new list")
    assert json.loads(state.read_text())["serverURL"] == c.url


def test_stop_closes_the_listener_and_the_connections(
        backends: list[Backend], pki: PKI) -> None:
    a, _, _ = backends
    lb = LoadBalancer([a.url], **FAST)  # type: ignore[arg-type]
    lb.start()
    port = int(lb.url.rsplit(":", 1)[1])
    watch = Watch(lb, pki)
    try:
        assert watch.line() == "a"
        lb.stop()
        assert watch.ended_within(3.0)
    finally:
        watch.close()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass


def test_serve_runs_in_the_foreground_of_a_loop(backends: list[Backend], pki: PKI) -> None:
    a, _, _ = backends
    lb = LoadBalancer([a.url], **FAST)  # type: ignore[arg-type]

    async def main() -> str:
        task = asyncio.create_task(lb.serve())
        while lb.url.endswith(":0"):  # not listening yet
            await asyncio.sleep(0.01)
        got = await asyncio.to_thread(who, lb, pki)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return got

    assert asyncio.run(main()) == "a"


def test_a_busy_listen_port_is_an_os_error(backends: list[Backend]) -> None:
    a, _, _ = backends
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        lb = LoadBalancer([a.url], f"127.0.0.1:{s.getsockname()[1]}")
        with pytest.raises(OSError):
            lb.start()


@pytest.mark.parametrize("url", ["http://10.0.0.1:6443", "https://10.0.0.1", "10.0.0.1:6443",
                                 "https://:6443", "https://h:notaport", "https://h:6443/api",
                                 "https://h:6443?x=1", "https://h:0", ""])
def test_bad_server_urls_are_refused(url: str) -> None:
    with pytest.raises(LoadBalancerError, match="expected https://HOST:PORT"):
        LoadBalancer([url])


def test_good_server_urls() -> None:
    assert parse_server("https://10.0.0.1:6443") == ("10.0.0.1", 6443)
    assert parse_server("https://[::1]:6443/") == ("::1", 6443)
    assert parse_server("https://cp.example:443") == ("cp.example", 443)
    lb = LoadBalancer(["https://a:1/", "https://b:2", "https://a:1"])
    assert lb.servers() == ["https://a:1", "https://b:2"]  # no duplicates, no slashes
    with pytest.raises(LoadBalancerError, match="at least one"):
        LoadBalancer([])
    with pytest.raises(LoadBalancerError, match="listen '6443': expected ADDR:PORT"):
        LoadBalancer(["https://a:1"], "6443")
