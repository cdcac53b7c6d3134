"""``kubectl debug`` (the real kubectl on PATH) against a real control plane and a real node
(marker root: runc, namespaces, a bridge): the ephemeral container is added through
pods/ephemeralcontainers, started by the node in the pod's namespaces and in the target
container's PID namespace, reported in ephemeralContainerStatuses, and its logs and attach
work as for any container."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from cp_process import KUBECTL, ControlPlaneProcess, wait_for
from node_process import NodeProcess, namespace_for, node_cluster

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

IMAGE = "localhost/busybox:1.35"
# PID 1 of the target container: what only its PID namespace shows as PID 1
TARGET_COMMAND = ["sleep", "3601"]
# prints PID 1's command line and the shell's own pid
SHOW = "tr '\\0' ' ' </proc/1/cmdline; echo; echo self=$$"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[ControlPlaneProcess, NodeProcess]]:
    from pykubelet.kubelet.agent import host_ips

    # the node joins over loopback from this host and registers the host's address: the
    # control plane must count that address as its own for the node's serving certificate
    # to name it (a loopback-only control plane has no other; see join_addresses)
    node_ip = host_ips()[0]
    with node_cluster(tmp_path_factory.mktemp("kcd"), "kcd-node1", 6, image=IMAGE,
                      cp_args=["--tls-san", node_ip],
                      extra_config={"nodeIP": node_ip}) as both:
        yield both


@pytest.fixture
def ns(cluster: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    with namespace_for(cluster[0], request, "kcd") as name:
        yield name


def _pod(cp: ControlPlaneProcess, ns: str, name: str = "web") -> dict[str, Any]:
    return dict(json.loads(cp.kubectl("get", "pod", name, "-n", ns, "-o", "json").stdout))


def _web(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "-n", ns, "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": IMAGE, "command": TARGET_COMMAND}]}}))
    wait_for(lambda: _pod(cp, ns).get("status", {}).get("phase") == "Running", timeout=60,
             what="web Running")


def _ephemeral_status(cp: ControlPlaneProcess, ns: str, name: str) -> dict[str, Any]:
    for s in _pod(cp, ns).get("status", {}).get("ephemeralContainerStatuses") or []:
        if s["name"] == name:
            return dict(s)
    return {}


def test_kubectl_debug_target_runs_in_the_targets_pid_namespace(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    _web(cp, ns)
    out = cp.kubectl("debug", "web", "-n", ns, f"--image={IMAGE}", "--target=c", "--",
                     "sh", "-c", SHOW, timeout=60)
    assert 'Targeting container "c"' in out.stderr + out.stdout
    (ec,) = _pod(cp, ns)["spec"]["ephemeralContainers"]
    name = ec["name"]
    assert name.startswith("debugger-")
    assert ec["targetContainerName"] == "c"
    wait_for(lambda: "terminated" in _ephemeral_status(cp, ns, name).get("state", {}),
             timeout=60, what="the debugger ran")
    st = _ephemeral_status(cp, ns, name)
    assert st["state"]["terminated"]["exitCode"] == 0
    assert st["image"] == IMAGE
    assert st["containerID"]
    logs = cp.kubectl("logs", "web", "-n", ns, "-c", name).stdout.splitlines()
    # PID 1 is the target's process: the debugger is in its PID namespace, not its own
    assert logs[0].strip() == " ".join(TARGET_COMMAND)
    assert logs[1].startswith("self=")
    assert logs[1] != "self=1"
    # the pod runs on, its container untouched, and the debugger is never restarted
    pod = _pod(cp, ns)
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert _ephemeral_status(cp, ns, name)["restartCount"] == 0
    described = cp.kubectl("describe", "pod", "web", "-n", ns).stdout
    assert "Ephemeral Containers:" in described
    assert f"  {name}:" in described


def test_kubectl_debug_interactive_with_stdin(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    _web(cp, ns)
    out = cp.kubectl("debug", "-i", "web", "-n", ns, f"--image={IMAGE}", "--target=c",
                     "--", "sh", input=f"{SHOW}; echo done-$((6*7))\nexit 0\n", timeout=90)
    lines = out.stdout.splitlines()
    assert " ".join(TARGET_COMMAND) in [line.strip() for line in lines], out
    assert "done-42" in lines, out
    (ec,) = _pod(cp, ns)["spec"]["ephemeralContainers"]
    assert ec["stdin"] is True
    wait_for(lambda: "terminated" in _ephemeral_status(cp, ns, ec["name"]).get("state", {}),
             timeout=30, what="the debugger's shell ended with its stdin")


def test_the_api_refuses_what_upstream_refuses(cluster: Any, ns: str) -> None:
    cp, _ = cluster
    _web(cp, ns)
    out = cp.kubectl("debug", "web", "-n", ns, f"--image={IMAGE}", "--target=nope",
                     "--", "true", check=False)
    assert out.returncode != 0
    assert ('Pod "web" is invalid: spec.ephemeralContainers[0].targetContainerName: '
            'Not found: "nope"') in out.stderr


def test_kubectl_debug_it_on_a_real_terminal(cluster: Any, ns: str) -> None:
    """As README shows it: kubectl debug -it POD --image=... --target=c -- sh."""
    from test_cp_nodes import Terminal

    cp, _ = cluster
    _web(cp, ns)
    env = dict(os.environ, KUBECONFIG=str(cp.kubeconfig), TERM="xterm",
               KUBECACHEDIR=str(cp.root.parent / "kubectl-cache"))
    term = Terminal([KUBECTL, "debug", "-it", "web", "-n", ns, f"--image={IMAGE}",
                     "--target=c", "--", "sh"], env, 24, 80)
    try:
        term.expect(r"If you don't see a command prompt")
        term.send("stty size; tr '\\0' ' ' </proc/1/cmdline; echo; echo marker-$((6*7))\r")
        term.expect(r"marker-42")
        assert re.search(rb"24 80", term.seen), term.seen
        assert b" ".join(t.encode() for t in TARGET_COMMAND) in term.seen, term.seen
        term.send("exit\r")
    finally:
        term.close()
    (ec,) = _pod(cp, ns)["spec"]["ephemeralContainers"]
    assert (ec["stdin"], ec["tty"]) == (True, True)
    wait_for(lambda: "terminated" in _ephemeral_status(cp, ns, ec["name"]).get("state", {}),
             timeout=30, what="the debugger's shell exited")
