"""`NODES=3 vagrant up` for real: three VMs under software emulation (TCG), offline, the
repository's Vagrantfile and provisioning, then pods Running on every VM and reaching
each other across VMs. Opt-in (minutes, several GB): ``pytest -m vm tests/integration/ops``.

Timings are printed (``-s`` shows them), not asserted.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nspawn_lab import CACHE, wheelhouse
from vm_lab import BOX, NETNS, POOL, LibvirtLab, box, phase_times, rootfs_vm

# box build, `vagrant up` of 3 VMs under TCG and provisioning take tens of minutes
pytestmark = [pytest.mark.vm, pytest.mark.root, pytest.mark.timeout(3600)]
NODES = 3
NETWORK = "10.202.2"


@pytest.fixture(scope="module")
def timings() -> Iterator[dict[str, float]]:
    t: dict[str, float] = {}
    yield t
    print("\nVagrant lab timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in t.items()))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, timings: dict[str, float]
        ) -> Iterator[tuple[LibvirtLab, dict[str, str], Path]]:
    log_path = tmp_path_factory.mktemp("vm") / "vm-lab.log"
    log = log_path.open("a")
    rootfs, timings["rootfs build"] = rootfs_vm(log=log)
    wheels, timings["wheelhouse"] = wheelhouse(log=log)
    _, timings["box build+add"] = box(rootfs, wheels, log=log)
    libvirt = LibvirtLab()
    dot = tmp_path_factory.mktemp("dot")
    env = {"VAGRANT_HOME": str(CACHE / "vagrant.d"), "VAGRANT_DOTFILE_PATH": str(dot),
           "NODES": str(NODES), "PYKUBE_BOX": BOX, "PYKUBE_LIBVIRT_DRIVER": "qemu",
           "PYKUBE_MGMT_NETWORK_MODE": "none", "PYKUBE_MGMT_NETWORK_ADDRESS": "10.202.1.0/24",
           "PYKUBE_NETWORK": NETWORK, "PYKUBE_CPUS": "1", "PYKUBE_MEMORY": "1536",
           "PYKUBE_WHEELS": str(wheels), "PYKUBE_LIBVIRT_POOL": POOL}
    try:
        timings["libvirtd up"] = libvirt.up()
        t0 = time.monotonic()
        res = libvirt.vagrant("up", "--provider=libvirt", env=env, log=log)
        timings["vagrant up (3 VMs)"] = time.monotonic() - t0
        log.flush()
        timings.update(phase_times(log_path.read_text()))
        assert res.returncode == 0, log_path.read_text()[-6000:]
        yield libvirt, env, dot / "pykube" / "kubeconfig"
    finally:
        t0 = time.monotonic()
        libvirt.vagrant("destroy", "-f", env=env, log=log)
        timings["vagrant destroy"] = time.monotonic() - t0
        libvirt.down()
        log.close()
        print(f"\nvagrant log: {log_path}")


def kubectl(kubeconfig: Path, *args: str, input: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    """The host's kubectl, in the lab's namespace, with the kubeconfig Vagrant wrote."""
    return subprocess.run(["nsenter", f"--net=/run/netns/{NETNS}", "kubectl",
                           f"--kubeconfig={kubeconfig}", *args], input=input,
                          capture_output=True, text=True, timeout=120, check=False)


def wait(what: str, check, timeout: float = 600) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(3)


def test_every_vm_node_is_ready_and_runs_pods_that_reach_each_other(
        lab: tuple[LibvirtLab, dict[str, str], Path], timings: dict[str, float]) -> None:
    _, _, kubeconfig = lab
    assert kubeconfig.exists(), "the Vagrantfile's trigger writes the host's kubeconfig"

    def nodes_ready() -> bool:
        res = kubectl(kubeconfig, "get", "nodes", "-o", "json")
        if res.returncode != 0:
            return False
        items = json.loads(res.stdout)["items"]
        ready = [n["metadata"]["name"] for n in items
                 if any(c["type"] == "Ready" and c["status"] == "True"
                        for c in n["status"].get("conditions", []))]
        return sorted(ready) == [f"node{i}" for i in range(1, NODES + 1)]

    t0 = time.monotonic()
    wait("every node Ready", nodes_ready)
    timings["nodes Ready after up"] = time.monotonic() - t0
    pods = []
    for i in range(1, NODES + 1):
        pods.append({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web{i}"},
            "spec": {"nodeName": f"node{i}", "containers": [{
                "name": "httpd", "image": "localhost/busybox:latest",
                "imagePullPolicy": "Never",
                "command": ["sh", "-c", f"echo web{i} > /index.html; exec httpd -f -p 8080 -h /"],
            }]}})
    t0 = time.monotonic()
    res = kubectl(kubeconfig, "apply", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    assert res.returncode == 0, res.stderr

    def all_running() -> bool:
        out = kubectl(kubeconfig, "get", "pods", "-o", "json")
        items = json.loads(out.stdout)["items"] if out.returncode == 0 else []
        return len(items) == NODES and all(p["status"].get("phase") == "Running"
                                           for p in items)

    wait("pods Running on every VM", all_running)
    timings["3 pods Running"] = time.monotonic() - t0
    items = json.loads(kubectl(kubeconfig, "get", "pods", "-o", "json").stdout)["items"]
    ips = {p["spec"]["nodeName"]: p["status"]["podIP"] for p in items}
    for i in range(1, NODES + 1):
        assert ips[f"node{i}"].startswith(f"10.244.{i}."), ips
    # across VMs: node1's pod fetches from node2's and node3's pods over the pod routes
    for i in range(2, NODES + 1):
        res = kubectl(kubeconfig, "exec", "web1", "--", "wget", "-q", "-O-",
                      f"http://{ips[f'node{i}']}:8080/index.html")
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == f"web{i}"
