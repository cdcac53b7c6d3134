"""Cluster DNS end to end on a 1-node lab (``pykubelet lab up --nodes 1``): a ClusterFirst
pod's resolv.conf names the kube-dns Service (10.96.0.10), which node 1's control plane
serves through the node's service proxy, so ``nslookup kubernetes.default.svc.cluster.local``
in the pod answers the ``kubernetes`` Service's ClusterIP (issue 20, item 3).

Marker ``root``: it builds a lab (namespaces, bridges, runc containers)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
LAB = "dnse2e"
IMAGE = "localhost/busybox:latest"


def _run(env: dict[str, str], *args: str, check: bool = True,
         input: str | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(args), capture_output=True, text=True, env=env, input=input,
                         timeout=300)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n"
                             f"{res.stderr}")
    return res


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    kubeconfig = tmp_path_factory.mktemp("dnse2e") / "kubeconfig"
    env = dict(os.environ, KUBECONFIG=str(kubeconfig),
               KUBECACHEDIR=str(kubeconfig.parent / "cache"))
    _run(env, PYKUBELET, "lab", "down", "--name", LAB, check=False)
    try:
        _run(env, PYKUBELET, "lab", "up", "--nodes", "1", "--name", LAB)
        yield env
    finally:
        down = _run(env, PYKUBELET, "lab", "down", "--name", LAB, check=False)
        assert down.returncode == 0, down.stderr


def _json(env: dict[str, str], *args: str) -> Any:
    res = _run(env, "kubectl", "get", *args, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else {}


def test_pod_resolves_the_kubernetes_service(env: dict[str, str]) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dnsclient"},
           "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
               "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
               "command": ["sleep", "3600"]}]}}
    _run(env, "kubectl", "create", "-f", "-", input=json.dumps(pod))
    end = time.monotonic() + 120
    while _json(env, "pod", "dnsclient").get("status", {}).get("phase") != "Running":
        assert time.monotonic() < end, "the pod never ran"
        time.sleep(0.5)
    end = time.monotonic() + 60
    while not [a for s in _json(env, "endpoints", "kube-dns", "-n", "kube-system")
               .get("subsets") or [] for a in s.get("addresses") or []]:
        assert time.monotonic() < end, "kube-dns never had endpoints"
        time.sleep(0.5)
    conf = _run(env, "kubectl", "exec", "dnsclient", "--", "cat", "/etc/resolv.conf").stdout
    assert "nameserver 10.96.0.10" in conf, conf
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in conf, conf
    # busybox's nslookup asks for the name as given (no search list): the full name
    got = _run(env, "kubectl", "exec", "dnsclient", "--", "nslookup",
               "kubernetes.default.svc.cluster.local")
    answer = got.stdout.split("Name:", 1)[-1]
    assert "kubernetes.default.svc.cluster.local" in answer, got.stdout
    assert "Address: 10.96.0.1" in answer, got.stdout


def _wait_running(env: dict[str, str], name: str) -> dict[str, Any]:
    end = time.monotonic() + 120
    while (pod := _json(env, "pod", name)).get("status", {}).get("phase") != "Running":
        assert time.monotonic() < end, f"pod {name} never ran"
        time.sleep(0.5)
    return pod


def test_short_names_and_service_variables_in_a_pod(env: dict[str, str]) -> None:
    """What a user types, as on kind: ``wget http://web/`` and ``http://web.default/`` from
    a pod reach the ``web`` Service through the resolv.conf search list (glibc's
    getaddrinfo, which busybox's wget uses, tries ``web.default.svc.cluster.local`` first:
    ndots:5); the pod's environment names the ``kubernetes`` and ``web`` Services
    (KUBERNETES_SERVICE_HOST, WEB_SERVICE_HOST, ...). busybox 1.35's ``nslookup`` sends the
    name as typed and never applies the search list (checked against a logging DNS server:
    it asks ``kubernetes.default.`` only), so ``nslookup kubernetes.default`` answers
    NXDOMAIN from any cluster DNS, CoreDNS included: the same on kind (docker-library/
    busybox#48 and #75, busybox bug 11161; Kubernetes' DNS docs pin busybox 1.28, whose
    nslookup went through the C library). The full name works (the test above)."""
    web = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web", "labels": {"app": "web"}},
           "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
               "name": "httpd", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
               "command": ["sh", "-c", "mkdir -p /www && echo hello from web > "
                           "/www/index.html && exec httpd -f -p 80 -h /www"],
               "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1}}]}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}]}}
    _run(env, "kubectl", "create", "-f", "-", input=json.dumps(web))
    _run(env, "kubectl", "create", "-f", "-", input=json.dumps(svc))
    cluster_ip = _json(env, "service", "web")["spec"]["clusterIP"]
    client = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shortnames"},
              "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                  "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                  "command": ["sleep", "3600"]}]}}
    _run(env, "kubectl", "create", "-f", "-", input=json.dumps(client))
    _wait_running(env, "web")
    _wait_running(env, "shortnames")

    variables = dict(line.split("=", 1) for line in _run(
        env, "kubectl", "exec", "shortnames", "--", "env").stdout.splitlines() if "=" in line)
    assert variables["KUBERNETES_SERVICE_HOST"] == "10.96.0.1", variables
    assert variables["KUBERNETES_SERVICE_PORT"] == "443", variables
    assert variables["WEB_SERVICE_HOST"] == cluster_ip, variables
    assert variables["WEB_PORT"] == f"tcp://{cluster_ip}:80", variables

    for url in ("http://web/", "http://web.default/"):
        end = time.monotonic() + 60  # the endpoint turning ready, the proxy's next sync
        while True:
            got = _run(env, "kubectl", "exec", "shortnames", "--", "wget", "-qO-", url,
                       check=False)
            if got.returncode == 0:
                break
            assert time.monotonic() < end, f"wget {url}: {got.stdout}{got.stderr}"
            time.sleep(1)
        assert got.stdout.strip() == "hello from web", got.stdout
