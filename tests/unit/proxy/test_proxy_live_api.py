"""The agent's service proxy against a real (in-process) control plane, with the node's own
credentials: Services and EndpointSlices written by the admin, as the API stores and
defaults them, become rules; a deleted slice takes its endpoints out (iptables faked)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proxy_builders import FakeIptables, endpoint, endpoint_slice

from pykubelet.client.rest import RESTClient
from pykubelet.config import ServiceProxyConfig
from pykubelet.controlplane.server import ControlPlaneThread, Options
from pykubelet.proxy.service_proxy import ENDPOINT_SLICES, SERVICES, ServiceProxy


@pytest.fixture
def cp(tmp_path: Path) -> Iterator[ControlPlaneThread]:
    thread = ControlPlaneThread(Options(root=tmp_path, listen="127.0.0.1:0", scheduler=False,
                                        controllers=False))
    try:
        thread.start()
        yield thread
    finally:
        thread.stop()


def wait_for(cond: Any, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return False


def test_the_proxy_follows_the_apis_services_and_slices(cp: ControlPlaneThread) -> None:
    plane = cp.cp
    assert plane.tokens is not None
    admin = RESTClient(plane.local_url, token=plane.tokens.admin, ca_pem=plane.pki.ca_pem)
    joined = RESTClient(plane.local_url, token=plane.tokens.join, ca_pem=plane.pki.ca_pem)
    cred = joined.request("POST", "/bootstrap/node", body={"nodeName": "px-node"})
    node = RESTClient(plane.local_url, token=cred["token"], ca_pem=plane.pki.ca_pem)
    ipt = FakeIptables()
    proxy = ServiceProxy(node, "px-node", ServiceProxyConfig(enabled=True, minSyncPeriod="10ms"),  # type: ignore[arg-type]
                         iptables=ipt)  # type: ignore[arg-type]
    try:
        svc = admin.create(SERVICES, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": "web"}]}},
            namespace="default")
        cluster_ip = svc["spec"]["clusterIP"]
        es = endpoint_slice("default", "web", [endpoint("10.244.1.5", ready=True)],
                            [{"name": "http", "port": 8080, "protocol": "TCP"}])
        admin.create(ENDPOINT_SLICES, es, namespace="default")
        proxy.start()
        assert wait_for(lambda: ipt.restores and "10.244.1.5:8080" in ipt.restores[-1])
        assert f"-d {cluster_ip} --dport 80 -j KUBE-SVC-" in ipt.restores[-1]
        admin.delete(ENDPOINT_SLICES, es["metadata"]["name"], namespace="default")
        assert wait_for(lambda: '"default/web:http has no endpoints"' in ipt.restores[-1])
        # a Service another proxy implements (service.kubernetes.io/service-proxy-name) is
        # not this proxy's, as kube-proxy's informers select it away
        admin.create(SERVICES, {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "other",
                         "labels": {"service.kubernetes.io/service-proxy-name": "x"}},
            "spec": {"ports": [{"port": 80}]}}, namespace="default")
        admin.create(SERVICES, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "mine"},
            "spec": {"ports": [{"port": 80}]}}, namespace="default")
        assert wait_for(lambda: "default/mine has no endpoints" in ipt.restores[-1])
        assert "default/other" not in ipt.restores[-1]
    finally:
        node.close()
        proxy.stop()
        admin.close()
        joined.close()
