"""The zone kept from informers: a listed Service answers once synced, a watched add,
update and delete reach the answers, without an API call per query."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

import dns.message
import dns.rcode

from pykubelet.client.rest import Resource
from pykubelet.dns.records import build_zone
from pykubelet.dns.server import Answerer
from pykubelet.dns.watch import ZoneKeeper


class FakeAPI:
    """list/watch of services and endpointslices from memory; events pushed by the test."""

    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items
        self.events: dict[str, queue.Queue[dict[str, Any] | None]] = {
            k: queue.Queue() for k in items}
        self.closed = False
        self.lists = 0

    def list(self, res: Resource, namespace: str = "", **params: Any) -> Any:
        self.lists += 1
        return {"items": list(self.items[res.plural]), "metadata": {"resourceVersion": "1"}}

    def watch(self, res: Resource, namespace: str = "", **kw: Any) -> Iterator[dict[str, Any]]:
        while not self.closed:
            try:
                ev = self.events[res.plural].get(timeout=0.1)
            except queue.Empty:
                continue
            if ev is None:
                return
            yield ev


def service(name: str, ip: str, rv: str = "2") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": rv},
            "spec": {"clusterIP": ip}}


def rcode_and_answer(a: Answerer, name: str) -> tuple[str, list[str]]:
    wire = a.respond(dns.message.make_query(name, "A").to_wire(), 512)
    assert wire is not None
    m = dns.message.from_wire(wire)
    return dns.rcode.to_text(m.rcode()), [r.to_text() for rr in m.answer for r in rr]


def until(pred: Any, timeout: float = 5) -> Any:
    deadline = time.monotonic() + timeout
    while not (v := pred()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
    return v


def test_zone_follows_the_watches() -> None:
    api = FakeAPI({"services": [service("web", "10.96.0.20", "1")], "endpointslices": []})
    answerer = Answerer(build_zone([], []))
    keeper = ZoneKeeper(api, answerer, period=0.01)
    keeper.start()
    try:
        assert keeper.wait_synced(5)
        name = "web.default.svc.cluster.local"
        assert rcode_and_answer(answerer, name) == ("NOERROR", ["10.96.0.20"])
        lists = api.lists
        for _ in range(100):  # queries never reach the API
            rcode_and_answer(answerer, name)
        assert api.lists == lists
        api.events["services"].put({"type": "ADDED", "object": service("db", "10.96.0.30")})
        until(lambda: rcode_and_answer(answerer, "db.default.svc.cluster.local")[1])
        api.events["services"].put({"type": "MODIFIED",
                                    "object": service("web", "10.96.0.21", "3")})
        until(lambda: rcode_and_answer(answerer, name)[1] == ["10.96.0.21"])
        api.events["services"].put({"type": "DELETED",
                                    "object": service("web", "10.96.0.21", "4")})
        until(lambda: rcode_and_answer(answerer, name)[0] == "NXDOMAIN")
        api.events["endpointslices"].put({"type": "ADDED", "object": {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "h-1", "namespace": "default", "resourceVersion": "5",
                         "labels": {"kubernetes.io/service-name": "h"}},
            "endpoints": [{"addresses": ["10.244.1.9"], "hostname": "h-0"}]}})
        api.events["services"].put({"type": "ADDED", "object": {
            "kind": "Service", "metadata": {"name": "h", "namespace": "default",
                                            "resourceVersion": "6"},
            "spec": {"clusterIP": "None"}}})
        until(lambda: rcode_and_answer(answerer, "h-0.h.default.svc.cluster.local")[1]
              == ["10.244.1.9"])
    finally:
        api.closed = True
        keeper.stop()


def test_cluster_dns_component_serves_the_watched_zone() -> None:
    import dns.query

    from pykubelet.dns.component import ClusterDNS

    api = FakeAPI({"services": [service("kube-dns", "10.96.0.10", "1")],
                   "endpointslices": []})
    c = ClusterDNS(api, "127.0.0.1", 0, upstreams=[]).start(5)
    try:
        q = dns.message.make_query("kube-dns.default.svc.cluster.local", "A")
        r = dns.query.udp(q, "127.0.0.1", timeout=2, port=c.port)
        assert [x.to_text() for rr in r.answer for x in rr] == ["10.96.0.10"]
        r = dns.query.udp(dns.message.make_query("example.org", "A"), "127.0.0.1",
                          timeout=2, port=c.port)
        assert r.rcode() == dns.rcode.SERVFAIL  # no upstream given
    finally:
        api.closed = True
        c.stop()


class DownAPI(FakeAPI):
    """An API server that is gone: every list fails, so the informers never sync."""

    def list(self, res: Resource, namespace: str = "", **params: Any) -> Any:
        from pykubelet.client.rest import ClientError

        raise ClientError("connection refused")


def test_a_stop_ends_a_wait_for_the_first_zone_at_once() -> None:
    """A control plane stopped while its DNS waits for the first list: the start must not
    wait out its whole sync timeout (the process outlived SIGTERM until SIGKILLed)."""
    import threading

    keeper = ZoneKeeper(DownAPI({"services": [], "endpointslices": []}),
                        Answerer(build_zone([], [])), period=0.01)
    keeper.start()
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(keeper.wait_synced(30)))
    waiter.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    keeper.interrupt()
    waiter.join(5)
    took = time.monotonic() - t0
    keeper.stop()
    assert got == [False]
    assert took < 1.0, took
