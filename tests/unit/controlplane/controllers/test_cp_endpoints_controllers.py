"""The EndpointSlice and Endpoints controllers and the ``kubernetes`` Service over an
in-process control plane (issue 20, item 3): a Service's slices and Endpoints follow its
pods as they get an IP, turn ready, terminate and go; a selector-less Service's are left
to its user; the ``kubernetes`` Service lists every live API server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from conftest import Cluster
from cp_wait import wait_for

from pykubelet.controlplane.controllers.endpointslice import (
    EndpointsController,
    EndpointSliceController,
    EndpointSliceMirroringController,
)
from pykubelet.controlplane.controllers.kubernetesservice import (
    LEASE_PREFIX,
    LEASE_TTL_S,
    KubernetesService,
)

SVC = "/api/v1/namespaces/{ns}/services"
PODS = "/api/v1/namespaces/{ns}/pods"
EP = "/api/v1/namespaces/{ns}/endpoints"
ES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
MERGE = "application/merge-patch+json"


def loop_of(cluster: Cluster) -> asyncio.AbstractEventLoop:
    loop = cluster.cp.loop
    assert isinstance(loop, asyncio.AbstractEventLoop)
    return loop


@pytest.fixture(scope="module")
def controllers(cluster: Cluster) -> Iterator[None]:
    tasks: list[asyncio.Task[None]] = []

    async def start() -> None:
        for c in (EndpointSliceController(cluster.cp), EndpointsController(cluster.cp),
                  EndpointSliceMirroringController(cluster.cp)):
            tasks.append(asyncio.get_running_loop().create_task(c.run()))

    asyncio.run_coroutine_threadsafe(start(), loop_of(cluster)).result(10)
    try:
        yield
    finally:
        async def stop() -> None:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), loop_of(cluster)).result(10)


def make_pod(cluster: Cluster, ns: str, name: str, labels: dict[str, str]) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"nodeName": "n1", "containers": [
                {"name": "c", "image": "busybox",
                 "ports": [{"name": "http", "containerPort": 8080}]}]}}
    code, got = cluster.admin("POST", PODS.format(ns=ns), body)
    assert code == 201, got


def set_status(cluster: Cluster, ns: str, name: str, ip: str, ready: bool) -> None:
    status = {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                         "conditions": [{"type": "Ready",
                                         "status": "True" if ready else "False"}]}}
    code, got = cluster.admin("PATCH", PODS.format(ns=ns) + f"/{name}/status", status, MERGE)
    assert code == 200, got


def slices(cluster: Cluster, ns: str, service: str) -> list[dict[str, Any]]:
    code, got = cluster.admin(
        "GET", ES.format(ns=ns) + f"?labelSelector=kubernetes.io/service-name={service}")
    assert code == 200, got
    return list(got["items"])


def endpoints_of(cluster: Cluster, ns: str, service: str) -> dict[str, Any] | None:
    code, got = cluster.admin("GET", EP.format(ns=ns) + f"/{service}")
    return got if code == 200 else None


def conditions(cluster: Cluster, ns: str, service: str) -> dict[str, Any]:
    return {(e.get("targetRef") or {}).get("name", "?"): (e["addresses"][0],
                                                          e.get("conditions"))
            for s in slices(cluster, ns, service) for e in s.get("endpoints") or []}


def test_slices_and_endpoints_follow_pods(cluster: Cluster, controllers: None) -> None:
    ns = cluster.namespace("ep-follow")
    code, svc = cluster.admin("POST", SVC.format(ns=ns), {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
    assert code == 201, svc
    # no pods yet: one empty placeholder slice, owned by the Service
    placeholder = wait_for(lambda: slices(cluster, ns, "web"))
    assert len(placeholder) == 1
    meta = placeholder[0]["metadata"]
    assert meta["labels"]["endpointslice.kubernetes.io/managed-by"] == (
        "endpointslice-controller.k8s.io")
    assert meta["ownerReferences"][0]["uid"] == svc["metadata"]["uid"]
    make_pod(cluster, ns, "a", {"app": "web"})
    make_pod(cluster, ns, "b", {"app": "web"})
    make_pod(cluster, ns, "other", {"app": "db"})
    set_status(cluster, ns, "a", "10.244.1.5", ready=True)
    set_status(cluster, ns, "b", "10.244.1.6", ready=False)
    set_status(cluster, ns, "other", "10.244.1.7", ready=True)
    want = {"a": ("10.244.1.5", {"ready": True, "serving": True, "terminating": False}),
            "b": ("10.244.1.6", {"ready": False, "serving": False, "terminating": False})}
    wait_for(lambda: conditions(cluster, ns, "web") == want)
    got = slices(cluster, ns, "web")
    assert len(got) == 1
    assert got[0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    ep = wait_for(lambda: (e := endpoints_of(cluster, ns, "web")) and e.get("subsets") and e)
    assert [a["ip"] for a in ep["subsets"][0]["addresses"]] == ["10.244.1.5"]
    assert [a["ip"] for a in ep["subsets"][0]["notReadyAddresses"]] == ["10.244.1.6"]
    # b turns ready, a is deleted with a grace period (terminating), then goes
    set_status(cluster, ns, "b", "10.244.1.6", ready=True)
    code, _ = cluster.admin("DELETE", PODS.format(ns=ns) + "/a")
    assert code == 200
    wait_for(lambda: conditions(cluster, ns, "web").get("a", ("", {}))[1].get("terminating"))
    assert conditions(cluster, ns, "web")["a"][1] == {
        "ready": False, "serving": True, "terminating": True}
    code, _ = cluster.admin("DELETE", PODS.format(ns=ns) + "/a?gracePeriodSeconds=0")
    wait_for(lambda: set(conditions(cluster, ns, "web")) == {"b"})
    wait_for(lambda: [a["ip"] for s in (endpoints_of(cluster, ns, "web") or {}).get(
        "subsets", []) for a in s.get("addresses", [])] == ["10.244.1.6"])
    # a slice edited by hand is put back
    name = slices(cluster, ns, "web")[0]["metadata"]["name"]
    code, got = cluster.admin("PATCH", ES.format(ns=ns) + f"/{name}",
                              {"endpoints": [{"addresses": ["10.9.9.9"]}]}, MERGE)
    assert code == 200, got
    wait_for(lambda: set(conditions(cluster, ns, "web")) == {"b"})
    # the Service goes: so do its Endpoints and slices
    code, _ = cluster.admin("DELETE", SVC.format(ns=ns) + "/web")
    assert code == 200
    wait_for(lambda: endpoints_of(cluster, ns, "web") is None and not slices(cluster, ns, "web"))


def test_selectorless_service_endpoints_are_the_users_and_mirrored(
        cluster: Cluster, controllers: None) -> None:
    ns = cluster.namespace("ep-manual")
    code, got = cluster.admin("POST", SVC.format(ns=ns), {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
        "spec": {"ports": [{"port": 5432}]}})
    assert code == 201, got
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "db"},
          "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 5432}]}]}
    code, got = cluster.admin("POST", EP.format(ns=ns), ep)
    assert code == 201, got
    # a selector Service beside it, so the controllers have certainly run a sync meanwhile
    code, got = cluster.admin("POST", SVC.format(ns=ns), {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "probe"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})
    assert code == 201, got
    wait_for(lambda: slices(cluster, ns, "probe") and endpoints_of(cluster, ns, "probe"))
    kept = endpoints_of(cluster, ns, "db")
    assert kept is not None
    assert kept["subsets"][0]["addresses"] == [{"ip": "192.0.2.10"}]
    # mirrored into a slice for what reads slices only (the service proxy)
    mirror = wait_for(lambda: slices(cluster, ns, "db"))
    assert len(mirror) == 1
    assert mirror[0]["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == (
        "endpointslicemirroring-controller.k8s.io")
    assert mirror[0]["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
    assert mirror[0]["endpoints"] == [{"addresses": ["192.0.2.10"],
                                       "conditions": {"ready": True}}]
    assert mirror[0]["ports"] == [{"name": "", "port": 5432, "protocol": "TCP"}]
    # the user changes their Endpoints: the mirror follows
    ep["subsets"][0]["notReadyAddresses"] = [{"ip": "192.0.2.11"}]
    ep["metadata"]["resourceVersion"] = kept["metadata"]["resourceVersion"]
    code, got = cluster.admin("PUT", EP.format(ns=ns) + "/db", ep)
    assert code == 200, got
    wait_for(lambda: [e["conditions"]["ready"] for s in slices(cluster, ns, "db")
                      for e in s["endpoints"]] == [True, False])
    # Endpoints marked skip-mirror, or gone, have no mirror
    code, got = cluster.admin("PATCH", EP.format(ns=ns) + "/db", {"metadata": {"labels": {
        "endpointslice.kubernetes.io/skip-mirror": "true"}}}, MERGE)
    assert code == 200, got
    wait_for(lambda: slices(cluster, ns, "db") == [])
    code, got = cluster.admin("PATCH", EP.format(ns=ns) + "/db", {"metadata": {"labels": {
        "endpointslice.kubernetes.io/skip-mirror": None}}}, MERGE)
    assert code == 200, got
    wait_for(lambda: slices(cluster, ns, "db"))
    code, _ = cluster.admin("DELETE", EP.format(ns=ns) + "/db")
    assert code == 200
    wait_for(lambda: slices(cluster, ns, "db") == [])


def test_kubernetes_service_lists_live_api_servers(cluster: Cluster) -> None:
    cp = cluster.cp
    now = [1_000_000.0]
    ks = KubernetesService(cp, clock=lambda: now[0])

    async def once() -> None:
        await ks.repair()
        await ks.ensure_service()
        await ks.renew()
        await ks.reconcile()

    async def other_server(ip: str, at: float) -> None:
        await cp.registry.storage.create(LEASE_PREFIX + ip, orjson.dumps(
            {"ip": ip, "port": cp.port, "renewTime": at}))

    async def stop() -> None:
        await ks.remove_lease()
        await ks.reconcile()

    loop = loop_of(cluster)
    asyncio.run_coroutine_threadsafe(other_server("10.250.0.3", now[0]), loop).result(10)
    asyncio.run_coroutine_threadsafe(once(), loop).result(10)
    code, svc = cluster.admin("GET", SVC.format(ns="default") + "/kubernetes")
    assert code == 200, svc
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP",
                                     "targetPort": cp.port}]
    ips = sorted(["10.250.0.3", cp.advertise_address()])
    ep = endpoints_of(cluster, "default", "kubernetes")
    assert ep is not None
    assert sorted(a["ip"] for a in ep["subsets"][0]["addresses"]) == ips
    assert ep["subsets"][0]["ports"] == [{"name": "https", "port": cp.port, "protocol": "TCP"}]
    es = slices(cluster, "default", "kubernetes")
    assert sorted(e["addresses"][0] for e in es[0]["endpoints"]) == ips
    # the other server stops renewing: it leaves the endpoints after the TTL
    now[0] += LEASE_TTL_S + 1
    asyncio.run_coroutine_threadsafe(once(), loop).result(10)
    ep = endpoints_of(cluster, "default", "kubernetes")
    assert ep is not None
    assert [a["ip"] for a in ep["subsets"][0]["addresses"]] == [cp.advertise_address()]
    # a clean stop leaves them at once
    asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
    ep = endpoints_of(cluster, "default", "kubernetes")
    assert ep is not None
    assert "subsets" not in ep
