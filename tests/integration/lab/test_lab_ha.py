"""A highly available lab (``pykubelet lab up --nodes 4 --control-planes 3 --store etcd``)
failing over for real: three etcd members and three control planes in node namespaces, a
front load balancer on the host, agents load-balancing over the API servers.

What is killed is killed with SIGKILL (or cut off with its link down), and then started
again by `pykubelet lab restart-node`, as the lab started it. Each test checks what a user
would: the scheduler moves to another control plane, pods created meanwhile through
another API server run, no acknowledged write is lost, a watch resumes elsewhere without
a gap or a repeat, and a partitioned control node neither binds nor splits the brain, and
rejoins. Lab names start with ``tha`` so leftovers are traceable to this module.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pykubelet.client.rest import CONFIGMAPS, LEASES, PODS, ClientError, RESTClient
from pykubelet.lab.layout import LabLayout

pytestmark = [pytest.mark.root, pytest.mark.netns, pytest.mark.runc, pytest.mark.slow]

LAB = "tha"
LEASE = 4.0  # the control planes' leader-election lease (renew 2.7 s, retry 0.5 s)
IMAGE = "localhost/busybox:latest"


def wait_for(predicate: Callable[[], Any], timeout: float = 60, what: str = "") -> Any:
    end = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            got = predicate()
        except (ClientError, OSError, ValueError) as exc:
            got, last = None, exc
        if got:
            return got
        if time.monotonic() > end:
            said = f" (last error: {last})" if last is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{said}")
        time.sleep(0.2)


def lab_cli(*args: str, env: dict[str, str], timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykubelet.cli.main", "lab", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)


class HALab:
    def __init__(self, env: dict[str, str], kubeconfig: Path) -> None:
        self.env = env
        self.kubeconfig = kubeconfig
        st = json.loads((Path("/var/lib/pykube-lab") / LAB / "lab.json").read_text())
        self.layout = LabLayout(LAB, st["nodes"], st["subnet_index"],
                                control_planes=st["control_planes"])

    # ------------------------------------------------------------------ views
    def status(self) -> dict[str, Any]:
        out = lab_cli("status", "--name", LAB, "-o", "json", env=self.env, timeout=60)
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))

    def node(self, name: str) -> dict[str, Any]:
        return next(n for n in self.status()["nodes"] if n["name"] == name)

    def client(self, server: str = "") -> RESTClient:
        """An admin client on ``server`` (a control node's API server), else the front."""
        c = RESTClient.from_kubeconfig(self.kubeconfig, user_agent="test-lab-ha")
        if server:
            c.server = server
        c.timeout = 30.0  # a write may wait for etcd to move off a cut-off member
        return c

    def leader(self, client: RESTClient | None = None) -> str:
        """The node whose control plane holds the scheduler's lease now."""
        lease = (client or self.client()).get(LEASES, "kube-scheduler", "kube-system")
        holder = str(lease["spec"].get("holderIdentity") or "")
        return holder.split("_", 1)[0]

    def kubectl(self, *args: str, input: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(["kubectl", *args], capture_output=True, text=True, input=input,
                             env=self.env, timeout=60)
        if check:
            assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
        return res

    # ------------------------------------------------------------------ processes
    def kill(self, pid: int | None) -> None:
        """SIGKILL a lab process, which `lab restart-node` then starts again."""
        assert isinstance(pid, int), pid
        assert pid != os.getpid()
        proc = psutil.Process(pid)
        proc.kill()
        proc.wait(10)

    def restart_node(self, node: str, started: str) -> None:
        """`pykubelet lab restart-node NODE`, which must say it started ``started``."""
        res = lab_cli("restart-node", node, "--name", LAB, env=self.env)
        assert res.returncode == 0, res.stderr
        assert f"{node}: started the {started} (pid " in res.stderr, res.stderr

    def link(self, node: str, up: bool) -> None:
        index = int(node.removeprefix("node"))
        subprocess.run(["ip", "link", "set", self.layout.node(index).host_veth,
                        "up" if up else "down"], check=True)


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HALab]:
    kubeconfig = tmp_path_factory.mktemp("tha") / "kubeconfig"
    env = dict(os.environ, KUBECONFIG=str(kubeconfig),
               KUBECACHEDIR=str(kubeconfig.parent / "cache"))
    lab_cli("down", "--name", LAB, env=env)
    up = lab_cli("up", "--name", LAB, "--nodes", "4", "--control-planes", "3", "--store",
                 "etcd", "--leader-elect-lease-duration", f"{LEASE:g}s",
                 "--node-monitor-grace-period", "20", env=env)
    if up.returncode != 0:
        lab_cli("down", "--name", LAB, env=env)
        pytest.fail(f"lab up failed:\n{up.stdout}\n{up.stderr}")
    lab = HALab(env, kubeconfig)
    try:
        yield lab
    finally:
        for i in range(1, 5):  # a failed partition test must not leave a link down
            subprocess.run(["ip", "link", "set", lab.layout.node(i).host_veth, "up"],
                           capture_output=True)
        down = lab_cli("down", "--name", LAB, env=env)
        assert down.returncode == 0, down.stderr
        netns = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
        assert not [n for n in netns if n.startswith(f"pykube-{LAB}-")], netns
        left = [p.info["cmdline"] for p in psutil.process_iter(["cmdline"])
                if any(f"/pykube-lab/{LAB}/" in a for a in p.info["cmdline"] or [])]
        assert not left, left


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 2, **spec, "containers": [{
                "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"]}]}}


def running(client: RESTClient, name: str) -> bool:
    st = client.get(PODS, name, "default").get("status") or {}
    cs = st.get("containerStatuses") or []
    return st.get("phase") == "Running" and bool(cs) and all(c.get("ready") for c in cs)


def member_keys(client_url: str, prefix: str) -> set[str]:
    """The names under ``prefix`` in one etcd member's own copy (a serializable range
    through etcd's JSON gateway, answered by that member alone)."""
    end = bytearray(prefix.encode())
    end[-1] += 1
    body = json.dumps({"key": base64.b64encode(prefix.encode()).decode(),
                       "range_end": base64.b64encode(bytes(end)).decode(),
                       "keys_only": True, "serializable": True}).encode()
    req = urllib.request.Request(f"{client_url}/v3/kv/range", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        kvs = json.load(r).get("kvs") or []
    return {base64.b64decode(kv["key"]).decode().rsplit("/", 1)[-1] for kv in kvs}


def delete_pods(client: RESTClient, names: list[str]) -> None:
    for n in names:
        try:
            client.delete(PODS, n, "default", grace_period_seconds=0)
        except ClientError:
            pass


# ---------------------------------------------------------------------- the tests
def test_status_names_members_leader_and_each_agents_api_server(ha: HALab) -> None:
    st = ha.status()
    control = [n.api_server for n in ha.layout.control_nodes()]
    assert st["front"] == ha.layout.front_server
    members = st["members"]
    assert [m["name"] for m in members] == ["node1", "node2", "node3"]
    assert all(m["healthy"] and m["pid"] for m in members), members
    assert sum(m["leader"] for m in members) == 1, members
    assert st["leader"] in ("node1", "node2", "node3")
    for n in st["nodes"]:
        i = int(n["name"].removeprefix("node"))
        assert n["ready"], n
        assert n["agentPid"], n
        if i <= 3:
            assert n["controlPlanePid"], n
            assert n["etcdPid"], n
            assert len({n["agentPid"], n["controlPlanePid"], n["etcdPid"]}) == 3
        else:
            assert (n["controlPlanePid"], n["etcdPid"]) == (None, None), n
        # each agent prefers its own control plane, node 4 the first again
        assert n["apiServer"] == control[(i - 1) % 3], n
    # kubectl goes through the front address, which the kubeconfig context names
    nodes = ha.kubectl("get", "nodes", "-o", "name").stdout.split()
    assert nodes == [f"node/node{i}" for i in range(1, 5)]
    assert ha.layout.front_server in ha.kubeconfig.read_text()


def test_leader_sigkill_another_schedules_and_agents_fail_over(ha: HALab) -> None:
    leader = ha.leader()
    other = next(n for n in ha.layout.control_nodes() if n.name != leader)
    dead = ha.layout.node(int(leader.removeprefix("node")))
    client = ha.client(other.api_server)
    dead_pid = ha.node(leader)["controlPlanePid"]
    ha.kill(dead_pid)
    names = [f"after-kill-{i}" for i in range(3)]
    try:
        for n in names:  # created through another API server right away
            client.create(PODS, pod(n), "default")
        new = wait_for(lambda: (lead := ha.leader(client)) != leader and lead, 3 * LEASE + 10,
                       "another control plane to take the scheduler's lease")
        assert new in ("node1", "node2", "node3")
        wait_for(lambda: all(client.get(PODS, n, "default")["spec"].get("nodeName")
                             for n in names), 3 * LEASE + 20, "the pods to be bound")
        wait_for(lambda: all(running(client, n) for n in names), 90, "the pods to run")
        # the agents that used the dead API server went on through another one
        users = [n for n in ha.status()["nodes"] if n["apiServer"] == dead.api_server]
        assert users == [], users
        node = wait_for(lambda: ha.node(dead.name), 30, "status")
        assert node["ready"], node
        assert node["agentPid"], node
    finally:
        delete_pods(client, names)
        ha.restart_node(dead.name, "control plane")  # as `lab up` started it
    assert ha.client(dead.api_server).request("GET", "/readyz") == "ok"
    assert ha.node(dead.name)["controlPlanePid"] != dead_pid
    # one holder, a live control plane (the restarted one comes back as a candidate)
    assert ha.leader(client) in ("node1", "node2", "node3")


def test_etcd_member_sigkill_loses_no_acknowledged_write_and_it_rejoins(ha: HALab) -> None:
    client = ha.client()  # the front
    acked: list[str] = []
    errors: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            name = f"w-{i}"
            try:
                client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": name}, "data": {"i": str(i)}},
                              "default")
                acked.append(name)
            except ClientError as exc:  # refused is fine; acknowledged-then-lost is not
                errors.append(str(exc))
            i += 1

    st = ha.status()
    victim = next(m for m in st["members"] if m["leader"])  # the raft leader: the worst case
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        wait_for(lambda: len(acked) >= 20, 30, "writes before the kill")
        ha.kill(victim["pid"])
        before = len(acked)
        wait_for(lambda: len(acked) >= before + 50, 60, "writes to go on without the member")
        ha.restart_node(victim["name"], "etcd member")  # which waits until it is healthy
        assert next(m for m in ha.status()["members"]
                    if m["name"] == victim["name"])["healthy"]
        after = len(acked)
        wait_for(lambda: len(acked) >= after + 20, 30, "writes with the member back")
    finally:
        stop.set()
        t.join(30)
    stored = {c["metadata"]["name"] for c in client.list(CONFIGMAPS, "default")["items"]}
    lost = [n for n in acked if n not in stored]
    assert lost == [], f"{len(lost)} acknowledged writes lost: {lost[:5]}"
    # the rejoined member has every write too: a serializable read of its own copy
    member = ha.layout.node(int(victim["name"].removeprefix("node")))
    wait_for(lambda: set(acked) <= member_keys(member.etcd_client_url,
                                               "/registry/configmaps/default/w-"), 30,
             "the rejoined member's copy to hold every acknowledged write")
    for n in acked:
        client.delete(CONFIGMAPS, n, "default")


def test_watch_resumes_on_another_api_server_without_gap_or_repeat(ha: HALab) -> None:
    first, second = ha.layout.control_nodes()[:2]
    a, b = ha.client(first.api_server), ha.client(second.api_server)
    rv = a.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
    names = [f"wr-{i}" for i in range(40)]
    seen: list[str] = []
    stream = a.watch(CONFIGMAPS, "default", resource_version=rv, bookmarks=False)
    created = 0

    def create(n: int) -> None:
        nonlocal created
        for name in names[created:created + n]:
            b.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": name}}, "default")
        created += n

    create(20)
    with contextlib.closing(stream):
        for ev in stream:  # half of them through the first API server
            seen.append(ev["object"]["metadata"]["name"])
            rv = ev["object"]["metadata"]["resourceVersion"]
            if len(seen) == 10:
                break
        ha.kill(ha.node(first.name)["controlPlanePid"])
    a.pool.clear()  # its connection went with the server
    try:
        create(20)
        resumed = b.watch(CONFIGMAPS, "default", resource_version=rv, bookmarks=False,
                          timeout_seconds=30)
        with contextlib.closing(resumed):
            for ev in resumed:
                assert ev["type"] == "ADDED", ev
                seen.append(ev["object"]["metadata"]["name"])
                if len(seen) == len(names):
                    break
        b.pool.clear()
    finally:
        ha.restart_node(first.name, "control plane")
    assert seen == names  # in order, none missing, none twice
    for n in names:
        b.delete(CONFIGMAPS, n, "default")
    assert a.request("GET", "/readyz") == "ok"  # the first API server again


def test_partitioned_control_node_neither_binds_nor_splits_and_rejoins(ha: HALab) -> None:
    leader = ha.leader()
    cut = ha.layout.node(int(leader.removeprefix("node")))
    other = next(n for n in ha.layout.control_nodes() if n.name != leader)
    client = ha.client(other.api_server)
    names = [f"split-{i}" for i in range(4)]
    ha.link(cut.name, up=False)
    try:
        new = wait_for(lambda: (lead := ha.leader(client)) != leader and lead, 3 * LEASE + 15,
                       "a leader on the majority side")
        for n in names:
            client.create(PODS, pod(n, nodeSelector={"kubernetes.io/hostname": "node4"}),
                          "default")
        wait_for(lambda: all(running(client, n) for n in names), 90, "the pods to run")
        # the cut-off control plane cannot lead: its etcd member has no quorum (the lease
        # may move between the two on the majority side while etcd elects a raft leader)
        assert new != cut.name
        assert ha.leader(client) != cut.name
        # node 4's agent went on through a reachable API server
        assert ha.node("node4")["apiServer"] != cut.api_server
    finally:
        ha.link(cut.name, up=True)
    try:
        # once back, its member rejoins and its API server serves the same pods
        wait_for(lambda: next(m for m in ha.status()["members"]
                              if m["name"] == cut.name)["healthy"], 60, "the member back")
        back = ha.client(cut.api_server)
        wait_for(lambda: back.request("GET", "/readyz") == "ok", 60, "its API server")
        # a consistent read through it waits for its watch cache to hold etcd's revision:
        # the cache caught up (its watch resumed after the calls that failed meanwhile)
        pods = {p["metadata"]["name"]: p for p in wait_for(
            lambda: back.list(PODS, "default")["items"], 30, "a list through it")}
        assert all(pods[n]["spec"]["nodeName"] == "node4" for n in names)
        # one binding per pod: exactly one Scheduled event each, by one scheduler
        events = client.request("GET", "/api/v1/namespaces/default/events",
                                params={"fieldSelector": "reason=Scheduled"})["items"]
        for n in names:
            mine = [e for e in events if e["involvedObject"]["name"] == n]
            assert len(mine) == 1, mine
        assert ha.leader(client) in ("node1", "node2", "node3")
        wait_for(lambda: ha.node(cut.name)["ready"], 60, f"{cut.name} Ready again")
    finally:
        delete_pods(client, names)
