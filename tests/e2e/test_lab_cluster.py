"""End to end on a 3-node lab (``pykubelet lab up --nodes 3``), through the real kubectl and
pykubectl: placement by kube-scheduler's rules, a pod that fits nowhere and then fits, pods
reaching pods on other nodes, logs across nodes, deletion, an agent SIGKILLed and back, the
control plane SIGKILLed and back, and ``lab down`` leaving nothing behind.

Marker ``root``: it runs in CI (it builds a whole lab: real namespaces, bridges, routes,
runc containers on three nodes).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
PYKUBECTL = str(REPO / ".venv" / "bin" / "pykubectl")
LAB = "e2e"
IMAGE = "localhost/busybox:latest"
GRACE = "8"  # node-monitor grace period for this lab (seconds)


def wait_for(predicate: Any, timeout: float = 60, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.3)


class Lab:
    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.env = dict(os.environ, KUBECONFIG=str(kubeconfig),
                        KUBECACHEDIR=str(kubeconfig.parent / "cache"))

    def node(self, name: str) -> dict[str, Any]:
        return next(n for n in self.status()["nodes"] if n["name"] == name)

    def sigkill_and_restart(self, node: str, pid: int, before_restart: Any = None) -> None:
        """SIGKILL a node's process, then `pykubelet lab restart-node NODE`, which starts it
        again as the lab did and returns once the node is Ready."""
        proc = psutil.Process(pid)
        proc.kill()
        proc.wait(10)
        if before_restart is not None:
            before_restart()
        res = self.run(PYKUBELET, "lab", "restart-node", node, "--name", LAB)
        assert f"{node}: started the agent (pid " in res.stderr, res.stderr

    def run(self, *args: str, check: bool = True, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(list(args), capture_output=True, text=True, env=self.env,
                             input=input, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n"
                                 f"{res.stderr}")
        return res

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run("kubectl", *args, **kw)

    def pykubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run(PYKUBECTL, *args, **kw)

    def status(self) -> dict[str, Any]:
        return json.loads(self.run(PYKUBELET, "lab", "status", "--name", LAB, "-o",
                                   "json").stdout)

    def pod(self, name: str) -> dict[str, Any]:
        out = self.kubectl("get", "pod", name, "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else {}

    def running(self, name: str) -> bool:
        st = self.pod(name).get("status", {})
        cs = st.get("containerStatuses") or []
        return st.get("phase") == "Running" and bool(cs) and all(c.get("ready") for c in cs)

    def node_ready(self, node: str) -> str:
        out = self.kubectl("get", "node", node, "-o", "json", check=False)
        if out.returncode != 0:
            return ""
        for c in json.loads(out.stdout).get("status", {}).get("conditions", []):
            if c["type"] == "Ready":
                return str(c["status"])
        return ""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    kubeconfig = tmp_path_factory.mktemp("e2e") / "kubeconfig"
    env = dict(os.environ, KUBECONFIG=str(kubeconfig))
    subprocess.run([PYKUBELET, "lab", "down", "--name", LAB], env=env, capture_output=True)
    up = subprocess.run([PYKUBELET, "lab", "up", "--nodes", "3", "--name", LAB,
                         "--node-monitor-grace-period", GRACE], env=env, capture_output=True,
                        text=True, timeout=300)
    if up.returncode != 0:
        subprocess.run([PYKUBELET, "lab", "down", "--name", LAB], env=env,
                       capture_output=True)
        pytest.fail(f"lab up failed:\n{up.stdout}\n{up.stderr}")
    lab = Lab(kubeconfig)
    try:
        yield lab
    finally:
        down = subprocess.run([PYKUBELET, "lab", "down", "--name", LAB], env=env,
                              capture_output=True, text=True, timeout=300)
        assert down.returncode == 0, down.stderr
        assert f"pykube-{LAB}" not in kubeconfig.read_text()
        netns = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
        assert not [n for n in netns if n.startswith(f"pykube-{LAB}-")], netns
        left = [p.info["cmdline"] for p in psutil.process_iter(["cmdline"])
                if any(f"/pykube-lab/{LAB}/" in a for a in p.info["cmdline"] or [])]
        assert not left, left


def pod_json(name: str, *, cpu: str = "50m", labels: dict[str, str] | None = None,
             command: str = "sleep 3600", **spec: Any) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
        "spec": {"terminationGracePeriodSeconds": 5, **spec, "containers": [{
            "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", command], "resources": {"requests": {"cpu": cpu}}}]}})


def test_nodes_ready_with_their_addresses(lab: Lab) -> None:
    st = lab.status()
    assert [n["name"] for n in st["nodes"]] == ["node1", "node2", "node3"]
    assert all(n["ready"] for n in st["nodes"])
    assert st["nodes"][0]["controlPlanePid"]
    rows = lab.kubectl("get", "nodes", "-o", "wide").stdout.splitlines()[1:]
    assert sorted(r.split()[0] for r in rows) == ["node1", "node2", "node3"]
    assert all(r.split()[1] == "Ready" for r in rows)
    assert lab.pykubectl("get", "nodes").stdout.count("Ready") == 3


def test_twelve_pods_land_where_the_rules_put_them(lab: Lab) -> None:
    lab.kubectl("taint", "nodes", "node3", "dedicated=gpu:NoSchedule")
    lab.kubectl("label", "nodes", "node2", "disk=ssd")
    try:
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "spread"}},
            "topologyKey": "kubernetes.io/hostname"}]}}
        gpu_tol = [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                    "effect": "NoSchedule"}]
        docs = [pod_json(f"spread-{i}", labels={"app": "spread"}, affinity=anti,
                         tolerations=gpu_tol) for i in range(3)]
        docs += [pod_json(f"ssd-{i}", nodeSelector={"disk": "ssd"}) for i in range(3)]
        docs += [pod_json(f"gpu-{i}", nodeSelector={"kubernetes.io/hostname": "node3"},
                          tolerations=gpu_tol) for i in range(2)]
        docs += [pod_json(f"plain-{i}", cpu=c) for i, c in enumerate(("100m", "200m", "300m",
                                                                        "10m"))]
        for d in docs:
            lab.kubectl("create", "-f", "-", input=d)
        names = [json.loads(d)["metadata"]["name"] for d in docs]
        wait_for(lambda: all(lab.running(n) for n in names), timeout=180, what="12 Running")
        where = {n: lab.pod(n)["spec"]["nodeName"] for n in names}
        assert sorted(where[f"spread-{i}"] for i in range(3)) == ["node1", "node2", "node3"]
        assert all(where[f"ssd-{i}"] == "node2" for i in range(3))
        assert all(where[f"gpu-{i}"] == "node3" for i in range(2))
        assert all(where[f"plain-{i}"] != "node3" for i in range(4))  # untolerated taint
        wide = lab.pykubectl("get", "pods", "-o", "wide").stdout
        assert all(n in wide for n in names)
    finally:
        lab.kubectl("delete", "pods", "--all", "--grace-period=0", "--force", check=False)
        lab.kubectl("taint", "nodes", "node3", "dedicated-", check=False)
        lab.kubectl("label", "nodes", "node2", "disk-", check=False)


def millicores(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def test_pod_that_fits_nowhere_pends_then_schedules(lab: Lab) -> None:
    """Every node is nearly full; a pod that fits nowhere stays Pending with
    kube-scheduler's message, and is scheduled (and runs) once a pod leaves a node."""
    fillers = []
    for node in ("node1", "node2", "node3"):
        alloc = json.loads(lab.kubectl("get", "node", node, "-o", "json").stdout)[
            "status"]["allocatable"]["cpu"]
        name = f"filler-{node}"
        lab.kubectl("create", "-f", "-", input=pod_json(
            name, cpu=f"{millicores(alloc) - 300}m", nodeSelector={
                "kubernetes.io/hostname": node},
            tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]))
        fillers.append(name)
    try:
        wait_for(lambda: all(lab.running(n) for n in fillers), timeout=90, what="fillers")
        lab.kubectl("create", "-f", "-", input=pod_json("waiting", cpu="500m"))
        wait_for(lambda: any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in lab.pod("waiting").get("status", {}).get("conditions", [])),
            what="PodScheduled=False")
        cond = next(c for c in lab.pod("waiting")["status"]["conditions"]
                    if c["type"] == "PodScheduled")
        assert cond["reason"] == "Unschedulable"
        assert cond["message"].startswith("0/3 nodes are available: 3 Insufficient cpu. ")
        assert cond["message"].endswith("preemption: 0/3 nodes are available: 3 No "
                                        "preemption victims found for incoming pod.")
        events = lab.kubectl("get", "events", "--field-selector",
                             "involvedObject.name=waiting,reason=FailedScheduling").stdout
        assert "0/3 nodes are available: 3 Insufficient cpu." in events
        why = lab.pykubectl("why", "waiting").stdout
        assert "Insufficient cpu" in why
        assert "node2" in why
        # room is made on node2: the pending pod goes there and runs
        lab.kubectl("delete", "pod", "filler-node2", "--wait=true", timeout=60)
        wait_for(lambda: lab.running("waiting"), timeout=90, what="waiting Running")
        assert lab.pod("waiting")["spec"]["nodeName"] == "node2"
    finally:
        lab.kubectl("delete", "pod", "waiting", *fillers, "--grace-period=0", "--force",
                    "--ignore-not-found", check=False)


def test_pods_reach_pods_on_other_nodes_and_logs_come_back(lab: Lab) -> None:
    server = pod_json("srv", nodeSelector={"kubernetes.io/hostname": "node2"},
                      command="mkdir -p /www && echo hello-from-node2 > /www/index.html && "
                              "exec httpd -f -p 8080 -h /www")
    client = pod_json("cli", nodeSelector={"kubernetes.io/hostname": "node3"},
                      command="echo started on node3; sleep 3600")
    lab.kubectl("create", "-f", "-", input=server)
    lab.kubectl("create", "-f", "-", input=client)
    wait_for(lambda: lab.running("srv") and lab.running("cli"), timeout=120, what="Running")
    ip = lab.pod("srv")["status"]["podIP"]
    assert ip.startswith("10.244.2.")
    got = lab.kubectl("exec", "cli", "--", "wget", "-qO-", f"http://{ip}:8080/")
    assert got.stdout.strip() == "hello-from-node2"
    got = lab.pykubectl("exec", "cli", "--", "wget", "-qO-", f"http://{ip}:8080/")
    assert got.stdout.strip() == "hello-from-node2"
    assert lab.kubectl("logs", "cli").stdout.strip() == "started on node3"
    assert lab.pykubectl("logs", "cli").stdout.strip() == "started on node3"
    lab.kubectl("delete", "pod", "srv", "cli", "--grace-period=0", "--force")


def test_deleting_a_pod_stops_its_containers_within_the_grace_period(lab: Lab) -> None:
    lab.kubectl("create", "-f", "-", input=pod_json(
        "stubborn", nodeSelector={"kubernetes.io/hostname": "node3"},
        command="trap '' TERM; sleep 3600"))  # ignores SIGTERM: killed at the grace's end
    wait_for(lambda: lab.running("stubborn"), timeout=90, what="Running")
    t0 = time.monotonic()
    lab.kubectl("delete", "pod", "stubborn", "--wait=true", timeout=120)
    took = time.monotonic() - t0
    assert 4 <= took < 15, f"deleting with a 5 s grace took {took:.1f}s"


def _pod_ready(lab: Lab, name: str) -> str:
    return next((c["status"] for c in lab.pod(name)["status"].get("conditions") or []
                 if c["type"] == "Ready"), "")


def test_agent_sigkill_keeps_pods_then_node_returns_without_duplicates(lab: Lab) -> None:
    lab.kubectl("create", "-f", "-", input=pod_json(
        "steady", nodeSelector={"kubernetes.io/hostname": "node3"}))
    wait_for(lambda: lab.running("steady"), timeout=90, what="Running")
    cid = lab.pod("steady")["status"]["containerStatuses"][0]["containerID"]

    def while_down() -> None:
        wait_for(lambda: lab.node_ready("node3") == "Unknown", timeout=60,
                 what="Ready=Unknown")
        # the pod keeps running on its node with nobody watching it, no longer Ready
        # (the node lifecycle controller's MarkPodsNotReady)
        assert lab.pod("steady")["status"]["containerStatuses"][0]["containerID"] == cid
        wait_for(lambda: _pod_ready(lab, "steady") == "False", timeout=20,
                 what="pod Ready=False")
        assert lab.pykubectl("exec", "steady", "--", "true", check=False).returncode != 0

    lab.sigkill_and_restart("node3", lab.node("node3")["agentPid"], while_down)
    wait_for(lambda: lab.node_ready("node3") == "True", timeout=90, what="Ready again")
    # the agent puts its own view back (the status manager's reconcile, every 10 s)
    wait_for(lambda: _pod_ready(lab, "steady") == "True", timeout=30, what="pod Ready again")
    assert lab.pykubectl("exec", "steady", "--", "echo", "back").stdout == "back\n"
    time.sleep(3)
    st = lab.pod("steady")["status"]["containerStatuses"][0]
    assert st["containerID"] == cid
    assert st["restartCount"] == 0
    # no duplicates: one sandbox and one container for the pod in node3's runtime
    from pykubelet.kubelet.cri.cri_client import CRIClient
    from pykubelet.kubelet.kuberuntime.labels import POD_NAME_LABEL
    from pykubelet.lab.layout import RUN_ROOT

    cri = CRIClient(f"unix://{RUN_ROOT / LAB / 'node3' / 'cri.sock'}")
    try:
        mine = {POD_NAME_LABEL: "steady"}
        assert len(cri.list_pod_sandbox(label_selector=mine)) == 1
        assert [c.id for c in cri.list_containers(label_selector=mine)] == [
            cid.split("://", 1)[1]]
    finally:
        cri.close()
    lab.kubectl("delete", "pod", "steady", "--grace-period=0", "--force")


def test_control_plane_sigkill_loses_no_acknowledged_pod(lab: Lab) -> None:
    names = [f"ack-{i}" for i in range(5)]
    for n in names:
        lab.kubectl("create", "-f", "-", input=pod_json(n))
    node1 = lab.node("node1")
    assert node1["controlPlanePid"]
    lab.sigkill_and_restart("node1", node1["controlPlanePid"])  # (the agent embeds it)
    wait_for(lambda: lab.kubectl("get", "--raw", "/readyz", check=False).returncode == 0,
             timeout=60, what="the API again")
    listed = lab.kubectl("get", "pods", "-o", "name").stdout.split()
    assert all(f"pod/{n}" in listed for n in names)
    wait_for(lambda: all(lab.running(n) for n in names), timeout=120, what="all Running")
    lab.kubectl("delete", "pods", *names, "--grace-period=0", "--force")
