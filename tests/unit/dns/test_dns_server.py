"""The DNS server on loopback: UDP and TCP, truncation, forwarding and SERVFAIL."""

from __future__ import annotations

import asyncio
import errno
import socket
import time
from collections.abc import Iterator
from typing import Any

import dns.flags
import dns.message
import dns.query
import dns.rcode
import pytest

from pykubelet.dns.records import build_zone
from pykubelet.dns.server import Answerer, DNSServer, ServerThread


def _headless(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    svcs = [{"kind": "Service", "metadata": {"name": "big", "namespace": "default"},
             "spec": {"clusterIP": "None"}},
            {"kind": "Service", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"clusterIP": "10.96.0.20"}}]
    slices = [{"kind": "EndpointSlice",
               "metadata": {"name": "big-1", "namespace": "default",
                            "labels": {"kubernetes.io/service-name": "big"}},
               "endpoints": [{"addresses": [f"10.244.1.{i}"]} for i in range(1, n + 1)]}]
    return svcs, slices


@pytest.fixture
def servers() -> Iterator[list[ServerThread]]:
    started: list[ServerThread] = []
    yield started
    for s in started:
        s.stop()


def start(servers: list[ServerThread], server: DNSServer) -> ServerThread:
    t = ServerThread(server).start()
    servers.append(t)
    return t


def test_udp_and_tcp(servers: list[ServerThread]) -> None:
    t = start(servers, DNSServer(Answerer(build_zone(*_headless(3)))))
    q = dns.message.make_query("web.default.svc.cluster.local", "A")
    for send in (dns.query.udp, dns.query.tcp):
        r = send(q, "127.0.0.1", timeout=2, port=t.port)
        assert [rr.to_text() for rr in r.answer] == [
            "web.default.svc.cluster.local. 5 IN A 10.96.0.20"]


def test_udp_truncates_past_512_bytes_without_edns(servers: list[ServerThread]) -> None:
    t = start(servers, DNSServer(Answerer(build_zone(*_headless(60)))))
    q = dns.message.make_query("big.default.svc.cluster.local", "A")
    r = dns.query.udp(q, "127.0.0.1", timeout=2, port=t.port, ignore_trailing=True)
    assert r.flags & dns.flags.TC
    assert len(r.to_wire()) <= 512
    full = dns.query.tcp(q, "127.0.0.1", timeout=2, port=t.port)
    assert not full.flags & dns.flags.TC
    assert len(full.answer[0]) == 60
    # with EDNS's 4096 bytes the whole answer fits
    q4k = dns.message.make_query("big.default.svc.cluster.local", "A", use_edns=0,
                                 payload=4096)
    r4k = dns.query.udp(q4k, "127.0.0.1", timeout=2, port=t.port)
    assert not r4k.flags & dns.flags.TC
    assert len(r4k.answer[0]) == 60


def test_other_names_are_forwarded(servers: list[ServerThread]) -> None:
    upstream_zone = build_zone([{"kind": "Service",
                                 "metadata": {"name": "www", "namespace": "corp"},
                                 "spec": {"clusterIP": "192.0.2.80"}}], [], "example.test")
    up = start(servers, DNSServer(Answerer(upstream_zone)))
    t = start(servers, DNSServer(Answerer(build_zone(*_headless(1))),
                                 [("127.0.0.1", up.port)]))
    q = dns.message.make_query("www.corp.svc.example.test", "A")
    r = dns.query.udp(q, "127.0.0.1", timeout=3, port=t.port)
    assert [rr.to_text() for rr in r.answer] == [
        "www.corp.svc.example.test. 5 IN A 192.0.2.80"]
    r = dns.query.tcp(dns.message.make_query("nope.svc.example.test", "A"), "127.0.0.1",
                      timeout=3, port=t.port)
    assert r.rcode() == dns.rcode.NXDOMAIN


def test_servfail_when_no_upstream_answers(servers: list[ServerThread]) -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))  # takes queries, never answers
    try:
        t = start(servers, DNSServer(Answerer(build_zone([], [])),
                                     [("127.0.0.1", silent.getsockname()[1])], timeout=0.3))
        t0 = time.monotonic()
        r = dns.query.udp(dns.message.make_query("example.org", "A"), "127.0.0.1",
                          timeout=3, port=t.port)
        assert r.rcode() == dns.rcode.SERVFAIL
        assert time.monotonic() - t0 < 1.5
        # none configured: at once
        t2 = start(servers, DNSServer(Answerer(build_zone([], []))))
        t0 = time.monotonic()
        r = dns.query.udp(dns.message.make_query("example.org", "A"), "127.0.0.1",
                          timeout=3, port=t2.port)
        assert r.rcode() == dns.rcode.SERVFAIL
        assert time.monotonic() - t0 < 0.5
    finally:
        silent.close()


def test_garbage_gets_formerr_or_nothing(servers: list[ServerThread]) -> None:
    t = start(servers, DNSServer(Answerer(build_zone([], []))))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xff", ("127.0.0.1", t.port))
        data = s.recv(512)
    assert data[:2] == b"\x12\x34"
    assert data[3] & 0x0F == dns.rcode.FORMERR


def test_a_tcp_query_forwarded_gets_the_whole_answer(servers: list[ServerThread]) -> None:
    """The upstream truncates over UDP; a client that asked us over TCP gets all of it
    (we ask the upstream over TCP too), as CoreDNS's forward plugin keeps the protocol."""
    svcs, slices = _headless(60)
    up = start(servers, DNSServer(Answerer(build_zone(svcs, slices, "example.test"))))
    t = start(servers, DNSServer(Answerer(build_zone([], [])), [("127.0.0.1", up.port)]))
    q = dns.message.make_query("big.default.svc.example.test", "A")
    r = dns.query.tcp(q, "127.0.0.1", timeout=3, port=t.port)
    assert not r.flags & dns.flags.TC
    assert len(r.answer[0]) == 60
    r = dns.query.udp(q, "127.0.0.1", timeout=3, port=t.port, ignore_trailing=True)
    assert r.flags & dns.flags.TC  # over UDP the client is told to ask over TCP


def test_a_start_whose_bind_fails_leaves_no_thread_behind() -> None:
    """The control plane retries its cluster DNS every 10 s while another process holds
    the address (issue 23 item 3): each failed start must end its event loop's thread, or
    a control plane that never gets the port gathers one more thread every retry."""
    held = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    held.bind(("127.0.0.1", 0))
    try:
        t = ServerThread(DNSServer(Answerer(build_zone([], []))), "127.0.0.1",
                         held.getsockname()[1])
        with pytest.raises(OSError):
            t.start()
        assert not t._thread.is_alive()
        assert t.loop.is_closed()
        t.stop()  # a stop after a failed start is harmless
    finally:
        held.close()


def test_port_zero_picks_again_when_tcp_holds_the_number_udp_chose(
        servers: list[ServerThread], monkeypatch: pytest.MonkeyPatch) -> None:
    """UDP picks the port and TCP must bind the same number; another process may hold it
    for TCP (seen in the suite on two workers): the server picks again instead of failing.
    A port the caller named is not changed behind its back."""
    real = asyncio.start_server
    refused: list[int] = []

    async def busy_once(*args: Any, **kwargs: Any) -> asyncio.Server:
        if not refused:
            refused.append(args[2])
            raise OSError(errno.EADDRINUSE, "address already in use")
        return await real(*args, **kwargs)

    monkeypatch.setattr(asyncio, "start_server", busy_once)
    t = start(servers, DNSServer(Answerer(build_zone(*_headless(1)))))
    assert refused
    assert t.port != refused[0]
    r = dns.query.tcp(dns.message.make_query("web.default.svc.cluster.local", "A"),
                      "127.0.0.1", timeout=2, port=t.port)
    assert [rr.to_text() for rr in r.answer] == [
        "web.default.svc.cluster.local. 5 IN A 10.96.0.20"]
    refused.clear()
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    named = probe.getsockname()[1]
    probe.close()
    with pytest.raises(OSError):
        ServerThread(DNSServer(Answerer(build_zone(*_headless(1)))), port=named).start()
    assert refused == [named]
