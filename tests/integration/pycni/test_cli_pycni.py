"""The ``pycni`` command: conf, install, and add/check/del against a real namespace."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PYCNI = str(Path(sys.executable).parent / "pycni")


def _pycni(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYCNI, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})}, timeout=120)


def _write(d: Path, name: str, doc: object) -> None:
    (d / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))


def test_conf_prints_the_selected_list_and_warns_on_stderr(tmp_path: Path) -> None:
    _write(tmp_path, "00-broken.conf", "{")
    _write(tmp_path, "05-list-as-conf.conf", {"name": "x", "plugins": [{"type": "bridge"}]})
    _write(tmp_path, "10-pcc.conflist", {"cniVersion": "1.0.0", "name": "pccnet", "plugins": [
        {"type": "pycni-bridge", "bridge": "pccbr0"}, {"type": "portmap"}]})
    _write(tmp_path, "20-later.conflist", {"cniVersion": "1.0.0", "name": "later",
                                           "plugins": [{"type": "bridge"}]})
    out = _pycni("conf", "--conf-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "name": "pccnet", "cniVersion": "1.0.0",
        "plugins": [{"type": "pycni-bridge"}, {"type": "portmap"}],
        "file": str(tmp_path / "10-pcc.conflist")}
    warnings = out.stderr.strip().splitlines()
    assert len(warnings) == 2
    assert "00-broken.conf" in warnings[0]
    assert "perhaps this is a .conflist?" in warnings[1]


def test_conf_reads_netconfpath(tmp_path: Path) -> None:
    _write(tmp_path, "10.conf", {"cniVersion": "0.4.0", "name": "single", "type": "bridge"})
    out = _pycni("conf", env={"NETCONFPATH": str(tmp_path)})
    assert json.loads(out.stdout)["name"] == "single"


def test_conf_errors_exit_non_zero(tmp_path: Path) -> None:
    out = _pycni("conf", "--conf-dir", str(tmp_path))
    assert out.returncode == 1
    assert f"no networks found in {tmp_path}" in out.stderr
    _write(tmp_path, "10.conflist", {"name": "none"})
    out = _pycni("conf", "--conf-dir", str(tmp_path))
    assert out.returncode == 1
    assert f"no valid networks found in {tmp_path}" in out.stderr
    assert out.stdout == ""


def test_install_prints_what_it_wrote(tmp_path: Path) -> None:
    out = _pycni("install", "--bin-dir", str(tmp_path / "bin"), "--drop-in")
    assert out.returncode == 0, out.stderr
    assert sorted(os.path.basename(p) for p in out.stdout.split()) == [
        "bridge", "host-local", "loopback", "pycni-bridge", "pycni-host-local", "pycni-loopback"]
    bad = _pycni("install", "--bin-dir", "/proc/pcc-cannot-write")
    assert bad.returncode == 1
    assert "Error" in bad.stderr


@pytest.fixture
def node(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A netns, a conf dir naming our plugins, and a bin dir of our launchers."""
    token = secrets.token_hex(3)
    ns_name, bridge = f"pcc-cli-{token}", f"pcccli{token}"
    conf_dir, bin_dir = tmp_path / "net.d", tmp_path / "bin"
    conf_dir.mkdir()
    assert _pycni("install", "--bin-dir", str(bin_dir)).returncode == 0
    _write(conf_dir, "10-pcc.conflist", {"cniVersion": "1.0.0", "name": "pcccli", "plugins": [
        {"type": "pycni-bridge", "bridge": bridge, "isGateway": True, "ipMasq": True,
         "ipam": {"type": "pycni-host-local", "dataDir": str(tmp_path / "ipam"),
                  "ranges": [[{"subnet": "10.91.120.0/24"}]]}}]})
    subprocess.run(["ip", "netns", "add", ns_name], check=True)
    try:
        yield {"ns": ns_name, "conf": str(conf_dir), "bin": str(bin_dir),
               "cache": str(tmp_path / "cache"), "bridge": bridge, "ipam": str(tmp_path / "ipam")}
    finally:
        subprocess.run(["ip", "netns", "del", ns_name], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)


def _run(node: dict[str, str], verb: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return _pycni(verb, "--netns", f"/run/netns/{node['ns']}", "--conf-dir", node["conf"],
                  "--bin-dir", f"{node['bin']}:/usr/lib/cni", "--cache-dir", node["cache"],
                  *extra, "pcc-cli-ctr")


@pytest.mark.root
@pytest.mark.netns
@pytest.mark.parametrize("mode", ["--in-process", "--exec"])
def test_add_check_del(node: dict[str, str], mode: str) -> None:
    added = _run(node, "add", mode)
    assert added.returncode == 0, added.stderr + added.stdout
    result = json.loads(added.stdout)
    assert result["cniVersion"] == "1.0.0"
    address = result["ips"][0]["address"]
    assert address.startswith("10.91.120.")
    shown = subprocess.run(["ip", "-n", node["ns"], "-j", "addr", "show", "eth0"],
                           capture_output=True, text=True, check=True)
    assert address.split("/")[0] in shown.stdout
    lo = subprocess.run(["ip", "-n", node["ns"], "-j", "link", "show", "lo"],
                        capture_output=True, text=True, check=True)
    assert "UP" in json.loads(lo.stdout)[0]["flags"]  # loopback first, as kubelet does
    assert sorted(os.listdir(Path(node["cache"]) / "results")) == [
        "cni-loopback-pcc-cli-ctr-eth0", "pcccli-pcc-cli-ctr-eth0"]

    assert _run(node, "check", mode).returncode == 0
    subprocess.run(["ip", "-n", node["ns"], "link", "del", "eth0"], check=True)
    failed = _run(node, "check", mode)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["msg"].startswith('plugin type="pycni-bridge" failed (check)')

    for _ in range(2):
        deleted = _run(node, "del", mode)
        assert deleted.returncode == 0, deleted.stderr + deleted.stdout
    assert os.listdir(Path(node["cache"]) / "results") == []
    reserved = [f for f in os.listdir(Path(node["ipam"]) / "pcccli")
                if f != "lock" and not f.startswith("last_reserved")]
    assert reserved == []


@pytest.mark.root
@pytest.mark.netns
def test_add_with_a_missing_plugin_fails_cleanly(node: dict[str, str]) -> None:
    out = _pycni("add", "--netns", node["ns"], "--conf-dir", node["conf"],
                 "--bin-dir", "/usr/lib/cni", "--cache-dir", node["cache"], "pcc-cli-ctr")
    assert out.returncode == 1
    err = json.loads(out.stdout)
    assert err["code"] == 50
    assert "pycni-bridge" in err["msg"]
    assert out.stderr == f"Error: {err['msg']}\n"  # once: no "rollback ... failed" line
    # a failed add leaves nothing: the loopback that worked is deleted with its cache entry
    assert os.listdir(Path(node["cache"], "results")) == []
    lo = subprocess.run(["ip", "-n", node["ns"], "-j", "link", "show", "lo"],
                        capture_output=True, text=True, check=True)
    assert "UP" not in json.loads(lo.stdout)[0]["flags"]


@pytest.mark.root
@pytest.mark.netns
def test_default_bin_dirs_find_ours_and_the_reference_plugins(node: dict[str, str]) -> None:
    """With no --bin-dir nor CNI_PATH: loopback from /usr/lib/cni (Debian's), pycni-bridge
    and pycni-host-local from /opt/cni/bin (where scripts/install.sh writes them)."""
    env = {k: v for k, v in os.environ.items() if k != "CNI_PATH"}
    argv = [PYCNI, "--netns", f"/run/netns/{node['ns']}", "--conf-dir", node["conf"],
            "--cache-dir", node["cache"], "pcc-cli-ctr"]
    added = subprocess.run([argv[0], "add", *argv[1:]], capture_output=True, text=True,
                           env=env, timeout=120)
    assert added.returncode == 0, added.stderr + added.stdout
    assert json.loads(added.stdout)["ips"][0]["address"].startswith("10.91.120.")
    deleted = subprocess.run([argv[0], "del", *argv[1:]], capture_output=True, text=True,
                             env=env, timeout=120)
    assert deleted.returncode == 0, deleted.stderr + deleted.stdout
    assert os.listdir(Path(node["cache"]) / "results") == []


RECORDER = """#!/bin/sh
name=$(basename "$0")
cat > "$PCC_LOG/$name-$CNI_COMMAND.stdin"
env | grep '^CNI_' | sort > "$PCC_LOG/$name-$CNI_COMMAND.env"
[ "$CNI_COMMAND" = ADD ] && printf '{"cniVersion":"1.0.0","interfaces":[{"name":"%s"}]}' "$name"
exit 0
"""


def test_cnitool_env_fallbacks(tmp_path: Path) -> None:
    """NETCONFPATH, CNI_PATH, CNI_IFNAME, CNI_ARGS and CAP_ARGS, as cnitool reads them."""
    bin_dir, conf_dir, log = tmp_path / "bin", tmp_path / "net.d", tmp_path / "log"
    for d in (bin_dir, conf_dir, log):
        d.mkdir()
    for name in ("loopback", "pcc-rec"):
        (bin_dir / name).write_text(RECORDER)
        (bin_dir / name).chmod(0o755)
    _write(conf_dir, "10.conflist", {"cniVersion": "1.0.0", "name": "pccenv", "plugins": [
        {"type": "pcc-rec", "capabilities": {"portMappings": True}}]})
    env = {"NETCONFPATH": str(conf_dir), "CNI_PATH": f"/nonexistent:{bin_dir}",
           "CNI_IFNAME": "net1", "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAME=web",
           "CAP_ARGS": json.dumps({"portMappings": [{"hostPort": 8080, "containerPort": 80,
                                                     "protocol": "tcp"}]}),
           "PCC_LOG": str(log)}
    out = _pycni("add", "--netns", "/run/netns/pcc-none", "--cache-dir", str(tmp_path / "c"),
                 "pcc-env-ctr", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["interfaces"] == [{"name": "pcc-rec"}]
    seen = dict(line.split("=", 1) for line in (log / "pcc-rec-ADD.env").read_text().split("\n")
                if line)
    assert seen["CNI_IFNAME"] == "net1"
    assert seen["CNI_ARGS"] == "IgnoreUnknown=1;K8S_POD_NAME=web"
    assert seen["CNI_PATH"] == f"/nonexistent:{bin_dir}"
    assert seen["CNI_NETNS"] == "/run/netns/pcc-none"
    stdin = json.loads((log / "pcc-rec-ADD.stdin").read_text())
    assert stdin["runtimeConfig"]["portMappings"][0]["hostPort"] == 8080
    lo = json.loads((log / "loopback-ADD.stdin").read_text())
    assert (lo["name"], lo["cniVersion"]) == ("cni-loopback", "0.2.0")
    out = _pycni("del", "--netns", "/run/netns/pcc-none", "--cache-dir", str(tmp_path / "c"),
                 "pcc-env-ctr", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads((log / "pcc-rec-DEL.stdin").read_text())["prevResult"]["interfaces"] == [
        {"name": "pcc-rec"}]


def test_network_by_name_as_cnitool(tmp_path: Path) -> None:
    bin_dir, conf_dir, log = tmp_path / "bin", tmp_path / "net.d", tmp_path / "log"
    for d in (bin_dir, conf_dir, log):
        d.mkdir()
    for name in ("loopback", "pcc-one", "pcc-two"):
        (bin_dir / name).write_text(RECORDER)
        (bin_dir / name).chmod(0o755)
    _write(conf_dir, "10.conflist", {"cniVersion": "1.0.0", "name": "one",
                                     "plugins": [{"type": "pcc-one"}]})
    _write(conf_dir, "20.conflist", {"cniVersion": "1.0.0", "name": "two",
                                     "plugins": [{"type": "pcc-two"}]})
    env = {"NETCONFPATH": str(conf_dir), "CNI_PATH": str(bin_dir), "PCC_LOG": str(log)}
    common = ["--netns", "/run/netns/pcc-none", "--cache-dir", str(tmp_path / "c")]
    out = _pycni("add", *common, "--network", "two", "pcc-ctr", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["interfaces"] == [{"name": "pcc-two"}]
    missing = _pycni("add", *common, "--network", "three", "pcc-ctr", env=env)
    assert missing.returncode == 1
    assert 'no net configuration with name "three"' in missing.stderr
