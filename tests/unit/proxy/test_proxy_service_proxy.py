"""The agent's service proxy over a fake API client: it lists and watches Services and
EndpointSlices (informers, no polling), syncs once both lists are in, follows watch events
through the rate-limited runner, and a clean stop removes its rules."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from proxy_builders import FakeIptables, endpoint, endpoint_slice, port, service

from pykubelet.config import ServiceProxyConfig
from pykubelet.proxy.service_proxy import ENDPOINT_SLICES, SERVICES, ServiceProxy


class FakeClient:
    """list() from ``objects``; watch() yields what a test puts on the resource's queue."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects
        self.events: dict[str, queue.Queue[dict[str, Any] | None]] = {
            k: queue.Queue() for k in objects}
        self.closed = False
        self.lists: list[str] = []

    def list(self, res: Any, namespace: str = "", **params: Any) -> Any:
        self.lists.append(res.plural)
        return {"items": list(self.objects[res.plural]), "metadata": {"resourceVersion": "1"}}

    def watch(self, res: Any, namespace: str = "", **kw: Any) -> Iterator[dict[str, Any]]:
        q = self.events[res.plural]
        while not self.closed:
            try:
                ev = q.get(timeout=0.05)
            except queue.Empty:
                continue
            if ev is None:
                return
            yield ev

    def close(self) -> None:
        self.closed = True


def wait_for(cond: Any, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_informers_drive_the_syncs_and_a_clean_stop_removes_the_rules() -> None:
    web = service("default", "web", "10.96.0.20", [port("", 80)])
    client = FakeClient({SERVICES.plural: [web], ENDPOINT_SLICES.plural: []})
    ipt = FakeIptables()
    reg = CollectorRegistry()
    sp = ServiceProxy(client, "node1", ServiceProxyConfig(enabled=True, minSyncPeriod="10ms"),  # type: ignore[arg-type]
                      reg, ipt)  # type: ignore[arg-type]
    sp.start()
    try:
        assert wait_for(lambda: ipt.restores)
        assert '"default/web has no endpoints"' in ipt.restores[-1]
        assert sorted(set(client.lists)) == ["endpointslices", "services"]
        client.events["endpointslices"].put({"type": "ADDED", "object": endpoint_slice(
            "default", "web", [endpoint("10.244.1.5")], [port("", 8080)])})
        assert wait_for(lambda: "--to-destination 10.244.1.5:8080" in ipt.restores[-1])
        client.events["services"].put({"type": "DELETED", "object": web})
        assert wait_for(lambda: "default/web" not in ipt.restores[-1])
        assert reg.get_sample_value("kubeproxy_sync_proxy_rules_duration_seconds_count") >= 3  # type: ignore[operator]
    finally:
        client.close()
        ipt.saved = {"nat": "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n", "filter": ""}
        sp.stop()
    assert "-X KUBE-SERVICES" in ipt.restores[-1]
    assert len(ipt.commands) == 9  # every jump rule deleted


def test_the_mode_picks_the_proxier() -> None:
    """serviceProxy.mode as kube-proxy's --proxy-mode: iptables (the default) or nftables."""
    from fake_nft import FakeNft

    from pykubelet.proxy.nft_proxier import NftProxier
    from pykubelet.proxy.proxier import Proxier

    client = FakeClient({"services": [], "endpointslices": []})
    sp = ServiceProxy(client, "node1", ServiceProxyConfig(enabled=True),  # type: ignore[arg-type]
                      iptables=FakeIptables())  # type: ignore[arg-type]
    assert isinstance(sp.proxier, Proxier)
    nft = FakeNft()
    sp = ServiceProxy(client, "node1",  # type: ignore[arg-type]
                      ServiceProxyConfig(enabled=True, mode="nftables"), nft=nft)  # type: ignore[arg-type]
    assert isinstance(sp.proxier, NftProxier)
    assert sp.proxier.nft is nft


def test_start_removes_the_other_modes_rules() -> None:
    """As kube-proxy at start: the nftables mode cleans up iptables' KUBE- chains and the
    iptables mode the ip kube-proxy table (here on fakes; a ServiceProxy given its own
    tools leaves the host's alone)."""
    from fake_nft import FakeNft

    from pykubelet.proxy.nft_proxier import NftProxier
    from pykubelet.proxy.proxier import Proxier
    from pykubelet.proxy.service_proxy import other_mode

    ipt, nft = FakeIptables(), FakeNft()
    nft.run("add table ip kube-proxy\nadd chain ip kube-proxy services\n")
    left = other_mode("iptables", nft=nft)  # type: ignore[arg-type]
    assert isinstance(left, NftProxier)
    assert isinstance(other_mode("nftables", iptables=ipt), Proxier)  # type: ignore[arg-type]
    client = FakeClient({"services": [], "endpointslices": []})
    sp = ServiceProxy(client, "node1", ServiceProxyConfig(enabled=True),  # type: ignore[arg-type]
                      iptables=ipt)  # type: ignore[arg-type]
    assert sp._other is None
    sp._other = left
    sp.start()
    try:
        assert nft.dump() == []  # the leftover table is gone
    finally:
        sp.stop(clean=False)
        client.close()
