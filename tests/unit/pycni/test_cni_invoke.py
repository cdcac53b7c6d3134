"""Delegation to an IPAM plugin: in-process for ours, exec for anything else.

host-local needs no privileges (its data dir is under tmp_path), so this runs
the real IPAM plugins, ours and the reference one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycni import invoke
from pycni.errors import PluginNotAvailable
from pycni.install import install
from pycni.skel import CmdArgs
from pycni.spec import Result

REFERENCE_HOST_LOCAL = "/usr/lib/cni/host-local"


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """Our launchers; host-local's also leaves a mark whenever it is exec'd."""
    d = tmp_path / "bin"
    install(str(d))
    launcher = d / "pycni-host-local"
    lines = launcher.read_text().splitlines(keepends=True)
    lines.insert(3, f"open({str(tmp_path / 'exec-mark')!r}, 'a').write('x')\n")
    launcher.write_text("".join(lines))
    return d


def _conf(tmp_path: Path, ipam_type: str) -> bytes:
    return json.dumps({
        "cniVersion": "1.0.0", "name": "pccdeleg", "type": "pycni-bridge",
        "ipam": {"type": ipam_type, "dataDir": str(tmp_path / "ipam"),
                 "ranges": [[{"subnet": "10.91.150.0/24"}]]},
    }).encode()


def _args(paths: list[str], stdin: bytes) -> CmdArgs:
    return CmdArgs("ADD", "pcc-deleg", "/run/netns/none", "eth0", "", paths, stdin)


def _reserved(tmp_path: Path) -> list[str]:
    d = tmp_path / "ipam" / "pccdeleg"
    return sorted(f for f in os.listdir(d) if f != "lock" and not f.startswith("last_"))


@pytest.fixture
def exec_forced() -> Iterator[None]:
    token = invoke.in_process_enabled.set(False)
    yield
    invoke.in_process_enabled.reset(token)


def test_our_ipam_runs_in_process_by_default(tmp_path: Path, bin_dir: Path) -> None:
    stdin = _conf(tmp_path, "pycni-host-local")
    result = invoke.delegate_add("pycni-host-local", _args([str(bin_dir)], stdin), stdin)
    assert isinstance(result, Result)
    assert str(result.ips[0].address) == "10.91.150.2/24"
    assert _reserved(tmp_path) == ["10.91.150.2"]
    assert not (tmp_path / "exec-mark").exists()
    invoke.delegate_del("pycni-host-local", _args([str(bin_dir)], stdin), stdin)
    assert _reserved(tmp_path) == []


def test_our_ipam_is_execd_when_in_process_is_off(
    tmp_path: Path, bin_dir: Path, exec_forced: None
) -> None:
    stdin = _conf(tmp_path, "pycni-host-local")
    result = invoke.delegate_add("pycni-host-local", _args([str(bin_dir)], stdin), stdin)
    assert str(result.ips[0].address) == "10.91.150.2/24"
    assert (tmp_path / "exec-mark").read_text() == "x"
    invoke.delegate_check("pycni-host-local", _args([str(bin_dir)], stdin), stdin)
    invoke.delegate_del("pycni-host-local", _args([str(bin_dir)], stdin), stdin)
    assert (tmp_path / "exec-mark").read_text() == "xxx"
    assert _reserved(tmp_path) == []


@pytest.mark.skipif(not os.path.exists(REFERENCE_HOST_LOCAL), reason="no reference plugins")
def test_reference_ipam_is_execd_from_cni_path(tmp_path: Path, bin_dir: Path) -> None:
    paths = [str(bin_dir), os.path.dirname(REFERENCE_HOST_LOCAL)]
    stdin = _conf(tmp_path, "host-local")
    result = invoke.delegate_add("host-local", _args(paths, stdin), stdin)
    assert str(result.ips[0].address) == "10.91.150.2/24"
    assert result.cni_version == "1.0.0"
    assert _reserved(tmp_path) == ["10.91.150.2"]
    invoke.delegate_del("host-local", _args(paths, stdin), stdin)
    assert _reserved(tmp_path) == []


def test_ipam_error_comes_back_typed(tmp_path: Path, bin_dir: Path, exec_forced: None) -> None:
    stdin = json.dumps({"cniVersion": "1.0.0", "name": "pccdeleg", "type": "x",
                        "ipam": {"type": "pycni-host-local"}}).encode()  # no ranges
    with pytest.raises(Exception) as execd:
        invoke.delegate_add("pycni-host-local", _args([str(bin_dir)], stdin), stdin)
    invoke.in_process_enabled.set(True)
    with pytest.raises(Exception) as inproc:
        invoke.delegate_add("pycni-host-local", _args([str(bin_dir)], stdin), stdin)
    assert type(execd.value) is type(inproc.value)
    assert execd.value.code == inproc.value.code  # type: ignore[attr-defined]
    assert execd.value.msg == inproc.value.msg  # type: ignore[attr-defined]


def test_missing_ipam_plugin(tmp_path: Path, bin_dir: Path) -> None:
    stdin = _conf(tmp_path, "pcc-nothing")
    with pytest.raises(PluginNotAvailable, match="pcc-nothing"):
        invoke.delegate_add("pcc-nothing", _args([str(bin_dir)], stdin), stdin)
