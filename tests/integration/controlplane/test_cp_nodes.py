"""Nodes joined to a real control plane (marker root: real runc, namespaces, bridges):
registration and heartbeats, pods bound to a node running there with their status in the
API, logs through the API, graceful deletion carried out by the node, mirror pods, and the
failures: an agent SIGKILLed and restarted, a control plane SIGKILLed and restarted."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_process import KUBECTL, ControlPlaneProcess, wait_for
from node_process import IMAGE, NodeProcess, namespace_for, node_cluster, node_ready

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

STATIC = f"""
apiVersion: v1
kind: Pod
metadata: {{name: kcn-static}}
spec:
  terminationGracePeriodSeconds: 1  # sh ignores SIGTERM: the module's teardown waits no 30 s
  containers:
  - name: c
    image: {IMAGE}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo static-ready; sleep 3600"]
"""


def pod(name: str, command: str, grace: int = 30, restart: str = "Always",
        labels: dict[str, str] | None = None) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": grace,
                 "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                 "command": ["sh", "-c", command]}]}})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlaneProcess,
                                                                       NodeProcess]]:
    with node_cluster(tmp_path_factory.mktemp("kcn"), "kcn-node1", 1,
                      cp_args=["--node-monitor-grace-period", "6"],
                      static_pods={"static.yaml": STATIC}) as both:
        yield both


@pytest.fixture
def ns(cluster: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    with namespace_for(cluster[0], request, "kcn") as name:
        yield name


def _pod(cp: ControlPlaneProcess, ns: str, name: str) -> dict[str, Any]:
    out = cp.kubectl("get", "pod", name, "-n", ns, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def _running(cp: ControlPlaneProcess, ns: str, name: str) -> bool:
    st = _pod(cp, ns, name).get("status", {})
    return st.get("phase") == "Running" and all(
        c.get("ready") for c in st.get("containerStatuses") or [{}])


def test_node_registers_with_real_facts_and_a_lease(cluster: Any) -> None:
    cp, node = cluster
    obj = json.loads(cp.kubectl("get", "node", node.name, "-o", "json").stdout)
    labels = obj["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == node.name
    assert labels["kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/arch"]
    assert labels["test/node"] == node.name
    assert obj["spec"]["podCIDR"] == node.subnet
    info = obj["status"]["nodeInfo"]
    assert info["kubeletVersion"].startswith("v1.32.0+pykube")
    assert info["containerRuntimeVersion"].startswith("pykubelet://")
    assert info["kernelVersion"]
    assert info["osImage"]
    assert info["machineID"]
    types = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert types == {"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False",
                     "PIDPressure": "False"}
    assert int(obj["status"]["capacity"]["cpu"]) >= 1
    assert any(a["type"] == "InternalIP" for a in obj["status"]["addresses"])
    assert any(IMAGE in i["names"] for i in obj["status"]["images"])
    lease = json.loads(cp.kubectl("get", "lease", node.name, "-n", "kube-node-lease",
                                  "-o", "json").stdout)
    first = lease["spec"]["renewTime"]
    wait_for(lambda: json.loads(cp.kubectl("get", "lease", node.name, "-n", "kube-node-lease",
                                           "-o", "json").stdout)["spec"]["renewTime"] != first,
             timeout=25, what="lease renewal")


def test_static_pod_has_a_mirror(cluster: Any) -> None:
    cp, node = cluster
    name = f"kcn-static-{node.name}"
    wait_for(lambda: _running(cp, "default", name), timeout=60, what="mirror pod Running")
    obj = _pod(cp, "default", name)
    assert "kubernetes.io/config.mirror" in obj["metadata"]["annotations"]
    assert obj["spec"]["nodeName"] == node.name
    assert cp.kubectl("logs", name).stdout.strip() == "static-ready"


def test_pod_runs_reports_and_logs(cluster: Any, ns: str) -> None:
    cp, node = cluster
    cp.kubectl("create", "-n", ns, "-f", "-",
               input=pod("counter", "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.2; "
                                    "done"))
    wait_for(lambda: _running(cp, ns, "counter"), timeout=60, what="Running")
    st = _pod(cp, ns, "counter")["status"]
    assert st["podIP"].startswith(node.subnet.rsplit(".", 2)[0])
    assert st["hostIP"]
    assert st["startTime"]
    assert st["qosClass"] == "BestEffort"
    cs = st["containerStatuses"][0]
    assert cs["state"]["running"]["startedAt"]
    assert cs["imageID"]
    assert cs["containerID"]
    conds = {c["type"]: c["status"] for c in st["conditions"]}
    assert conds["Ready"] == "True"
    assert conds["PodScheduled"] == "True"
    time.sleep(1)
    tail = cp.kubectl("logs", "counter", "-n", ns, "--tail", "2").stdout.splitlines()
    assert len(tail) == 2
    assert all(line.startswith("line ") for line in tail)
    stamped = cp.kubectl("logs", "counter", "-n", ns, "--tail", "1", "--timestamps").stdout
    assert stamped.split(" ", 1)[0].endswith("Z") or "+00:00" in stamped.split(" ", 1)[0]
    follow = cp.kubectl_bg("logs", "-f", "counter", "-n", ns, "--tail", "1")
    time.sleep(1.5)
    follow.terminate()
    out, _ = follow.communicate(timeout=10)
    assert len(out.splitlines()) >= 3  # it kept streaming
    events = cp.kubectl("get", "events", "-n", ns, "--field-selector",
                        "involvedObject.name=counter").stdout
    assert "Started" in events
    assert "Created" in events


def test_previous_logs_after_a_restart(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    cp.kubectl("create", "-n", ns, "-f", "-",
               input=pod("flaky", "echo run at $(date +%s%N); sleep 1; exit 3"))
    wait_for(lambda: (_pod(cp, ns, "flaky").get("status", {}).get("containerStatuses")
                      or [{}])[0].get("restartCount", 0) >= 1, timeout=60, what="a restart")
    prev = cp.kubectl("logs", "flaky", "-n", ns, "--previous").stdout
    assert prev.startswith("run at ")
    status = _pod(cp, ns, "flaky")["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["exitCode"] == 3


def test_graceful_deletion_is_carried_out_by_the_node(cluster: Any, ns: str) -> None:
    cp, node = cluster
    cp.kubectl("create", "-n", ns, "-f", "-",
               input=pod("polite", "trap 'echo bye; exit 0' TERM; while true; do sleep 0.1; "
                                   "done", grace=20))
    wait_for(lambda: _running(cp, ns, "polite"), timeout=60, what="Running")
    uid = _pod(cp, ns, "polite")["metadata"]["uid"]
    t0 = time.monotonic()
    cp.kubectl("delete", "pod", "polite", "-n", ns, "--wait=true", timeout=60)
    took = time.monotonic() - t0
    assert took < 15, f"the node took {took:.1f}s to finish a graceful delete"
    with node.cri() as cri:
        left = [c for c in cri.list_containers() if c.labels.get("io.kubernetes.pod.uid") == uid]
    assert left == []


def test_agent_sigkill_node_unknown_then_back_without_duplicates(cluster: Any,
                                                                  ns: str) -> None:
    cp, node = cluster
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod("survivor", "sleep 3600"))
    wait_for(lambda: _running(cp, ns, "survivor"), timeout=60, what="Running")
    uid = _pod(cp, ns, "survivor")["metadata"]["uid"]

    def containers() -> list[str]:
        with node.cri() as cri:
            return [c.id for c in cri.list_containers()
                    if c.labels.get("io.kubernetes.pod.uid") == uid]

    before = containers()
    node.kill()
    wait_for(lambda: node_ready(cp, node.name) == "Unknown", timeout=30, what="Ready=Unknown")
    assert containers() == before  # the pod kept running
    node.start()
    wait_for(lambda: node_ready(cp, node.name) == "True", timeout=60, what="Ready again")
    taints = json.loads(cp.kubectl("get", "node", node.name, "-o", "json").stdout)[
        "spec"].get("taints") or []
    wait_for(lambda: not (json.loads(cp.kubectl("get", "node", node.name, "-o", "json")
                                     .stdout)["spec"].get("taints")),
             timeout=20, what=f"taints gone (had {taints})")
    time.sleep(2)
    assert containers() == before  # no duplicate, no restart
    assert _running(cp, ns, "survivor")


def test_control_plane_sigkill_loses_nothing_and_the_node_catches_up(cluster: Any,
                                                                     ns: str) -> None:
    cp, node = cluster
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod("before", "sleep 3600"))
    wait_for(lambda: _running(cp, ns, "before"), timeout=60, what="Running")
    cp.kill()
    time.sleep(2)
    cp.start()  # same root and port
    assert _running(cp, ns, "before")
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod("after", "sleep 3600"))
    wait_for(lambda: _running(cp, ns, "after"), timeout=90, what="a pod made after the restart")
    wait_for(lambda: node_ready(cp, node.name) == "True", timeout=30, what="node Ready")


def test_configmap_and_secret_env_envfrom_and_volumes(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    cp.kubectl("create", "configmap", "app-cfg", "-n", ns, "--from-literal=greeting=hello",
               "--from-literal=color=blue")
    cp.kubectl("create", "secret", "generic", "app-secret", "-n", ns,
               "--from-literal=password=s3cret")
    body = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reader"},
        "spec": {
            "volumes": [{"name": "cfg", "configMap": {"name": "app-cfg"}},
                        {"name": "sec", "secret": {"secretName": "app-secret",
                                                   "defaultMode": 0o400}}],
            "containers": [{
                "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", "echo env=$GREETING/$PASSWORD/$CFG_color; "
                            "while true; do echo file=$(cat /cfg/greeting)/$(cat /sec/password);"
                            " sleep 1; done"],
                "env": [{"name": "GREETING", "valueFrom": {"configMapKeyRef": {
                    "name": "app-cfg", "key": "greeting"}}},
                        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {
                            "name": "app-secret", "key": "password"}}}],
                "envFrom": [{"configMapRef": {"name": "app-cfg"}, "prefix": "CFG_"}],
                "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"},
                                 {"name": "sec", "mountPath": "/sec"}],
            }]}}
    cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(body))
    wait_for(lambda: _running(cp, ns, "reader"), timeout=60, what="Running")
    missing = cp.kubectl("logs", "reader", "-n", ns, "-c", "nope", check=False)
    assert "container nope is not valid for pod reader" in missing.stderr
    time.sleep(1.5)
    logs = cp.kubectl("logs", "reader", "-n", ns).stdout.splitlines()
    assert logs[0] == "env=hello/s3cret/blue"
    assert "file=hello/s3cret" in logs[1:]
    # a changed ConfigMap reaches the mounted files (not the environment)
    cp.kubectl("patch", "configmap", "app-cfg", "-n", ns, "--type", "merge", "-p",
               '{"data":{"greeting":"bonjour"}}')
    wait_for(lambda: "file=bonjour/s3cret" in cp.kubectl("logs", "reader", "-n", ns,
                                                         "--tail", "1").stdout,
             timeout=60, what="the updated file")
    # a pod whose ConfigMap does not exist waits with upstream's reason
    missing = dict(body, metadata={"name": "orphan"})
    missing["spec"] = {"containers": [{
        "name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent", "command": ["true"],
        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent",
                                                               "key": "k"}}}]}]}
    cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(missing))

    def waiting_reason() -> str:
        cs = (_pod(cp, ns, "orphan").get("status", {}).get("containerStatuses") or [{}])[0]
        return str((cs.get("state", {}).get("waiting") or {}).get("message", ""))

    wait_for(lambda: waiting_reason() == 'configmap "absent" not found', timeout=60,
             what="CreateContainerConfigError")


def test_exec_through_the_api(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod("shell", "sleep 3600"))
    wait_for(lambda: _running(cp, ns, "shell"), timeout=60, what="Running")
    out = cp.kubectl("exec", "shell", "-n", ns, "--", "sh", "-c", "echo out; echo err >&2")
    assert out.stdout == "out\n"
    assert out.stderr == "err\n"
    failed = cp.kubectl("exec", "shell", "-n", ns, "--", "sh", "-c", "exit 3", check=False)
    assert failed.returncode == 3
    assert "command terminated with exit code 3" in failed.stderr
    missing = cp.kubectl("exec", "shell", "-n", ns, "-c", "nope", "--", "true", check=False)
    assert "container nope is not valid for pod shell" in missing.stderr
    # interactive: stdin through, over WebSocket (v5) and over SPDY (kubectl's fallback)
    for env in ({}, SPDY_EXEC):
        piped = cp.kubectl("exec", "-i", "shell", "-n", ns, "--", "sh", "-c", "cat; echo end",
                           input="line one\nline two\n", env=env)
        assert piped.stdout == "line one\nline two\nend\n", env
    # the official Python client speaks v4.channel.k8s.io over the same path
    from kubernetes import client, config
    from kubernetes.stream import stream

    with config.new_client_from_config(str(cp.kubeconfig)) as api_client:
        api = client.CoreV1Api(api_client)
        ws = stream(api.connect_get_namespaced_pod_exec, "shell", ns, command=["echo", "py"],
                    stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
        try:
            ws.run_forever(timeout=20)
            assert ws.read_stdout().strip() == "py"
            assert ws.returncode == 0
        finally:
            ws.close()
            # websocket-client's close() does nothing once the server closed first,
            # leaving its socket open: shut it here
            ws.sock.shutdown()


SPDY_EXEC = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
SPDY_PORT_FORWARD = {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}


def test_exec_with_a_tty_through_the_python_client(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod("tty", "sleep 3600"))
    wait_for(lambda: _running(cp, ns, "tty"), timeout=60, what="Running")
    from kubernetes import client, config
    from kubernetes.stream import stream

    with config.new_client_from_config(str(cp.kubeconfig)) as api_client:
        api = client.CoreV1Api(api_client)
        ws = stream(api.connect_get_namespaced_pod_exec, "tty", ns,
                    command=["sh", "-c", "tty; stty size"], stderr=True, stdin=False,
                    stdout=True, tty=True, _preload_content=False)
        try:
            ws.run_forever(timeout=20)
            out = ws.read_stdout()
        finally:
            ws.close()
            # websocket-client's close() does nothing once the server closed first,
            # leaving its socket open: shut it here
            ws.sock.shutdown()
    assert out.splitlines()[0].startswith("/dev/pts/"), out
    assert ws.returncode == 0


def test_attach_to_the_containers_own_stdin(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    doc = json.loads(pod("reader", "read l; echo got:$l", restart="Never"))
    doc["spec"]["containers"][0].update(stdin=True, stdinOnce=True)
    cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(doc))
    wait_for(lambda: _running(cp, ns, "reader"), timeout=60, what="Running")
    out = cp.kubectl("attach", "-i", "reader", "-n", ns, input="hello\n", timeout=60)
    assert "got:hello" in out.stdout
    wait_for(lambda: _pod(cp, ns, "reader").get("status", {}).get("phase") == "Succeeded",
             timeout=30, what="the container ends when its stdin closes")


def _forwarded(cp: ControlPlaneProcess, ns: str, env: dict[str, str],
               program: str = KUBECTL) -> str:
    """kubectl port-forward to the pod's 8080 on a free local port; one HTTP GET through it."""
    proc = cp.kubectl_bg("port-forward", "-n", ns, "pod/web", ":8080", env=env,
                         program=program)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # Forwarding from 127.0.0.1:PORT -> 8080
        match = re.search(r"127\.0\.0\.1:(\d+) -> 8080", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr
                       else "")
        url = f"http://127.0.0.1:{match.group(1)}/index.html"
        with urllib.request.urlopen(url, timeout=20) as resp:
            return resp.read().decode()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_port_forward_over_websocket_and_spdy(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod(
        "web", "mkdir -p /www && echo served-$HOSTNAME > /www/index.html && "
               "exec httpd -f -p 8080 -h /www"))
    wait_for(lambda: _running(cp, ns, "web"), timeout=60, what="Running")
    assert _forwarded(cp, ns, {}) == "served-web\n"
    assert _forwarded(cp, ns, SPDY_PORT_FORWARD) == "served-web\n"


class Terminal:
    """A program on a pseudo-terminal of a given size, as a person runs it."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int, cols: int) -> None:
        import fcntl
        import struct
        import termios

        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.seen = b""

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def resize(self, rows: int, cols: int) -> None:
        """The window changes size: the terminal's size, then SIGWINCH to the program
        (which has no controlling terminal here for the kernel to signal)."""
        import fcntl
        import signal
        import struct
        import termios

        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc.send_signal(signal.SIGWINCH)

    def expect(self, pattern: str, timeout: float = 30) -> re.Match[bytes]:
        end = time.monotonic() + timeout
        while (match := re.search(pattern.encode(), self.seen)) is None:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.master], [], [], max(0.0, left))
            if not ready:
                raise AssertionError(f"no {pattern!r} on the terminal: {self.seen[-500:]!r}")
            try:
                self.seen += os.read(self.master, 65536)
            except OSError:  # the program ended and closed the terminal
                raise AssertionError(f"no {pattern!r}: {self.seen[-500:]!r}") from None
        return match

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)


def _terminal(cp: ControlPlaneProcess, *args: str, rows: int = 33, cols: int = 101,
              env: dict[str, str] | None = None, program: str = KUBECTL) -> Terminal:
    full = dict(os.environ, KUBECONFIG=str(cp.kubeconfig), TERM="xterm", **(env or {}))
    return Terminal([program, *args], full, rows, cols)


@pytest.mark.parametrize("env", [{}, SPDY_EXEC], ids=["websocket", "spdy"])
def test_exec_it_on_a_real_terminal(cluster: Any, ns: str, env: dict[str, str]) -> None:
    cp, _ = cluster
    name = "term-spdy" if env else "term-ws"
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod(name, "sleep 3600"))
    wait_for(lambda: _running(cp, ns, name), timeout=60, what="Running")
    term = _terminal(cp, "exec", "-it", "-n", ns, name, "--", "sh", env=env)
    try:
        term.send("stty size; tty; echo marker-$((6*7))\r")
        term.expect(r"marker-42")
        assert re.search(rb"33 101", term.seen), term.seen
        assert re.search(rb"/dev/pts/\d+", term.seen), term.seen
        term.send("exit 5\r")
    finally:
        code = term.close()
    assert code == 5


def test_attach_it_on_a_real_terminal(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    doc = json.loads(pod("console", 'while read l; do [ "$l" = size ] && stty size; '
                                    'echo echoed:$l; done'))
    doc["spec"]["containers"][0].update(stdin=True, tty=True)
    cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(doc))
    wait_for(lambda: _running(cp, ns, "console"), timeout=60, what="Running")
    term = _terminal(cp, "attach", "-it", "-n", ns, "console", rows=21, cols=77)
    try:
        term.send("first\r")
        term.expect(r"echoed:first")
        term.send("size\r")
        term.expect(r"echoed:size")
        assert re.search(rb"21 77", term.seen), term.seen
    finally:
        term.proc.terminate()  # the person closes kubectl; the container goes on
        term.close()
    time.sleep(1)
    assert _running(cp, ns, "console")


PYKUBECTL = str(Path(sys.executable).parent / "pykubectl")


def test_pykubectl_exec_attach_and_port_forward(cluster: Any, ns: str) -> None:
    """pykubectl's streaming commands through the same API: exit codes, stdin, a real
    terminal whose size follows the window, attach, port-forward."""
    cp, _ = cluster
    cp.kubectl("create", "-n", ns, "-f", "-", input=pod(
        "web", "mkdir -p /www && echo served-$HOSTNAME > /www/index.html && "
               "exec httpd -f -p 8080 -h /www"))
    doc = json.loads(pod("console", "while read l; do echo echoed:$l; done"))
    doc["spec"]["containers"][0].update(stdin=True, tty=True)
    cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(doc))
    wait_for(lambda: _running(cp, ns, "web") and _running(cp, ns, "console"), timeout=60,
             what="Running")

    def pyk(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return cp.kubectl(*args, program=PYKUBECTL, **kw)

    out = pyk("exec", "web", "-n", ns, "--", "sh", "-c", "echo out; echo err >&2")
    assert (out.stdout, out.stderr) == ("out\n", "err\n")
    failed = pyk("exec", "web", "-n", ns, "--", "sh", "-c", "exit 3", check=False)
    assert failed.returncode == 3
    assert "command terminated with exit code 3" in failed.stderr
    missing = pyk("exec", "web", "-n", ns, "-c", "nope", "--", "true", check=False)
    assert (missing.returncode, missing.stderr.strip()) == (
        1, "error: container nope is not valid for pod web")
    gone = pyk("exec", "ghost", "-n", ns, "--", "true", check=False)
    assert gone.stderr.strip() == 'Error from server (NotFound): pods "ghost" not found'
    piped = pyk("exec", "-i", "web", "-n", ns, "--", "sh", "-c", "cat; echo end",
                input="line one\nline two\n")
    assert piped.stdout == "line one\nline two\nend\n"

    term = _terminal(cp, "exec", "-it", "-n", ns, "web", "--", "sh", program=PYKUBECTL)
    try:
        term.send("stty size; tty; echo marker-$((6*7))\r")
        term.expect(r"marker-42")
        assert re.search(rb"33 101", term.seen), term.seen
        assert re.search(rb"/dev/pts/\d+", term.seen), term.seen
        term.resize(40, 120)
        time.sleep(0.5)  # the resize travels ahead of the next keys, as a person types
        term.send("stty size; echo marker-$((7*7))\r")
        term.expect(r"40 120\s+marker-49")
        term.send("exit 5\r")
    finally:
        code = term.close()
    assert code == 5

    term = _terminal(cp, "attach", "-it", "-n", ns, "console", program=PYKUBECTL)
    try:
        term.send("first\r")
        term.expect(r"echoed:first")
    finally:
        term.proc.terminate()
        term.close()
    assert _running(cp, ns, "console")

    assert _forwarded(cp, ns, {}, program=PYKUBECTL) == "served-web\n"


def test_a_node_whose_conf_dir_has_no_network_writes_the_default_and_becomes_ready(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """A first `pykubelet run` (or install-service's config) on a host with an empty
    /etc/cni/net.d: the agent writes a bridge network on its podCIDR, as k3s writes its
    own, so the runtime's NetworkReady holds and the node becomes Ready."""
    from pykubelet.default_network import FILE_NAME
    from pykubelet.runtime.image_build import build_busybox_image

    work = tmp_path_factory.mktemp("kcn-net")
    cp = ControlPlaneProcess(work / "cp")
    base = Path(tempfile.mkdtemp(prefix="kcn-net-", dir="/tmp"))
    node = NodeProcess(base, "kcn-nonet", 8, cp)
    try:
        cp.start()
        archive = work / "busybox.tar"
        build_busybox_image(archive, name=IMAGE)
        node.prepare(archive)
        for f in (base / "net.d").iterdir():
            f.unlink()  # no network at all
        node.start()
        try:
            wait_for(lambda: node_ready(cp, node.name) == "True", timeout=60,
                     what="node Ready")
        except AssertionError:
            print(node.log_path.read_text()[-6000:])
            print(cp.log_path.read_text()[-3000:])
            raise
        conf = json.loads((base / "net.d" / FILE_NAME).read_text())
        assert conf["plugins"][0]["ipam"]["ranges"] == [[{"subnet": node.subnet}]]
        assert "no CNI network in" in node.log_path.read_text()
    finally:
        node.cleanup()
        cp.stop()
