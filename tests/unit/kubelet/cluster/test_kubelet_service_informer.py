"""A pod's service environment variables come from the node's Service informer (kubelet's
serviceLister), not a list request per container start: a burst's container starts each
waited on one more API round trip (issue 23 item 2). Until the informer has synced, and
on a node that never started it, the list request stands in."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykubelet.client.rest import NAMESPACES, RESTClient
from pykubelet.controlplane.server import ControlPlaneThread, Options
from pykubelet.kubelet.cluster.object_refs import SERVICES, APIObjectRefs


@pytest.fixture
def admin(tmp_path: Path) -> Iterator[RESTClient]:
    cpt = ControlPlaneThread(Options(root=tmp_path / "cp", listen="127.0.0.1:0",
                                     scheduler=False, controllers=False))
    cpt.start()
    try:
        yield RESTClient.from_kubeconfig(cpt.cp.kubeconfig_path)
    finally:
        cpt.stop()


def service(name: str, namespace: str, ip: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}


def names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{s['metadata']['namespace']}/{s['metadata']['name']}" for s in items)


def test_services_come_from_the_informer_once_synced(admin: RESTClient,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": "team"}})
    admin.create(SERVICES, service("kubernetes", "default", "10.96.0.1"), "default")
    admin.create(SERVICES, service("web", "default", "10.96.0.20"), "default")
    admin.create(SERVICES, service("db", "team", "10.96.0.30"), "team")
    refs = APIObjectRefs(admin)
    # before the informer: the list request
    assert names(refs.services("team")) == ["default/kubernetes", "team/db"]
    refs.watch_services()
    try:
        deadline = time.monotonic() + 10
        while not refs.services_synced() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert refs.services_synced()
        calls: list[Any] = []
        real_list = admin.list

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(args)
            return real_list(*args, **kwargs)

        monkeypatch.setattr(admin, "list", counted)
        assert names(refs.services("team")) == ["default/kubernetes", "team/db"]
        assert names(refs.services("default")) == ["default/kubernetes", "default/web"]
        admin.create(SERVICES, service("cache", "team", "10.96.0.40"), "team")
        deadline = time.monotonic() + 5
        while "team/cache" not in names(refs.services("team")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert names(refs.services("team")) == ["default/kubernetes", "team/cache", "team/db"]
        assert [c for c in calls if c and c[0] == SERVICES] == []
    finally:
        refs.stop()
