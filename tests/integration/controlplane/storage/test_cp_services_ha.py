"""Services on two control planes active-active over one etcd (issue 20, item 2 and 3):
Services created at once through both API servers never share a ClusterIP or node port,
and the ``kubernetes`` Service's endpoints list both API servers, then only the one left
after the other stops."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for
from test_cp_semantics import Raw

from pykubelet.controlplane.storage.etcdserver import EtcdServer

ADDRESSES = ("127.0.0.1", "127.0.0.2")  # each API server's advertised address


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[ControlPlaneProcess, ControlPlaneProcess]]:
    etcd = EtcdServer(tmp_path / "etcd")
    etcd.start()
    cps = [ControlPlaneProcess(tmp_path / f"cp{i}", etcd_url=etcd.client_url,
                               extra_args=["--advertise-address", ADDRESSES[i]])
           for i in range(2)]
    try:
        for cp in cps:
            cp.start()
        yield cps[0], cps[1]
    finally:
        for cp in cps:
            cp.stop()
        etcd.remove()


def service(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": "NodePort", "ports": [{"port": 80}]}}


def kubernetes_ips(raw: Raw) -> list[str]:
    code, ep = raw("GET", "/api/v1/namespaces/default/endpoints/kubernetes")
    if code != 200:
        return []
    return sorted(a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or [])


def test_two_api_servers_never_share_and_both_are_endpoints(
        pair: tuple[ControlPlaneProcess, ControlPlaneProcess]) -> None:
    a, b = pair
    raws = [Raw(a), Raw(b)]

    def create(i: int) -> tuple[str, int]:
        code, got = raws[i % 2]("POST", "/api/v1/namespaces/default/services",
                                service(f"s{i}"))
        assert code == 201, got
        return got["spec"]["clusterIP"], got["spec"]["ports"][0]["nodePort"]

    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(create, range(40)))
    assert len({ip for ip, _ in made}) == 40
    assert len({port for _, port in made}) == 40
    code, listed = raws[1]("GET", "/api/v1/namespaces/default/services")
    assert code == 200
    stored = {s["metadata"]["name"]: s["spec"]["clusterIP"] for s in listed["items"]}
    assert [stored[f"s{i}"] for i in range(40)] == [ip for ip, _ in made]
    wait_for(lambda: kubernetes_ips(raws[0]) == list(ADDRESSES), timeout=30,
             what="both API servers in the kubernetes endpoints")
    b.stop()  # a clean stop takes its address out at once
    wait_for(lambda: kubernetes_ips(raws[0]) == [ADDRESSES[0]], timeout=15,
             what="only the remaining API server")
