"""The lab's local registry on a real lab: `lab up` runs it on the bridge's host address,
pre-loaded with busybox; the real kubectl runs a pod of it with the default pull policy
(Always, for :latest) and every node pulls from it as an insecure registry; a user's own
image pushed with skopeo runs too; a crash is seen by `lab status` and mended by `lab up`
and `lab restart-node`; `lab down` stops it and removes its data. The lab's name starts
with ``tlab`` so leftovers are traceable to the lab tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from pykubelet.lab.layout import STATE_ROOT, LabLayout
from pykubelet.lab.processes import tail

pytestmark = [pytest.mark.root, pytest.mark.netns, pytest.mark.runc, pytest.mark.slow]

NAME = "tlabreg"
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy


def lab_cli(*args: str, env: dict[str, str], timeout: float = 240,
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykubelet.cli.main", "lab", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)


def status(env: dict[str, str]) -> dict[str, Any]:
    got = lab_cli("status", "--name", NAME, "-o", "json", env=env)
    assert got.returncode == 0, got.stderr
    return dict(json.loads(got.stdout))


def tags(address: str, repo: str) -> list[str]:
    with _DIRECT.open(f"http://{address}/v2/{repo}/tags/list", timeout=5) as r:
        return sorted(json.load(r)["tags"])


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A kubeconfig of the test's own; the lab is removed whatever happens."""
    kubeconfig = tmp_path / "kubeconfig"
    environ = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    try:
        yield environ
    finally:
        lab_cli("down", "--name", NAME, env=environ)


def kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def pod_manifest(name: str, image: str, node: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [{
            "name": "c", "image": image, "imagePullPolicy": "Always",
            "command": ["sleep", "3600"]}]}})


def wait_running(env: dict[str, str], names: list[str], lab: LabLayout,
                 timeout: float = 120) -> dict[str, dict[str, Any]]:
    end = time.monotonic() + timeout
    last: dict[str, dict[str, Any]] = {}
    while time.monotonic() < end:
        got = kubectl(env, "get", "pods", "-o", "json")
        if got.returncode == 0:
            last = {p["metadata"]["name"]: p for p in json.loads(got.stdout)["items"]}
            if all((last.get(n) or {}).get("status", {}).get("phase") == "Running"
                   for n in names):
                return last
        time.sleep(0.5)
    logs = "\n".join(f"--- {n.name}:\n{tail(n.agent_log, 15)}" for n in lab.node_layouts())
    states = {n: (p.get("status") or {}).get("containerStatuses") for n, p in last.items()}
    raise AssertionError(f"not Running after {timeout}s: {states}\n{logs}")


def gone(pid: int, timeout: float = 10) -> None:
    """Until ``pid`` no longer runs (init reaps it: `lab up` has exited)."""
    end = time.monotonic() + timeout
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        assert time.monotonic() < end, f"pid {pid} still runs"
        time.sleep(0.05)


def test_lab_registry_serves_every_node_survives_a_crash_and_goes_with_down(
        env: dict[str, str]) -> None:
    up = lab_cli("up", "--nodes", "2", "--name", NAME, "--wait", "120s", env=env)
    assert up.returncode == 0, up.stderr
    doc = status(env)
    k = json.loads((STATE_ROOT / NAME / "lab.json").read_text())["subnet_index"]
    lab = LabLayout(NAME, 2, k)
    address = doc["registry"]
    assert address == f"{lab.gateway}:5000"
    assert f" ✓ Starting the local registry ({address}: library/busybox:latest" in up.stderr
    pid = doc["registryPid"]
    proc = psutil.Process(pid)
    assert proc.cmdline()[-2:] == ["serve", str(lab.registry_config_file)]
    # it listens on the bridge's host address, and nowhere else
    listening = {(c.laddr.ip, c.laddr.port) for c in proc.net_connections("inet")
                 if c.status == psutil.CONN_LISTEN}
    assert listening == {(lab.gateway, 5000)}
    assert lab.registry_data_dir.is_dir()
    from pykubelet.runtime.image_build import build_busybox_image, busybox_version

    assert tags(address, "library/busybox") == sorted(["latest", busybox_version()])
    table = lab_cli("status", "--name", NAME, env=env)
    assert f"registry: {address} (pid {pid})" in table.stdout

    # documented in the cluster as kind does (KEP-1755), for tools that push there
    hosting = kubectl(env, "get", "configmap", "-n", "kube-public", "local-registry-hosting",
                      "-o", "jsonpath={.data.localRegistryHosting\\.v1}")
    assert hosting.returncode == 0, hosting.stderr
    assert yaml.safe_load(hosting.stdout)["host"] == address

    # the default pull policy of :latest is Always: kubectl run pulls from the registry
    run = kubectl(env, "run", "x", f"--image={address}/library/busybox:latest", "--",
                  "sleep", "3600")
    assert run.returncode == 0, run.stderr
    # and on every node, pinned there, with Always said explicitly
    for node in lab.node_layouts():
        made = subprocess.run(["kubectl", "apply", "-f", "-"], input=pod_manifest(
            f"on-{node.name}", f"{address}/library/busybox:latest", node.name),
            capture_output=True, text=True, env=env, timeout=60, check=False)
        assert made.returncode == 0, made.stderr
    # a user's own image, pushed with skopeo as the README says
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "app.tar"
        build_busybox_image(archive, name="localhost/app:1.0", env=["APP=mine"])
        subprocess.run(["skopeo", "copy", "-q", "--dest-tls-verify=false",
                        f"oci-archive:{archive}", f"docker://{address}/me/app:1.0"],
                       check=True, timeout=120, capture_output=True)
    mine = kubectl(env, "run", "mine", f"--image={address}/me/app:1.0",
                   "--image-pull-policy=Always", "--", "sleep", "3600")
    assert mine.returncode == 0, mine.stderr
    pods = wait_running(env, ["x", "on-node1", "on-node2", "mine"], lab)
    assert pods["x"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert {pods[f"on-{n.name}"]["spec"]["nodeName"] for n in lab.node_layouts()} == {
        "node1", "node2"}
    pulled = lab.registry_log.read_text()
    for node in lab.node_layouts():  # each node's runtime asked the registry itself
        assert f"{node.address} - - " in pulled, pulled[-2000:]
    assert "GET /v2/me/app/manifests/1.0" in pulled

    # a crash is seen by status; `up` of the existing lab starts it again, data kept
    os.kill(pid, signal.SIGKILL)
    gone(pid)
    doc = status(env)
    assert (doc["registry"], doc["registryPid"]) == (address, None)
    table = lab_cli("status", "--name", NAME, env=env)
    assert (f"registry: {address} not running (pid {pid} exited); start it again with: "
            f"pykubelet lab restart-node node1 --name {NAME}") in table.stdout
    again = lab_cli("up", "--nodes", "2", "--name", NAME, env=env)
    assert again.returncode != 0
    assert f" ✓ Starting the local registry again ({address})" in again.stderr
    assert again.stderr.strip().splitlines()[-1] == (
        f"Error: lab '{NAME}' already exists (remove it with: pykubelet lab down --name "
        f"{NAME})")
    pid = status(env)["registryPid"]
    assert pid is not None
    assert psutil.pid_exists(pid)
    assert tags(address, "me/app") == ["1.0"]  # what the user pushed survived the crash

    # ... and so does restart-node, as it starts the front address
    os.kill(pid, signal.SIGKILL)
    gone(pid)
    restarted = lab_cli("restart-node", "node2", "--name", NAME, env=env)
    assert restarted.returncode == 0, restarted.stderr
    assert "node2: started the local registry (pid " in restarted.stderr
    pid = status(env)["registryPid"]
    assert pid is not None
    assert tags(address, "library/busybox") == sorted(["latest", busybox_version()])

    # down stops it and removes its data
    down = lab_cli("down", "--name", NAME, env=env)
    assert down.returncode == 0, down.stderr
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not lab.registry_dir.exists()
    assert not lab.state_dir.exists()
    left = [p.pid for p in psutil.process_iter(["cmdline"])
            if str(lab.registry_config_file) in " ".join(p.info.get("cmdline") or [])]
    assert left == []
