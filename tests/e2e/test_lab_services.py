"""Services on a 3-node lab through the real kubectl (issue 20 item 5): a ClusterIP Service
over pods on node1 and node2 reached from a pod on node3 and spread over both; a deleted
backend leaving the rotation; a Deployment's rolling update behind a Service failing no
request; the ClusterIP reached from a node's own network namespace
(what a hostNetwork pod sees); a NodePort reached from the host on every node's lab
address; a headless Service's EndpointSlice listing the ready pods; a node's clean stop and
``lab down`` leaving no KUBE- chains behind.

Traffic is busybox ``httpd`` answering its pod's name and busybox ``nc`` sending a GET
(busybox ``wget`` dies in lab pods until the image carries glibc's NSS modules; names are
not used: cluster DNS is another item). One lab for the module; the node-stop test runs
last. Marker ``root``: real namespaces, runc containers on three nodes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
LAB = "e2esvc"
IMAGE = "localhost/busybox:1.35"  # on every node: IfNotPresent starts at once
PORT = 8080
# answers its own name over HTTP; leaves on SIGTERM (httpd as PID 1 would ignore it)
SERVER = ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && "
          f"trap 'exit 0' TERM; httpd -f -p {PORT} -h /www & wait"]
SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``predicate`` until it returns something truthy (which is returned)."""
    end = time.monotonic() + timeout
    while not (got := predicate()):
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.5)
    return got


class Lab:
    """The lab's kubectl (a kubeconfig and discovery cache of the module's own) and its
    nodes' namespaces and addresses."""

    def __init__(self, kubeconfig: Path, status: dict[str, Any]) -> None:
        self.env = dict(os.environ, KUBECONFIG=str(kubeconfig),
                        KUBECACHEDIR=str(kubeconfig.parent / "cache"))
        self.status = status
        self.addresses = {n["name"]: n["address"] for n in status["nodes"]}

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(["kubectl", *args], capture_output=True, text=True,
                             env=self.env, input=input, timeout=timeout, check=False)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n"
                                 f"{res.stdout}\n{res.stderr}")
        return res

    def apply(self, *objs: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))

    def jsonpath(self, kind: str, name: str, path: str) -> str:
        return self.kubectl("get", kind, name, "-o", f"jsonpath={path}").stdout

    def slice_addresses(self, service: str, ready_only: bool = True) -> list[str]:
        out = self.kubectl("get", "endpointslices", "-l",
                           f"kubernetes.io/service-name={service}", "-o", "json").stdout
        return sorted(a for s in json.loads(out)["items"] for e in s.get("endpoints") or []
                      if not ready_only or (e.get("conditions") or {}).get("ready")
                      for a in e["addresses"])

    def requests(self, pod: str, ip: str, count: int, port: int = 80) -> list[str]:
        """``count`` GETs from ``pod`` to ip:port (the Service's port), one connection
        each: the names answered (an empty string for a request that got nothing)."""
        script = (f"for i in $(seq {count}); do "
                  f"r=$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 {ip} {port} | tail -n 1); "
                  'echo "$r"; done')
        out = self.kubectl("exec", pod, "--", "sh", "-c", script, timeout=120).stdout
        return [line.strip() for line in out.split("\n")[:-1]][:count] if out else []

    def netns(self, node: str) -> str:
        return f"pykube-{LAB}-{node}"


def pod(name: str, node: str, command: list[str], app: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": IMAGE,
                                 "imagePullPolicy": "IfNotPresent", "command": command}
    if command == SERVER:  # ready once httpd listens
        container.update(ports=[{"containerPort": PORT}],
                         readinessProbe={"tcpSocket": {"port": PORT}, "periodSeconds": 1})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app or name}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 5,
                     "containers": [container]}}


def service(name: str, app: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": app},
                     "ports": [{"name": "http", "port": 80, "targetPort": PORT}], **spec}}


def kube_chains(netns: str) -> list[str]:
    """The KUBE- chains in a namespace's tables, nft and legacy alike."""
    chains = []
    for tool in ("iptables-nft-save", "iptables-legacy-save"):
        res = subprocess.run(["ip", "netns", "exec", netns, tool], capture_output=True,
                             text=True, timeout=30, check=False)
        assert res.returncode == 0, f"{tool} in {netns}: {res.stderr}"
        chains += [line.split()[0][1:] for line in res.stdout.splitlines()
                   if line.startswith(":KUBE-")]
    return chains


def http_name(address: str, port: int, netns: str | None = None) -> str:
    """The name a GET to address:port answers, from the host or from ``netns``."""
    if netns is not None:
        script = (f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | busybox nc -w 3 {address} {port} "
                  "| tail -n 1")
        res = subprocess.run(["ip", "netns", "exec", netns, "sh", "-c", script],
                             capture_output=True, text=True, timeout=30, check=False)
        return res.stdout.strip()
    with socket.create_connection((address, port), timeout=3) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    return data.decode().strip().splitlines()[-1].strip()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    kubeconfig = tmp_path_factory.mktemp("services") / "kubeconfig"
    env = dict(os.environ, KUBECONFIG=str(kubeconfig))

    def down() -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYKUBELET, "lab", "down", "--name", LAB], env=env,
                              capture_output=True, text=True, timeout=300, check=False)

    down()
    up = subprocess.run([PYKUBELET, "lab", "up", "--nodes", "3", "--name", LAB], env=env,
                        capture_output=True, text=True, timeout=300, check=False)
    names = ["node1", "node2", "node3"]
    try:
        assert up.returncode == 0, f"lab up failed:\n{up.stdout}\n{up.stderr}"
        status = json.loads(subprocess.run(
            [PYKUBELET, "lab", "status", "--name", LAB, "-o", "json"], env=env,
            capture_output=True, text=True, timeout=60, check=True).stdout)
        lab = Lab(kubeconfig, status)
        lab.apply(pod("web-a", "node1", SERVER, app="web"),
                  pod("web-b", "node2", SERVER, app="web"),
                  pod("client", "node3", SLEEPER),
                  service("web", "web"),
                  service("web-np", "web", type="NodePort"),
                  service("web-headless", "web", clusterIP="None"))
        lab.kubectl("wait", "--for=condition=Ready", "pod/web-a", "pod/web-b", "pod/client",
                    "--timeout=90s", timeout=100)
        yield lab
    finally:
        gone = down()
        assert gone.returncode == 0, gone.stderr
        # down removes the nodes' namespaces, and every chain the proxies made with them
        left = [n for n in names if Path("/run/netns", f"pykube-{LAB}-{n}").exists()]
        assert not left, f"lab down left namespaces {left}"


def test_clusterip_from_a_pod_on_the_third_node_spreads_over_both_backends(lab: Lab) -> None:
    ip = lab.jsonpath("svc", "web", "{.spec.clusterIP}")
    wait_for(lambda: len(lab.slice_addresses("web")) == 2, 60, "two ready endpoints")
    # the proxy on node3 syncs at most once a second (kube-proxy's minSyncPeriod): wait
    # until a round of 30 gets answers from both, then judge that round
    names = wait_for(lambda: (got := lab.requests("client", ip, 30)) and all(got)
                     and len(set(got)) == 2 and got, 60, f"30 answers from {ip}")
    # random probability 1/2 per connection: each backend gets a fair share
    assert min(names.count("web-a"), names.count("web-b")) >= 3, names


def test_clusterip_from_a_node_namespace(lab: Lab) -> None:
    """A hostNetwork pod (or the node itself) reaches a ClusterIP: the lab's nodes route
    the service range onto their lab link, as a kind node's default route does."""
    ip = lab.jsonpath("svc", "web", "{.spec.clusterIP}")
    for node in ("node1", "node3"):
        assert http_name(ip, 80, lab.netns(node)) in {"web-a", "web-b"}, node


def test_nodeport_from_the_host_on_every_node_address(lab: Lab) -> None:
    node_port = int(lab.jsonpath("svc", "web-np", "{.spec.ports[0].nodePort}"))
    assert 30000 <= node_port <= 32767
    for node, address in sorted(lab.addresses.items()):
        def answers(address: str = address) -> set[str] | None:
            try:
                return {http_name(address, node_port) for _ in range(8)}
            except ConnectionRefusedError:  # the node's proxy has not synced it yet
                return None

        seen = wait_for(answers, 30, f"{node}'s NodePort")
        assert seen <= {"web-a", "web-b"}, (node, seen)


def test_headless_service_slice_lists_the_ready_pods(lab: Lab) -> None:
    assert lab.jsonpath("svc", "web-headless", "{.spec.clusterIP}") == "None"
    pod_ips = sorted(lab.jsonpath("pod", name, "{.status.podIP}") for name in ("web-a", "web-b"))
    assert wait_for(lambda: lab.slice_addresses("web-headless") == pod_ips and pod_ips,
                    30, "the headless slice")
    # the client pod matches no selector: nothing else is listed
    assert lab.jsonpath("pod", "client", "{.status.podIP}") not in lab.slice_addresses(
        "web-headless", ready_only=False)


def test_deleted_backend_leaves_the_rotation(lab: Lab) -> None:
    ip = lab.jsonpath("svc", "web", "{.spec.clusterIP}")
    lab.kubectl("delete", "pod", "web-b", "--wait=false")
    wait_for(lambda: lab.slice_addresses("web") == [
        lab.jsonpath("pod", "web-a", "{.status.podIP}")], 30, "web-b's endpoint gone")
    time.sleep(1)  # node3's proxy syncs the change (the bench measures how fast)
    names = lab.requests("client", ip, 20)
    assert names == ["web-a"] * 20, names


def test_rolling_update_behind_a_service_fails_no_request(lab: Lab) -> None:
    """A Deployment's rolling update (maxSurge 1, maxUnavailable 0) behind a Service with
    readiness probes, under a stream of requests from node3: none fails. A new pod takes
    traffic once ready; an old one leaves the EndpointSlice as it starts terminating, and
    its preStop sleep keeps it answering until every node's proxy has dropped it (the
    proxies sync at most once a second): Kubernetes' own advice for graceful rollouts."""
    template = {
        "metadata": {"labels": {"app": "roll"}},
        "spec": {"terminationGracePeriodSeconds": 10, "containers": [{
            "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": SERVER, "env": [{"name": "VERSION", "value": "1"}],
            "ports": [{"containerPort": PORT}],
            "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 1},
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "3"]}}}}]}}
    lab.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "roll"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "roll"}},
                        "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                            "maxSurge": 1, "maxUnavailable": 0}},
                        "template": template}},
              service("roll", "roll"))
    lab.kubectl("rollout", "status", "deployment/roll", "--timeout=120s", timeout=130)
    ip = lab.jsonpath("svc", "roll", "{.spec.clusterIP}")
    wait_for(lambda: len(lab.slice_addresses("roll")) == 2, 60, "two ready endpoints")
    old = set(wait_for(lambda: (got := lab.requests("client", ip, 20)) and all(got)
                       and len(set(got)) == 2 and got, 60, "both old pods answering"))
    # requests one after another until told to stop, each line the name that answered
    script = ("rm -f /tmp/stop; while [ ! -f /tmp/stop ]; do "
              f"r=$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 {ip} 80 | tail -n 1); "
              'echo "r=$r"; sleep 0.1; done')
    load = subprocess.Popen(["kubectl", "exec", "client", "--", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=lab.env)
    try:
        time.sleep(2)
        lab.kubectl("set", "env", "deployment/roll", "VERSION=2")
        lab.kubectl("rollout", "status", "deployment/roll", "--timeout=180s", timeout=190)
        new = set(wait_for(lambda: (got := lab.requests("client", ip, 20)) and all(got)
                           and not set(got) & old and got, 60, "the new pods answering"))
        time.sleep(2)
    finally:
        lab.kubectl("exec", "client", "--", "touch", "/tmp/stop", check=False)
        out, err = load.communicate(timeout=60)
    answers = [line[2:].strip() for line in out.splitlines() if line.startswith("r=")]
    failed = [i for i, a in enumerate(answers) if not a]
    assert answers, f"no requests made: {err}"
    assert not failed, f"{len(failed)} of {len(answers)} requests failed (at {failed[:10]})"
    assert set(answers) & old, set(answers)  # traffic before the rollout ...
    assert set(answers) & new, set(answers)  # ... and after it, in one stream
    print(f"rolling update: {len(answers)} requests, none failed, "
          f"{len(set(answers))} pods answered")


def test_clean_stop_of_a_node_leaves_no_kube_chains(lab: Lab) -> None:
    """Last: node2's agent stopped with SIGTERM removes its proxy's chains."""
    netns = lab.netns("node2")
    assert kube_chains(netns), "node2's proxy made no chains"
    agent = next(n["agentPid"] for n in lab.status["nodes"] if n["name"] == "node2")
    os.kill(agent, 15)
    wait_for(lambda: not Path(f"/proc/{agent}").exists(), 60, "node2's agent to stop")
    assert kube_chains(netns) == []
