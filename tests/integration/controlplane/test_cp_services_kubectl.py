"""Services through the unmodified kubectl and the official Python client against a real
control plane process, on SQLite and on etcd (issue 20, items 1-4): create, expose and
get svc/ep/endpointslices with upstream's columns, a taken ClusterIP refused with a 422
and nothing written, many Services never sharing an address, the ``kubernetes`` Service,
and allocations kept across a restart of the control plane."""

from __future__ import annotations

import ipaddress
import json
import time
import warnings
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config  # noqa: E402

DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: busybox
        ports: [{name: http, containerPort: 8080}]
"""


def _json(cp: ControlPlaneProcess, *args: str) -> Any:
    return json.loads(cp.kubectl(*args, "-o", "json").stdout)


def _ready_pods(cp: ControlPlaneProcess, ns: str) -> list[str]:
    """Every live pod of ``ns`` made Running and Ready with an IP through pods/status (no
    node runs pods here); their IPs."""
    ips = []
    for i, pod in enumerate(_json(cp, "get", "pods", "-n", ns)["items"]):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        ip = f"10.244.1.{10 + i}"
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                             "conditions": [{"type": "Ready", "status": "True",
                                             "lastTransitionTime": now}]}}
        cp.kubectl("patch", "pod", pod["metadata"]["name"], "-n", ns, "--subresource=status",
                   "--type=merge", "-p", json.dumps(status))
        ips.append(ip)
    return sorted(ips)


def _rows(cp: ControlPlaneProcess, *args: str) -> list[list[str]]:
    return [line.split() for line in cp.kubectl("get", *args).stdout.splitlines()]


def test_expose_and_get_with_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("apply", "-n", ns, "-f", "-", input=DEPLOY)
    wait_for(lambda: len(_json(cp, "get", "pods", "-n", ns)["items"]) == 2, what="2 pods")
    ips = _ready_pods(cp, ns)
    out = cp.kubectl("expose", "deployment", "web", "-n", ns, "--port", "80",
                     "--target-port", "http").stdout
    assert out.strip() == "service/web exposed"
    svc = _json(cp, "get", "svc", "web", "-n", ns)
    assert svc["spec"]["selector"] == {"app": "web"}
    assert svc["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": "http"}]
    cluster_ip = svc["spec"]["clusterIP"]
    assert ipaddress.ip_address(cluster_ip) in ipaddress.ip_network("10.96.0.0/12")
    rows = _rows(cp, "svc", "-n", ns, "-o", "wide")
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE",
                       "SELECTOR"]
    assert rows[1][:5] == ["web", "ClusterIP", cluster_ip, "<none>", "80/TCP"]
    assert rows[1][6] == "app=web"
    wait_for(lambda: len(_rows(cp, "ep", "web", "-n", ns)) == 2 and
             _rows(cp, "ep", "web", "-n", ns)[1][1] == ",".join(f"{ip}:8080" for ip in ips),
             what="endpoints of both pods")
    assert _rows(cp, "ep", "-n", ns)[0] == ["NAME", "ENDPOINTS", "AGE"]
    slices = _rows(cp, "endpointslices", "-n", ns)
    assert slices[0] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert slices[1][0].startswith("web-")
    assert slices[1][1:4] == ["IPv4", "8080", ",".join(ips)]
    # a pod exposed on its own, and a NodePort Service from kubectl create service
    pod = _json(cp, "get", "pods", "-n", ns)["items"][0]["metadata"]
    cp.kubectl("expose", "pod", pod["name"], "-n", ns, "--name", "one", "--port", "8080")
    assert _json(cp, "get", "svc", "one", "-n", ns)["spec"]["selector"] == pod["labels"]
    cp.kubectl("create", "service", "nodeport", "np", "-n", ns, "--tcp", "80:8080",
               "--node-port", "30080")
    row = next(r for r in _rows(cp, "svc", "-n", ns) if r[0] == "np")
    assert row[1] == "NodePort"
    assert row[4] == "80:30080/TCP"
    names = cp.kubectl("get", "all", "-n", ns, "-o", "name").stdout.split()
    assert "service/web" in names
    assert "svc" in cp.kubectl("api-resources", "--api-group=").stdout.split()


def test_taken_cluster_ip_is_refused_and_nothing_written(cp: ControlPlaneProcess,
                                                        ns: str) -> None:
    cp.kubectl("create", "service", "clusterip", "first", "-n", ns, "--tcp", "80:80",
               "--clusterip", "10.96.0.5")
    res = cp.kubectl("create", "service", "clusterip", "second", "-n", ns, "--tcp", "80:80",
                     "--clusterip", "10.96.0.5", check=False)
    assert res.returncode != 0
    assert ('spec.clusterIPs: Invalid value: ["10.96.0.5"]: failed to allocate IP 10.96.0.5: '
            'provided IP is already allocated') in res.stderr, res.stderr
    assert "NotFound" in cp.kubectl("get", "svc", "second", "-n", ns, check=False).stderr
    res = cp.kubectl("create", "service", "clusterip", "third", "-n", ns, "--tcp", "80:80",
                     "--clusterip", "192.168.0.1", check=False)
    assert "The range of valid IPs is 10.96.0.0/12" in res.stderr, res.stderr
    res = cp.kubectl("create", "service", "nodeport", "np", "-n", ns, "--tcp", "80:80",
                     "--node-port", "8080", check=False)
    assert ("spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid "
            "range. The range of valid ports is 30000-32767") in res.stderr, res.stderr


def test_services_never_share_an_address(cp: ControlPlaneProcess, ns: str) -> None:
    docs = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}"},
             "spec": {"ports": [{"port": 80}]}} for i in range(25)]
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    ips = [s["spec"]["clusterIP"] for s in _json(cp, "get", "svc", "-n", ns)["items"]]
    assert len(ips) == 25
    assert len(set(ips)) == 25


def test_python_client_and_kubernetes_service(cp: ControlPlaneProcess, ns: str) -> None:
    warnings.simplefilter("ignore", DeprecationWarning)
    api = config.new_client_from_config(str(cp.kubeconfig))
    v1 = client.CoreV1Api(api)
    made = v1.create_namespaced_service(ns, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
        "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}})
    assert made.spec.cluster_ip == "None"
    assert made.spec.ip_families == ["IPv4"]
    with pytest.raises(client.ApiException) as exc:
        v1.create_namespaced_service(ns, {"apiVersion": "v1", "kind": "Service",
                                          "metadata": {"name": "Bad"},
                                          "spec": {"ports": [{"port": 80}]}})
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    # the kubernetes Service: the first address, 443 to this API server's port, its endpoints
    k = v1.read_namespaced_service("kubernetes", "default")
    assert k.spec.cluster_ip == "10.96.0.1"
    assert (k.spec.ports[0].port, k.spec.ports[0].target_port) == (443, cp.port)
    wait_for(lambda: v1.read_namespaced_endpoints("kubernetes", "default").subsets,
             what="kubernetes endpoints")
    ep = v1.read_namespaced_endpoints("kubernetes", "default")
    assert [a.ip for a in ep.subsets[0].addresses] == ["127.0.0.1"]
    assert ep.subsets[0].ports[0].port == cp.port
    slices = client.DiscoveryV1Api(api).list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=kubernetes")
    assert [e.addresses for e in slices.items[0].endpoints] == [["127.0.0.1"]]


def test_restart_keeps_allocations(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "service", "nodeport", "keep", "-n", ns, "--tcp", "80:80")
    svc = _json(cp, "get", "svc", "keep", "-n", ns)
    ip, port = svc["spec"]["clusterIP"], svc["spec"]["ports"][0]["nodePort"]
    cp.stop()
    cp.start()
    again = _json(cp, "get", "svc", "keep", "-n", ns)
    assert again["spec"]["clusterIP"] == ip
    res = cp.kubectl("create", "service", "clusterip", "copy", "-n", ns, "--tcp", "80:80",
                     "--clusterip", ip, check=False)
    assert "provided IP is already allocated" in res.stderr, res.stderr
    res = cp.kubectl("create", "service", "nodeport", "copy", "-n", ns, "--tcp", "80:80",
                     "--node-port", str(port), check=False)
    assert "provided port is already allocated" in res.stderr, res.stderr
    # deleted after the restart: both are free again
    cp.kubectl("delete", "svc", "keep", "-n", ns)
    cp.kubectl("create", "service", "nodeport", "copy", "-n", ns, "--tcp", "80:80",
               "--node-port", str(port))


SELECTORLESS = """
apiVersion: v1
kind: Service
metadata: {name: external-db}
spec:
  ports: [{name: pg, port: 5432}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: external-db}
subsets:
- addresses: [{ip: 192.0.2.10}, {ip: 192.0.2.11}]
  ports: [{name: pg, port: 5432}]
"""


def test_selectorless_service_keeps_the_users_endpoints_mirrored(
        cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("apply", "-n", ns, "-f", "-", input=SELECTORLESS)
    assert _rows(cp, "ep", "external-db", "-n", ns)[1][1] == "192.0.2.10:5432,192.0.2.11:5432"
    wait_for(lambda: len(_rows(cp, "endpointslices", "-n", ns)) == 2, what="a mirrored slice")
    row = _rows(cp, "endpointslices", "-n", ns)[1]
    assert row[0].startswith("external-db-")
    assert row[1:4] == ["IPv4", "5432", "192.0.2.10,192.0.2.11"]
    assert _rows(cp, "svc", "external-db", "-n", ns, "-o", "wide")[1][6] == "<none>"
