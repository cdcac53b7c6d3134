"""The default CNI network `pykubelet run` writes when the conf dir has none (as k3s does),
and the single-node default that says what it starts and binds to loopback."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from pycni.conf import conflist_from_bytes
from pykubelet.default_network import FILE_NAME, ensure_default_network


def test_an_empty_conf_dir_gets_a_bridge_on_the_pod_cidr(tmp_path: Path) -> None:
    conf_dir = tmp_path / "net.d"  # not even there yet
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "pycni-bridge").write_text("#!/bin/sh\n")
    (bins / "pycni-bridge").chmod(0o755)
    written = ensure_default_network(conf_dir, "10.244.7.0/24", f"{bins}:/usr/lib/cni")
    assert written == conf_dir / FILE_NAME
    conf = json.loads(written.read_text())
    [bridge] = conf["plugins"]
    assert bridge["type"] == "pycni-bridge"  # ours when installed, else the reference one
    assert bridge["ipam"]["type"] == "host-local"
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.7.0/24"}]]
    assert bridge["isGateway"] is True
    assert bridge["ipMasq"] is True
    net = conflist_from_bytes(written.read_bytes(), str(written))  # libcni reads it
    assert net.name == "pykubelet"


def test_a_conf_dir_with_a_network_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "05-mine.conf").write_text("{}")
    assert ensure_default_network(tmp_path, "10.244.1.0/24") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["05-mine.conf"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "README").write_text("not a network")
    assert ensure_default_network(other, "10.244.1.0/24") == other / FILE_NAME
    assert ensure_default_network(other, "10.244.2.0/24") is None  # once


def test_run_without_a_config_says_it_starts_a_control_plane_on_loopback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from pykubelet.cli import run_cmd

    monkeypatch.setattr(run_cmd, "DEFAULT_CONFIG_PATH", tmp_path / "none.yaml")
    with caplog.at_level(logging.INFO, logger="pykubelet.run"):
        cfg = run_cmd.read_config(None)
    assert cfg.controlPlane is not None
    assert cfg.controlPlane.listen == "127.0.0.1:6443"
    [rec] = caplog.records
    msg = rec.getMessage()
    assert "running the single-node default, a control plane and this node" in msg
    assert "the API listens on 127.0.0.1:6443, this host only" in msg
    caplog.clear()
    given = tmp_path / "given.yaml"
    given.write_text("apiVersion: pykubelet.io/v1alpha1\nkind: KubeletConfiguration\n")
    assert run_cmd.read_config(str(given)).controlPlane is None
    assert caplog.records == []
