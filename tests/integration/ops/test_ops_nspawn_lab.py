"""Three systemd-nspawn nodes (real systemd as PID 1) provisioned by the repository's
vagrant/provision.sh, running the real unit: READY with a readable status, levels in the
journal, the workers joined, a pod Running on every node and reaching the others, the
agent's, the runtime's and the control plane's /metrics, containers that outlive
`systemctl restart pykubelet`, and a restart by systemd's watchdog when the agent's sync
loop is wedged (the ``wedge-sync-loop`` failpoint).

The nodes boot the cached rootfs (see nspawn_lab.py); timings are printed (-s).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from nspawn_lab import NETNS, Node, NspawnLab, rootfs, wheelhouse
from prometheus_client.parser import text_string_to_metric_families

# the first run on a machine builds the cached rootfs (debootstrap, about 2 min) and the
# wheelhouse inside the first test's setup: more than the suite's 300 s default may pass
pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def timings() -> Iterator[dict[str, float]]:
    t: dict[str, float] = {}
    yield t
    print("\nnspawn lab timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in t.items()))


def provision(node: Node, nodes: list[Node], control: Node | None) -> str:
    peers = " ".join(f"--peer {n.name}={n.address}={n.pod_cidr}" for n in nodes)
    role = ("--control --join-key-pub /etc/pykube-lab/join.pub" if control is None
            else f"--join {control.address} --join-key /etc/pykube-lab/join")
    res = node.sh(f"/vagrant/vagrant/provision.sh --name {node.name} --address {node.address} "
                  f"--pod-cidr {node.pod_cidr} {role} {peers} "
                  "--source /vagrant --wheels /var/cache/pykube-wheels", timeout=900)
    return res.stdout


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, timings: dict[str, float]
        ) -> Iterator[tuple[NspawnLab, Path]]:
    image, timings["rootfs build"] = rootfs()
    wheels, timings["wheelhouse"] = wheelhouse()
    lab = NspawnLab(image, wheels)
    try:
        timings["boot 3 nodes"] = lab.up(3)
        control, *workers = lab.nodes
        t0 = time.monotonic()
        provision(control, lab.nodes, None)
        timings["provision control"] = time.monotonic() - t0
        t0 = time.monotonic()
        errors: list[BaseException] = []

        def worker(n: Node) -> None:
            try:
                provision(n, lab.nodes, control)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        timings["provision 2 workers"] = time.monotonic() - t0
        kubeconfig = tmp_path_factory.mktemp("kube") / "kubeconfig"
        text = control.sh("cat /var/lib/pykubelet/control-plane/admin.kubeconfig").stdout
        kubeconfig.write_text(text.replace("https://127.0.0.1:6443",
                                           f"https://{control.address}:6443"))
        yield lab, kubeconfig
    finally:
        t0 = time.monotonic()
        lab.down()
        timings["teardown"] = time.monotonic() - t0


def kubectl(kubeconfig: Path, *args: str, input: str | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
    """The real kubectl on the host, in the lab's network namespace."""
    res = subprocess.run(["nsenter", f"--net=/run/netns/{NETNS}", "kubectl",
                          f"--kubeconfig={kubeconfig}", *args], input=input,
                         capture_output=True, text=True, timeout=120, check=False)
    if check and res.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {res.stderr}")
    return res


def wait(what: str, check: Callable[[], bool], timeout: float = 120) -> float:
    t0 = time.monotonic()
    while not check():
        assert time.monotonic() - t0 < timeout, f"timed out waiting for {what}"
        time.sleep(0.5)
    return time.monotonic() - t0


def unit(node: Node) -> dict[str, str]:
    out = node.sh("systemctl show -p ActiveState,SubState,StatusText,NRestarts,MainPID,"
                  "Result pykubelet").stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def metrics(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}"] = out.get(f"{s.name}{{{labels}}}", 0) + s.value
    return out


def total(m: dict[str, float], name: str, **labels: str) -> float:
    found = 0.0
    for key, v in m.items():
        metric, _, rest = key.partition("{")
        have = dict(kv.split("=", 1) for kv in rest.rstrip("}").split(",") if kv)
        if metric == name and all(have.get(k) == want for k, want in labels.items()):
            found += v
    return found


def http_get(node: Node, url: str) -> str:
    return node.sh(f"python3 -c 'import urllib.request,sys; "
                   f"sys.stdout.write(urllib.request.urlopen(\"{url}\", timeout=10)"
                   f".read().decode())'").stdout


def test_every_unit_is_ready_with_a_status_and_logs_with_levels(
        lab: tuple[NspawnLab, Path]) -> None:
    for node in lab[0].nodes:
        u = unit(node)
        assert (u["ActiveState"], u["SubState"], u["NRestarts"]) == ("active", "running", "0")
        assert u["StatusText"].startswith(f"Running: node {node.name}"), u["StatusText"]
        entries = [json.loads(line) for line in node.sh(
            "journalctl -u pykubelet -o json --no-pager").stdout.splitlines()]
        ours = [e for e in entries if e.get("SYSLOG_IDENTIFIER") == "pykubelet"]
        assert ours, "pykubelet logs to the journal"
        assert {e["PRIORITY"] for e in ours} >= {"6"}  # info lines, stored as info
        assert not any(e["MESSAGE"][:1] == "<" for e in ours)  # prefixes were understood


def test_nodes_join_and_a_pod_runs_on_each_and_reaches_the_others(
        lab: tuple[NspawnLab, Path], timings: dict[str, float]) -> None:
    nodes, kubeconfig = lab[0].nodes, lab[1]

    def all_ready() -> bool:
        res = kubectl(kubeconfig, "get", "nodes", "-o", "json", check=False)
        items = json.loads(res.stdout)["items"] if res.returncode == 0 else []
        return sorted(n["metadata"]["name"] for n in items
                      if any(c["type"] == "Ready" and c["status"] == "True"
                             for c in n["status"].get("conditions", []))) == [
            n.name for n in nodes]

    timings["nodes Ready"] = wait("3 nodes Ready", all_ready)
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{n.name}"},
             "spec": {"nodeName": n.name, "containers": [{
                 "name": "httpd", "image": "localhost/busybox:latest",
                 "imagePullPolicy": "Never",
                 "command": ["sh", "-c",
                             f"echo {n.name} > /index.html; exec httpd -f -p 8080 -h /"]}]}}
            for n in nodes]
    kubectl(kubeconfig, "apply", "-f", "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))

    def running() -> bool:
        items = json.loads(kubectl(kubeconfig, "get", "pods", "-o", "json").stdout)["items"]
        return len(items) == 3 and all(p["status"].get("phase") == "Running" for p in items)

    timings["3 pods Running"] = wait("a pod Running on each node", running)
    items = json.loads(kubectl(kubeconfig, "get", "pods", "-o", "json").stdout)["items"]
    ips = {p["spec"]["nodeName"]: p["status"]["podIP"] for p in items}
    for n in nodes:
        assert ips[n.name].startswith(n.pod_cidr.rsplit(".", 2)[0] + "."), ips
    # pod to pod across nodes, through the routes provisioning set
    for n in nodes[1:]:
        # (busybox-static's wget crashes with -T: the default timeout it is)
        res = kubectl(kubeconfig, "exec", f"web-{nodes[0].name}", "--", "wget", "-q", "-O-",
                      f"http://{ips[n.name]}:8080/index.html")
        assert res.stdout.strip() == n.name


def test_agent_runtime_and_control_plane_metrics(lab: tuple[NspawnLab, Path]) -> None:
    nodes, kubeconfig = lab[0].nodes, lab[1]
    for n in nodes:
        agent = metrics(http_get(n, "http://127.0.0.1:10248/metrics"))
        assert total(agent, "kubelet_running_pods") >= 1
        assert total(agent, "kubelet_running_containers", container_state="running") >= 1
        assert total(agent, "kubelet_started_pods_total") >= 1
        assert total(agent, "kubelet_pod_start_duration_seconds_count") >= 1
        assert total(agent, "kubelet_runtime_operations_duration_seconds_count",
                     operation_type="run_podsandbox") >= 1
        runtime = metrics(http_get(n, "http://127.0.0.1:1338/metrics"))
        assert total(runtime, "grpc_server_handled_total", grpc_method="RunPodSandbox",
                     grpc_code="OK") >= 1
    cp = metrics(kubectl(kubeconfig, "get", "--raw", "/metrics").stdout)
    assert total(cp, "apiserver_request_total", verb="POST", resource="pods",
                 code="201") >= 3
    assert total(cp, "scheduler_schedule_attempts_total", result="scheduled") >= 0
    assert total(cp, "process_resident_memory_bytes") > 0


def container_pid(node: Node) -> int:
    return int(node.sh("pgrep -x httpd").stdout.strip())


def test_containers_outlive_a_restart_of_pykubelet(lab: tuple[NspawnLab, Path],
                                                   timings: dict[str, float]) -> None:
    node, kubeconfig = lab[0].nodes[1], lab[1]
    before_pid, before_unit = container_pid(node), unit(node)
    t0 = time.monotonic()
    node.sh("systemctl restart pykubelet")  # Type=notify: returns at READY=1
    timings["systemctl restart to READY"] = time.monotonic() - t0
    after = unit(node)
    assert after["ActiveState"] == "active"
    assert after["MainPID"] != before_unit["MainPID"]
    assert container_pid(node) == before_pid
    pod = json.loads(kubectl(kubeconfig, "get", "pod", f"web-{node.name}", "-o",
                             "json").stdout)
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0


WEDGE = """[Service]
Environment=PYKUBELET_FAILPOINTS=wedge-sync-loop,sync-loop-health-threshold=3
WatchdogSec=4
RestartSec=1
"""


def test_the_watchdog_restarts_a_wedged_agent(lab: tuple[NspawnLab, Path],
                                              timings: dict[str, float]) -> None:
    node, kubeconfig = lab[0].nodes[2], lab[1]
    pid = container_pid(node)
    node.sh("mkdir -p /run/systemd/system/pykubelet.service.d && cat > "
            "/run/systemd/system/pykubelet.service.d/50-wedge.conf <<'EOF'\n" + WEDGE + "EOF\n"
            "systemctl daemon-reload && systemctl restart pykubelet")
    t0 = time.monotonic()
    try:
        wait("a restart by the watchdog", lambda: int(unit(node)["NRestarts"]) >= 1, 90)
        timings["wedge to watchdog restart"] = time.monotonic() - t0
        journal = node.sh("journalctl -u pykubelet --no-pager").stdout
        assert "Watchdog timeout" in journal
        assert "not notifying the systemd watchdog" in journal  # the agent said why
    finally:
        node.sh("rm -f /run/systemd/system/pykubelet.service.d/50-wedge.conf && "
                "systemctl daemon-reload && systemctl restart pykubelet")
    assert unit(node)["ActiveState"] == "active"
    assert container_pid(node) == pid  # the container outlived the watchdog's kill too
    pod = json.loads(kubectl(kubeconfig, "get", "pod", f"web-{node.name}", "-o",
                             "json").stdout)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
