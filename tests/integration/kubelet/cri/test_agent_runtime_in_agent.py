"""``runtimeInAgent: true`` (issue 23 item 3, a lean node): `pykubelet run` serves the
embedded runtime from its own process, one interpreter instead of two. The pod runs,
no `pykubelet runtime` child exists, and the CRI socket on runDir/cri.sock is still
served to others (crictl, a second kubelet): a client of ours lists the pod's sandbox
and container there."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from agent_harness import PYKUBELET, PykRuntime, busybox_pod, free_port, remove_all

from pykubelet.kubelet.cri.cri_client import CRIClient
from pykubelet.runtime.service import default_netns_prefix

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]


def _pods(port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/pods", timeout=2) as r:
            return {p["metadata"]["name"]: p for p in json.load(r)["items"]}
    except OSError:
        return {}


def _wait(what: Any, timeout: float, desc: str) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s: {desc}")


def test_the_runtime_served_from_the_agents_process() -> None:
    base = Path(tempfile.mkdtemp(prefix="kle-ria-", dir="/tmp"))
    rt = PykRuntime(base)  # its CNI conf, image import and leftover cleanup
    rt.write_conf()
    rt.import_image()
    port = free_port()
    manifests = base / "manifests"
    manifests.mkdir()
    (manifests / "lean.yaml").write_text(yaml.safe_dump(busybox_pod("lean", "sleep 3600")))
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "pykubelet.io/v1alpha1", "kind": "KubeletConfiguration",
        "nodeName": "kle-ria", "rootDir": str(rt.root), "runDir": str(base / "run"),
        "staticPodPath": str(manifests), "podLogsDir": str(base / "logs"),
        "cniConfDir": str(base / "net.d"), "healthzPort": port, "port": free_port(),
        "runtimeInAgent": True}))
    log = open(base / "agent.log", "wb")  # noqa: SIM115 (the child owns it)
    agent = subprocess.Popen([str(PYKUBELET), "run", "--config", str(config)],
                             stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    log.close()
    sock = base / "run" / "cri.sock"
    try:
        pod = _wait(lambda: (p := _pods(port).get("lean-kle-ria")) and
                    p["status"].get("phase") == "Running" and p, 90,
                    "the static pod Running: " + (base / "agent.log").read_text()[-2000:])
        assert agent.poll() is None
        children = [" ".join(c.cmdline()) for c in psutil.Process(agent.pid).children()]
        assert not [c for c in children if " runtime " in f"{c} "], children
        with CRIClient(f"unix://{sock}") as cri:  # what crictl would see
            uid = pod["metadata"]["uid"]
            sandboxes = cri.list_pod_sandbox({"io.kubernetes.pod.uid": uid})
            assert [s.state for s in sandboxes] == [0]  # SANDBOX_READY
            containers = cri.list_containers(
                label_selector={"io.kubernetes.pod.uid": uid})
            assert [(c.metadata.name, c.state) for c in containers] == [("app", 1)]
            (manifests / "lean.yaml").unlink()
            _wait(lambda: "lean-kle-ria" not in _pods(port), 60, "the pod gone")
            remove_all(cri)
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(30) == 0
        assert not sock.exists()  # the runtime stopped with the agent, its socket removed
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait(10)
        for p in psutil.process_iter(["pid", "cmdline"]):  # monitors of a failed run
            if str(rt.root) in " ".join(p.info["cmdline"] or []):
                with contextlib.suppress(psutil.Error):
                    p.kill()
        rt.destroy_leftovers(default_netns_prefix(rt.root.resolve()))
        subprocess.run(["ip", "link", "del", rt.bridge], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
