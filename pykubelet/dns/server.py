"""The cluster DNS server: answers the cluster zone from a ``records.Zone``, forwards the
rest to upstream resolvers, over UDP and TCP.

Why dnspython: it is the maintained, typed DNS library of the Python world (wire format,
EDNS, truncation, names compared case-insensitively); we use only its message codec, and
keep the hot path cheap ourselves: an answer of the cluster zone is cached as wire bytes
keyed by the query's bytes after its ID, so a repeated question (the common case: every
pod asks the same few names) costs one dict lookup and no parsing. The cache is dropped
whenever the zone changes.

As CoreDNS: the cluster zone is authoritative (AA), an unknown name in it is NXDOMAIN and
a name without the asked type NOERROR/no data, both with the zone's SOA in authority;
pod names ``a-b-c-d.<ns>.pod.<zone>`` answer their address ("pods insecure"); reverse
names of cluster IPs and endpoints answer PTR, other reverse names are forwarded. A UDP
answer larger than the client can take (512 bytes without EDNS, else its payload size)
is truncated with TC set, so the client asks again over TCP. Names outside the zone go to
the upstreams in order (over TCP when the client asked over TCP), each given ``timeout``
seconds (1 by default); none answering gives SERVFAIL after those, none configured at
once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import functools
import ipaddress
import json
import logging
import socket
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from pykubelet.dns.records import Record, Zone, address_type, build_zone

log = logging.getLogger(__name__)

DEFAULT_TTL = 5
UDP_NO_EDNS = 512
CACHE_MAX = 50_000
FORWARD_TIMEOUT = 1.0
# port 0: UDP picks the number and TCP must take the same one, which another process may
# hold for TCP; a few picks make that vanishingly rare
PORT_ZERO_ATTEMPTS = 5


@dataclass(frozen=True)
class _View:
    """One zone with its SOA and its answers' cache, swapped as one reference so an
    answer built from an old zone never lands in a new zone's cache."""

    zone: Zone
    soa: dns.rrset.RRset
    cache: dict[bytes, bytes] = field(default_factory=dict)


class Answerer:
    """Builds answers for one zone; the zone may be swapped from another thread."""

    def __init__(self, zone: Zone, ttl: int = DEFAULT_TTL) -> None:
        self.ttl = ttl
        self.set_zone(zone)

    @property
    def zone(self) -> Zone:
        return self._view.zone

    def set_zone(self, zone: Zone) -> None:
        soa = dns.rrset.from_text(
            dns.name.from_text(zone.origin), self.ttl, "IN", "SOA",
            f"ns.dns.{zone.origin} hostmaster.{zone.origin} 1 7200 1800 86400 {self.ttl}")
        self._view = _View(zone, soa)

    @staticmethod
    def _pod_address(zone: Zone, qname: str) -> str | None:
        """``a-b-c-d.<ns>.pod.<zone>`` → a.b.c.d (CoreDNS "pods insecure")."""
        labels = qname[: -len(zone.origin)].rstrip(".").split(".")
        if len(labels) != 3 or labels[2] != "pod":
            return None
        text = labels[0].replace("-", ".") if labels[0].count("-") == 3 \
            else labels[0].replace("-", ":")
        try:
            return str(ipaddress.ip_address(text))
        except ValueError:
            return None

    @staticmethod
    def _is_local(zone: Zone, qname: str) -> bool:
        """Whether ``qname`` (lower case, absolute) is answered here, not forwarded."""
        return (qname == zone.origin or qname.endswith("." + zone.origin)
                or (qname.endswith(".arpa.") and qname in zone.records))

    def answer(self, query: dns.message.Message, view: _View | None = None
               ) -> dns.message.Message:
        """The response to a query of a local name."""
        view = view or self._view
        zone = view.zone
        resp = dns.message.make_response(query)
        resp.flags |= dns.flags.AA
        q = query.question[0]
        qname = q.name.to_text().lower()
        qtype = dns.rdatatype.to_text(q.rdtype)
        records = zone.records.get(qname, [])
        if not records and qname.endswith("." + zone.origin):
            ip = self._pod_address(zone, qname)
            if ip is not None:
                records = [Record(address_type(ip), ip)]
        if qname == zone.origin and qtype == "SOA":
            resp.answer.append(view.soa)
            return resp
        hits = [r for r in records if r.rdtype == qtype or qtype == "ANY"]
        if not hits:
            hits = [r for r in records if r.rdtype == "CNAME"]
        if hits:
            by_type: dict[str, list[str]] = {}
            for r in hits:
                by_type.setdefault(r.rdtype, []).append(r.rdata)
            for rdtype, datas in by_type.items():
                resp.answer.append(dns.rrset.from_text_list(q.name, self.ttl, "IN", rdtype,
                                                            datas))
            return resp
        if not records and qname not in zone.names and qname != zone.origin:
            resp.set_rcode(dns.rcode.NXDOMAIN)
        resp.authority.append(view.soa)
        return resp

    def respond(self, wire: bytes, max_size: int) -> bytes | None:
        """The reply to a local query (cached), or None when it is to be forwarded.
        ``max_size`` 0: no limit (TCP)."""
        view = self._view
        key = wire[2:] + (b"T" if max_size == 0 else b"U")
        hit = view.cache.get(key)
        if hit is not None:
            return wire[:2] + hit
        try:
            query = dns.message.from_wire(wire)
        except dns.exception.DNSException:
            return formerr(wire)
        if len(query.question) != 1 or query.opcode() != 0:
            resp = dns.message.make_response(query)
            resp.set_rcode(dns.rcode.NOTIMP if query.opcode() != 0 else dns.rcode.FORMERR)
            return resp.to_wire()
        qname = query.question[0].name.to_text().lower()
        if not self._is_local(view.zone, qname):
            return None
        resp = self.answer(query, view)
        limit = 0
        if max_size:
            limit = max(UDP_NO_EDNS, query.payload) if query.edns >= 0 else UDP_NO_EDNS
            limit = min(limit, max_size)
        out = resp.to_wire(max_size=limit or 65535, prefer_truncation=True)
        if len(view.cache) >= CACHE_MAX:
            view.cache.clear()
        view.cache[key] = out[2:]
        return out


def formerr(wire: bytes) -> bytes | None:
    """A FORMERR header echoing the ID, for a query dnspython cannot read."""
    if len(wire) < 12:
        return None
    flags = 0x8000 | (wire[2] & 0x79) << 8 | dns.rcode.FORMERR  # QR, opcode, RD kept
    return wire[:2] + struct.pack("!HHHHH", flags, 0, 0, 0, 0)


def servfail(wire: bytes) -> bytes | None:
    try:
        query = dns.message.from_wire(wire)
    except dns.exception.DNSException:
        return formerr(wire)
    resp = dns.message.make_response(query)
    resp.set_rcode(dns.rcode.SERVFAIL)
    return resp.to_wire()


class _Forward(asyncio.DatagramProtocol):
    def __init__(self, done: asyncio.Future[bytes], qid: bytes) -> None:
        self.done, self.qid = done, qid

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if data[:2] == self.qid and not self.done.done():
            self.done.set_result(data)


async def forward_tcp(wire: bytes, host: str, port: int, timeout: float) -> bytes:
    """One query over TCP (length-prefixed)."""
    async def ask() -> bytes:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(struct.pack("!H", len(wire)) + wire)
            await writer.drain()
            size = struct.unpack("!H", await reader.readexactly(2))[0]
            return await reader.readexactly(size)
        finally:
            writer.close()
    return await asyncio.wait_for(ask(), timeout)


async def forward(wire: bytes, upstreams: list[tuple[str, int]], timeout: float,
                  tcp: bool = False) -> bytes | None:
    """The first upstream's reply to ``wire``, each tried for ``timeout`` s, in order;
    with ``tcp`` (the client asked over TCP) over TCP, as CoreDNS's forward keeps the
    client's protocol, so a large answer arrives whole."""
    loop = asyncio.get_running_loop()
    for host, port in upstreams:
        if tcp:
            try:
                return await forward_tcp(wire, host, port, timeout)
            except (TimeoutError, OSError, asyncio.IncompleteReadError):
                continue
        done: asyncio.Future[bytes] = loop.create_future()
        try:
            transport, _ = await loop.create_datagram_endpoint(
                functools.partial(_Forward, done, wire[:2]), remote_addr=(host, port))
        except OSError:
            continue
        try:
            transport.sendto(wire)
            return await asyncio.wait_for(done, timeout)
        except (TimeoutError, OSError):
            continue
        finally:
            transport.close()
    return None


class DNSServer:
    """UDP and TCP on one address, answering from an ``Answerer`` and forwarding."""

    def __init__(self, answerer: Answerer, upstreams: Iterable[tuple[str, int]] = (),
                 timeout: float = FORWARD_TIMEOUT) -> None:
        self.answerer = answerer
        self.upstreams = list(upstreams)
        self.timeout = timeout

    async def reply(self, wire: bytes, max_size: int) -> bytes | None:
        out = self.answerer.respond(wire, max_size)
        if out is not None:
            return out
        if self.upstreams:
            got = await forward(wire, self.upstreams, self.timeout, tcp=max_size == 0)
            if got is not None:
                return got
        return servfail(wire)

    async def serve(self, host: str, port: int) -> tuple[UDPReceiver, asyncio.Server]:
        """Bind UDP then TCP on the same port (``port`` 0: UDP's choice, tried again when
        another process holds that number for TCP)."""
        for _ in range(PORT_ZERO_ATTEMPTS - 1 if port == 0 else 0):
            try:
                return await self._serve(host, port)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
        return await self._serve(host, port)

    async def _serve(self, host: str, port: int) -> tuple[UDPReceiver, asyncio.Server]:
        loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            raise
        udp = UDPReceiver(self, sock, loop)
        server = self

        async def tcp_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    head = await reader.readexactly(2)
                    wire = await reader.readexactly(struct.unpack("!H", head)[0])
                    out = await server.reply(wire, 0)
                    if out is None:
                        break
                    writer.write(struct.pack("!H", len(out)) + out)
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        try:
            tcp = await asyncio.start_server(tcp_client, host, udp.port)
        except OSError:
            sock.close()
            raise
        udp.start()
        return udp, tcp


class UDPReceiver:
    """UDP served by a thread of its own with blocking calls: a cached answer costs a
    recvfrom, a dict lookup and a sendto, without an event loop's per-datagram work
    (about 3x the rate of asyncio's datagram transport here, bench/dns_bench.py).
    Queries to forward are handed to the event loop, which waits for the upstreams."""

    def __init__(self, server: DNSServer, sock: socket.socket,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.server, self.sock, self.loop = server, sock, loop
        self.port: int = sock.getsockname()[1]
        self._stop = threading.Event()
        self._pending: set[asyncio.Task[None]] = set()
        self._thread = threading.Thread(target=self._run, name="dns-udp", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.sock.close()

    def _run(self) -> None:
        sock, respond = self.sock, self.server.answerer.respond
        sock.settimeout(0.25)  # to see close()
        while not self._stop.is_set():
            try:
                data, addr = sock.recvfrom(65535)
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                continue
            try:
                out = respond(data, 65535)
            except Exception:  # one odd query must not end the server
                log.exception("cluster DNS: answering a query failed")
                continue
            if out is None:
                self.loop.call_soon_threadsafe(self._forward, data, addr)
                continue
            with contextlib.suppress(OSError):
                sock.sendto(out, addr)

    def _forward(self, data: bytes, addr: Any) -> None:
        task = self.loop.create_task(self._slow(data, addr))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _slow(self, data: bytes, addr: Any) -> None:
        out = await self.server.reply(data, 65535)
        if out is not None:
            with contextlib.suppress(OSError):
                self.sock.sendto(out, addr)


class ServerThread:
    """A DNSServer on its own event loop thread: start() returns once it listens."""

    def __init__(self, server: DNSServer, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server, self.host, self.port = server, host, port
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="dns",
                                        daemon=True)
        self._handles: tuple[UDPReceiver, asyncio.Server] | None = None

    def start(self) -> ServerThread:
        """Listens, or raises with the loop's thread ended: a caller that retries (the
        control plane's cluster DNS, every 10 s while another holds its address) gathers
        no thread per attempt."""
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self.server.serve(self.host, self.port),
                                               self.loop)
        try:
            self._handles = fut.result(10)
        except BaseException:
            fut.cancel()
            self.stop()
            raise
        self.port = self._handles[0].port
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._handles is not None:
                udp, tcp = self._handles
                udp.close()
                tcp.close()
                with contextlib.suppress(Exception):
                    await tcp.wait_closed()
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        if not self.loop.is_closed():
            self.loop.close()


def resolv_conf_upstreams(path: str = "/etc/resolv.conf",
                          exclude: Iterable[str] = ()) -> list[tuple[str, int]]:
    """The node's nameservers (port 53), less ``exclude`` (our own addresses)."""
    from pykubelet.kubelet.network.dns import parse_resolv_conf

    try:
        servers, _, _ = parse_resolv_conf(Path(path).read_text())
    except OSError:
        return []
    skip = set(exclude)
    return [(s, 53) for s in servers if s not in skip]


def _upstream(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "53")
    return host, int(port or 53)


def main(argv: list[str] | None = None) -> None:
    """Standalone, for tests and benches: the zone from a JSON/YAML List of Services and
    EndpointSlices."""
    import yaml

    p = argparse.ArgumentParser(description="Cluster DNS over a file of objects.")
    p.add_argument("--listen", default="127.0.0.1:5353")
    p.add_argument("--objects", help="a v1 List of Services and EndpointSlices")
    p.add_argument("--domain", default="cluster.local")
    p.add_argument("--upstream", action="append", default=None,
                   help="HOST[:PORT]; default: the nameservers of /etc/resolv.conf")
    p.add_argument("--no-upstream", action="store_true", help="answer the zone only")
    args = p.parse_args(argv)
    items: list[dict[str, Any]] = []
    if args.objects:
        doc = yaml.safe_load(Path(args.objects).read_text()) or {}
        items = doc.get("items", []) if isinstance(doc, dict) else []
    zone = build_zone([o for o in items if o.get("kind") == "Service"],
                      [o for o in items if o.get("kind") == "EndpointSlice"], args.domain)
    host, _, port = args.listen.rpartition(":")
    ups = [_upstream(u) for u in args.upstream] if args.upstream is not None \
        else resolv_conf_upstreams(exclude=[host])
    if args.no_upstream:
        ups = []
    srv = DNSServer(Answerer(zone), ups)

    async def run() -> None:
        await srv.serve(host, int(port))
        print(json.dumps({"listen": f"{host}:{port}", "names": len(zone.records)}),
              flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
