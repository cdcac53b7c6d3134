"""`pykubelet lab up/status/down` on real namespaces, links, runc containers and processes.

Each test drives the CLI as a user would, with its own kubeconfig file, and checks that
`down` leaves nothing behind: namespaces (nodes' and pods'), links, routes, mounts,
processes, cgroups, directories, CNI cache entries and kubeconfig entries. Lab names
start with ``tlab`` so leftovers are traceable to this module.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from pycni.ns import entered
from pykubelet import state_lock
from pykubelet.lab import network
from pykubelet.lab.layout import NETNS_DIR, RUN_ROOT, STATE_ROOT, LabLayout
from pykubelet.lab.processes import embedded_control_plane_available, tail
from pykubelet.lab.teardown import cached_netns
from pykubelet.runtime.netns import in_throwaway_thread
from pykubelet.runtime.service import default_netns_prefix

pytestmark = [pytest.mark.root, pytest.mark.netns, pytest.mark.runc, pytest.mark.slow]

JOIN = embedded_control_plane_available()  # the agent's join: nodes register and go Ready
WAIT = "120s" if JOIN else "0"


def lab_cli(*args: str, env: dict[str, str], timeout: float = 240,
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykubelet.cli.main", "lab", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig with someone else's context in it, which the lab must keep."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "other", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "other", "user": {"token": "x"}}],
        "contexts": [{"name": "other", "context": {"cluster": "other", "user": "other"}}]}))
    return path


@pytest.fixture
def env(kubeconfig: Path) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(kubeconfig)}


@pytest.fixture
def cleanup(env: dict[str, str]) -> Iterator[list[str]]:
    """Names of labs to remove whatever happens in the test."""
    names: list[str] = []
    yield names
    for name in names:
        lab_cli("down", "--name", name, env=env)


def traces(name: str, pin_prefixes: list[str], pids: list[int],
           pod_uids: list[str]) -> dict[str, list[str]]:
    """Everything of lab ``name`` still on the host (empty lists when clean)."""
    ours = (f"{STATE_ROOT}/{name}/", f"{RUN_ROOT}/{name}/")
    netns = sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(f"pykube-{name}-")
                   or any(n.startswith(p) for p in pin_prefixes))
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        links = sorted(str(m.get_attr("IFLA_IFNAME")) for m in ipr.get_links()
                       if str(m.get_attr("IFLA_IFNAME")).startswith(f"pkl-{name}")
                       or m.get_attr("IFLA_IFALIAS") == f"pykube-lab:{name}")
    with open("/proc/self/mountinfo") as f:
        mounts = [ln.split()[4] for ln in f if ln.split()[4].startswith(ours)
                  or any(ln.split()[4].startswith(f"{NETNS_DIR}/{p}") for p in pin_prefixes)]
    procs = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info.get("cmdline") or [])
        mine = any(o in cmd for o in ours) or p.info["pid"] in pids
        if mine and p.status() != psutil.STATUS_ZOMBIE:
            procs.append(f"{p.info['pid']} {cmd[:80]}")
    dirs = [d for d in (STATE_ROOT / name, RUN_ROOT / name) if d.exists()]
    results = Path("/var/lib/cni/results")
    cni = sorted(f.name for f in results.iterdir()
                 if f.name.startswith(f"pykube-{name}-")
                 or Path(cached_netns(f)).name.startswith(tuple(pin_prefixes))
                 ) if results.is_dir() else []
    cgroups = [str(d) for uid in pod_uids
               for d in Path("/sys/fs/cgroup").glob(f"*/kubepods/**/pod{uid}")]
    return {"netns": netns, "links": links, "mounts": mounts, "processes": procs,
            "dirs": [str(d) for d in dirs], "cni": cni, "cgroups": cgroups}


def assert_clean(found: dict[str, list[str]]) -> None:
    assert {k: v for k, v in found.items() if v} == {}


def static_web_pod(lab: LabLayout, index: int) -> None:
    node = lab.node(index)
    (node.manifests_dir / "web.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
            # ":latest" means Always to kubelet; the image is the node's own, never pulled
            "name": "web", "image": "localhost/busybox:latest", "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", f"echo hello-from-{node.name} > /tmp/index.html; "
                        "exec httpd -f -p 8080 -h /tmp"]}]}}))


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy


def node_pods(lab: LabLayout, index: int) -> list[dict[str, Any]]:
    """The pods a node's agent reports on its status port (its lab address)."""
    with _DIRECT.open(f"http://{lab.node(index).address}:10248/pods", timeout=2) as r:
        return list(json.load(r)["items"])


def wait_running(lab: LabLayout, index: int, timeout: float = 90) -> dict[str, Any]:
    end = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < end:
        try:
            last = node_pods(lab, index)
        except OSError as exc:
            last = exc
            time.sleep(0.3)
            continue
        for p in last:
            st = p.get("status") or {}
            if st.get("phase") == "Running" and st.get("podIP"):
                return p
        time.sleep(0.3)
    node = lab.node(index)
    logs = f"--- {node.agent_log.name} (the runtime's log included):\n{tail(node.agent_log, 40)}"
    raise AssertionError(f"{node.name}: no Running pod after {timeout}s; /pods: "
                         f"{str(last)[:1500]}\n{logs}")


def fetch_from(netns: Path, ip: str, timeout: float = 20) -> str:
    """GET the web pod's page from inside ``netns`` (a throwaway thread joins it), retried
    while httpd starts listening: Running says the container started, not that it serves."""
    def get() -> str:
        with entered(str(netns)), urllib.request.urlopen(
                f"http://{ip}:8080/index.html", timeout=3) as r:
            return r.read().decode().strip()

    end = time.monotonic() + timeout
    while True:
        try:
            return in_throwaway_thread(get, "lab-fetch")
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.3)


def pins_of(lab: LabLayout) -> list[str]:
    return [default_netns_prefix(n.root_dir) for n in lab.node_layouts()]


def read_state(lab: LabLayout) -> dict[str, Any]:
    return json.loads(lab.state_file.read_text())


def restart_by_hand(pid: int) -> subprocess.Popen[bytes]:
    """SIGKILL a lab process and start it again as a person would: the same command line
    in the same node namespace, logging to the same file."""
    proc = psutil.Process(pid)
    argv, penv = proc.cmdline(), proc.environ()
    log_path = os.readlink(f"/proc/{pid}/fd/1")
    netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        proc.kill()
        proc.wait(10)
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                ["nsenter", f"--net=/proc/self/fd/{netns}", "--", *argv], env=penv,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(netns,), start_new_session=True)
    finally:
        os.close(netns)


def test_up_status_down_leaves_nothing(env: dict[str, str], kubeconfig: Path,
                                       cleanup: list[str]) -> None:
    name = "tlabud"
    cleanup.append(name)
    reap_later: list[subprocess.Popen[bytes]] = []
    try:
        _up_status_down(name, env, kubeconfig, reap_later)
    finally:
        for p in reap_later:  # lab down stops it (ours to reap)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _up_status_down(name: str, env: dict[str, str], kubeconfig: Path,
                    reap_later: list[subprocess.Popen[bytes]]) -> None:
    up = lab_cli("up", "--nodes", "2", "--name", name, "--wait", WAIT, env=env)
    assert up.returncode == 0, up.stderr
    assert " ✓ Creating the lab network (pkl-tlabud, 10.250." in up.stderr
    st = yaml.safe_load(kubeconfig.read_text())
    assert st["current-context"] == f"pykube-{name}"
    assert {c["name"] for c in st["contexts"]} == {"other", f"pykube-{name}"}

    status = lab_cli("status", "--name", name, "-o", "json", env=env)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    k = read_state(LabLayout(name, 2))["subnet_index"]
    lab = LabLayout(name, 2, k)
    assert doc["name"] == name
    assert [n["name"] for n in doc["nodes"]] == ["node1", "node2"]
    assert [n["address"] for n in doc["nodes"]] == [lab.node(1).address, lab.node(2).address]
    assert all(psutil.pid_exists(n["agentPid"]) for n in doc["nodes"])
    assert doc["nodes"][0]["controlPlanePid"] is not None
    assert doc["nodes"][1]["controlPlanePid"] is None
    assert all(n["etcdPid"] is None for n in doc["nodes"])
    assert doc["leader"] == "node1"
    if JOIN:
        assert [n["ready"] for n in doc["nodes"]] == [True, True]
    # the host reaches the API on node 1's lab address through the merged context
    from pykubelet.client.rest import NAMESPACES, RESTClient

    client = RESTClient.from_kubeconfig(kubeconfig)
    assert client.server == lab.control_node.api_server
    assert "kube-system" in {n["metadata"]["name"] for n in client.list(NAMESPACES)["items"]}
    # node1's control-plane role: set by the control plane, no node sets it on itself
    from pykubelet.client.rest import NODES

    roles = {n["metadata"]["name"]: "node-role.kubernetes.io/control-plane" in n["metadata"][
        "labels"] for n in client.list(NODES)["items"]}
    assert roles == {"node1": True, "node2": False}
    # host-gw: each node routes the other's pod CIDR through its lab address
    assert network.node_routes(lab.node(1).netns) == [("10.244.2.0/24", lab.node(2).address)]
    assert network.node_routes(lab.node(2).netns) == [("10.244.1.0/24", lab.node(1).address)]

    again = lab_cli("up", "--nodes", "1", "--name", name, env=env)
    assert again.returncode != 0
    assert again.stderr.strip().splitlines()[-1] == (
        f"Error: lab '{name}' already exists (remove it with: pykubelet lab down --name "
        f"{name})")
    assert [psutil.pid_exists(n["agentPid"]) for n in doc["nodes"]] == [True, True]

    # pods on both nodes reach each other by their own addresses
    static_web_pod(lab, 1)
    static_web_pod(lab, 2)
    web1, web2 = wait_running(lab, 1), wait_running(lab, 2)
    assert web1["status"]["podIP"].startswith("10.244.1.")
    assert web2["status"]["podIP"].startswith("10.244.2.")
    pin1 = [p for p in os.listdir(NETNS_DIR) if p.startswith(pins_of(lab)[0])]
    assert len(pin1) == 1, pin1
    assert fetch_from(NETNS_DIR / pin1[0], web2["status"]["podIP"]) == "hello-from-node2"
    table = lab_cli("status", "--name", name, env=env)
    assert f"node1  {lab.node(1).address}" in table.stdout

    # node2's agent killed: `lab restart-node` starts it again as `up` did, its pod stays
    killed = psutil.Process(doc["nodes"][1]["agentPid"])
    killed.kill()
    killed.wait(10)
    again = lab_cli("restart-node", "node2", "--name", name, "--wait", WAIT, env=env)
    assert again.returncode == 0, again.stderr
    assert "node2: started the agent (pid " in again.stderr
    after = json.loads(lab_cli("status", "--name", name, "-o", "json", env=env).stdout)
    agent2 = after["nodes"][1]["agentPid"]
    assert agent2 != doc["nodes"][1]["agentPid"]
    assert psutil.pid_exists(agent2)
    if JOIN:
        assert after["nodes"][1]["ready"]
    assert wait_running(lab, 2)["metadata"]["uid"] == web2["metadata"]["uid"]
    nothing = lab_cli("restart-node", "node2", "--name", name, env=env)
    assert nothing.returncode == 0, nothing.stderr
    assert f"node2: nothing to start; running: agent (pid {agent2})" in nothing.stderr
    # started again by hand (as the e2e tests once did): restart-node adopts it
    hand = restart_by_hand(agent2)
    try:
        adopted = lab_cli("restart-node", "node2", "--name", name, env=env)
        assert adopted.returncode == 0, adopted.stderr
        assert f"node2: nothing to start; running: agent (pid {hand.pid})" in adopted.stderr
        assert read_state(lab)["processes"]["node2"]["agent"]["pid"] == hand.pid
    finally:
        reap_later.append(hand)
    unknown = lab_cli("restart-node", "node9", "--name", name, env=env)
    assert unknown.returncode != 0
    assert unknown.stderr.strip().splitlines() == [
        f"Error: lab '{name}' has no node 'node9' (its nodes: node1, node2)"]

    loaded_uid = _load_images(name, lab, env, reap_later)

    pids = [n["agentPid"] for n in doc["nodes"]] + [agent2, hand.pid]
    uids = [web1["metadata"]["uid"], web2["metadata"]["uid"], loaded_uid]
    down = lab_cli("down", "--name", name, env=env)
    assert down.returncode == 0, down.stderr
    assert " ✓ Stopping pods" in down.stderr
    # kubectl pointed at the lab: down says so, and what is left, as kubectl says nothing
    assert (f"note: kubectl's current context was pykube-{name} and is now unset; contexts "
            "left: other (choose one with: kubectl config use-context other)") in down.stderr
    assert_clean(traces(name, pins_of(lab), pids, uids))
    st = yaml.safe_load(kubeconfig.read_text())
    assert [c["name"] for c in st["contexts"]] == ["other"]
    assert [c["name"] for c in st["clusters"]] == ["other"]
    assert [u["name"] for u in st["users"]] == ["other"]
    assert st["current-context"] == ""

    twice = lab_cli("down", "--name", name, env=env)
    assert twice.returncode == 0
    assert f"lab '{name}': nothing to remove" in twice.stderr


def _load_images(name: str, lab: LabLayout, env: dict[str, str],
                 reap_later: list[subprocess.Popen[bytes]]) -> str:
    """The lab's busybox carries its release as a tag; `lab load` puts an archive, or an
    image of the host's store, onto every node, and a pod starts it without a registry.
    Returns the uid of that pod."""
    import tempfile

    from pykubelet.runtime.image_build import build_busybox_image, busybox_version
    from pykubelet.runtime.images import ImageStore

    version = busybox_version()
    assert version
    for node in lab.node_layouts():
        tags = {t for i in ImageStore(node.root_dir / "images").list() for t in i.repo_tags}
        assert {f"localhost/busybox:{version}", "localhost/busybox:latest"} <= tags
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "app.tar"
        build_busybox_image(archive, name="localhost/app:1.0", env=["APP=archive"])
        got = lab_cli("load", archive.as_posix(), "--name", name, env=env)
        assert got.returncode == 0, got.stderr
        assert "(localhost/app:1.0) loaded onto 2 nodes: node1, node2" in got.stderr
        host = Path(tmp) / "host"
        build_busybox_image(Path(tmp) / "h.tar", name="localhost/fromhost:2.0",
                            env=["APP=host"], cmd=["sh"])
        ImageStore(host / "images").import_archive(Path(tmp) / "h.tar")
        got = lab_cli("load", "localhost/fromhost:2.0", "--name", name, "--root",
                      host.as_posix(), env=env)
        assert got.returncode == 0, got.stderr
        assert "(localhost/fromhost:2.0) loaded onto 2 nodes" in got.stderr
        missing = lab_cli("load", "localhost/nosuch:1", "--name", name, "--root",
                          host.as_posix(), env=env)
        assert missing.returncode != 0
        assert missing.stderr.strip().splitlines() == [
            "Error: image 'localhost/nosuch:1': no such file, and image: image "
            "'localhost/nosuch:1' not found in the local image store"]
        nolab = lab_cli("load", archive.as_posix(), "--name", "tlabnone", env=env)
        assert nolab.stderr.strip().splitlines() == [
            "Error: lab 'tlabnone' not found (create it with: pykubelet lab up --name "
            "tlabnone)"]
    for node in lab.node_layouts():
        store = ImageStore(node.root_dir / "images")
        assert store.get("localhost/app:1.0") is not None
        assert store.get("localhost/fromhost:2.0") is not None
    # a version tag: IfNotPresent by default, so the node's copy runs, no registry asked
    node2 = lab.node(2)
    (node2.manifests_dir / "loaded.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "loaded", "namespace": "default"},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
            "name": "c", "image": "localhost/fromhost:2.0",
            "command": ["sh", "-c", "echo $APP > /tmp/index.html; exec httpd -f -p 8080 -h /tmp"]
        }]}}))
    end = time.monotonic() + 60
    while True:
        pods = [p for p in node_pods(lab, 2) if p["metadata"]["name"].startswith("loaded")]
        if pods and (pods[0].get("status") or {}).get("phase") == "Running":
            return str(pods[0]["metadata"]["uid"])
        assert time.monotonic() < end, (f"loaded pod not Running: {pods}\n"
                                        f"{tail(node2.agent_log, 30)}")
        time.sleep(0.5)


def test_down_after_a_crash_of_up_and_of_the_node_processes(env: dict[str, str],
                                                             cleanup: list[str]) -> None:
    name = "tlabcr"
    cleanup.append(name)
    up = subprocess.Popen([sys.executable, "-m", "pykubelet.cli.main", "lab", "up", "--nodes",
                           "2", "--name", name, "--wait", WAIT], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state_file = LabLayout(name, 2).state_file
    end = time.monotonic() + 60
    agent = None
    while agent is None and time.monotonic() < end:
        try:
            agent = (read_state(LabLayout(name, 2))["processes"].get("node1") or {}).get("agent")
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    assert agent is not None, "up never started node1's agent"
    up.send_signal(signal.SIGKILL)  # `up` dies half-way: node1 runs, node2 never started
    up.wait(10)
    lab = LabLayout(name, 2, json.loads(state_file.read_text())["subnet_index"])
    static_web_pod(lab, 1)
    web = wait_running(lab, 1)
    pin = [p for p in os.listdir(NETNS_DIR) if p.startswith(pins_of(lab)[0])]
    assert len(pin) == 1
    in_pod = [p.pid for p in psutil.process_iter()
              if _netns_ino(p.pid) == os.stat(NETNS_DIR / pin[0]).st_ino]
    assert in_pod, "the pod's container runs"
    status = lab_cli("status", "--name", name, env=env)
    assert status.returncode == 0, status.stderr

    # then the node's own processes crash: agent, its runtime, node 1's control plane
    runtime_pid = state_lock.holder(lab.node(1).root_dir / state_lock.RUNTIME_LOCK)
    assert runtime_pid, "node1's embedded runtime holds its root"
    procs = read_state(lab)["processes"]["node1"]
    crashed = [agent["pid"], runtime_pid] + (
        [procs["control_plane"]["pid"]] if procs.get("control_plane") else [])
    for pid in crashed:
        os.kill(pid, signal.SIGKILL)
    assert all(psutil.pid_exists(p) for p in in_pod), "containers outlive their runtime"

    down = lab_cli("down", "--name", name, env=env)
    assert down.returncode == 0, down.stderr
    assert_clean(traces(name, pins_of(lab), crashed + in_pod, [web["metadata"]["uid"]]))


def _netns_ino(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


@pytest.mark.parametrize(("args", "error"), [
    (["up", "--nodes", "0", "--name", "tlabbad"], "--nodes: must be between 1 and 50, got 0"),
    (["up", "--nodes", "2", "--name", "Bad_Name"], "--name: 'Bad_Name' must be 1-32"),
    (["up", "--name", "tlabbad", "--wait", "soon"], "--wait: 'soon' is not a duration"),
    (["status", "--name", "tlabbad"], "lab 'tlabbad' not found"),
    (["restart-node", "node1", "--name", "tlabbad"], "lab 'tlabbad' not found"),
    (["restart-node", "node1", "--name", "tlabbad", "--wait", "x"], "--wait: 'x' is not a"),
])
def test_bad_input_is_one_clear_line_and_changes_nothing(env: dict[str, str], args: list[str],
                                                         error: str) -> None:
    got = lab_cli(*args, env=env, timeout=60)
    assert got.returncode != 0
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("Error: ")
    assert error in lines[0]
    assert not (STATE_ROOT / "tlabbad").exists()
    assert not network.link_exists("pkl-tlabbad")
    assert not any(n.startswith("pykube-tlabbad-") for n in os.listdir(NETNS_DIR))
