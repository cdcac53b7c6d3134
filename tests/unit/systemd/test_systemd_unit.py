"""`pykubelet install-service`: the unit it writes is the repository's, systemd accepts it,
and installing twice changes nothing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pykubelet.cli.main import main
from pykubelet.config import decode_config
from pykubelet.systemd.unit import (
    TEMPLATE_EXECUTABLE,
    default_config,
    install,
    render_unit,
    unit_template,
)

REPO = Path(__file__).resolve().parents[3]


def verify(unit: Path) -> subprocess.CompletedProcess[str]:
    assert shutil.which("systemd-analyze"), "systemd-analyze is part of Debian's systemd"
    return subprocess.run(["systemd-analyze", "verify", "--man=no", "--recursive-errors=no",
                           str(unit)], capture_output=True, text=True, check=False)


def test_the_repository_unit_is_the_packaged_one() -> None:
    assert (REPO / "vagrant" / "pykubelet.service").read_text() == unit_template()
    assert render_unit([TEMPLATE_EXECUTABLE]) == unit_template()


def test_unit_is_what_an_operator_expects() -> None:
    unit = unit_template()
    for line in ("Type=notify", "NotifyAccess=main", "Restart=always", "RestartSec=10",
                 "StartLimitIntervalSec=0", "Wants=network-online.target",
                 "After=network-online.target", "Delegate=yes", "KillMode=process",
                 "OOMScoreAdjust=-999", "WatchdogSec=60", "WantedBy=multi-user.target"):
        assert line in unit.splitlines(), line


def test_installed_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    done = install(config=tmp_path / "etc" / "config.yaml", unit_dir=tmp_path / "units")
    res = verify(done.unit)
    assert res.returncode == 0, res.stderr
    assert f"--config {tmp_path}/etc/config.yaml" in done.unit.read_text()


def test_verify_catches_a_broken_unit(tmp_path: Path) -> None:
    """The negative control: the check above could fail."""
    done = install(config=tmp_path / "config.yaml", unit_dir=tmp_path / "units")
    bad = tmp_path / "broken" / "pykubelet.service"
    bad.parent.mkdir()
    bad.write_text(done.unit.read_text().replace("Type=notify", "Type=notifyy"))
    assert verify(bad).returncode != 0


def test_install_twice_changes_nothing_and_keeps_the_operators_config(tmp_path: Path) -> None:
    config = tmp_path / "etc" / "pykubelet" / "config.yaml"
    first = install(executable=["/usr/bin/pykubelet"], config=config, unit_dir=tmp_path)
    assert first.written == (tmp_path / "pykubelet.service", config)
    assert install(executable=["/usr/bin/pykubelet"], config=config,
                   unit_dir=tmp_path).written == ()
    config.write_text(config.read_text().replace("healthzPort: 10248", "healthzPort: 10300"))
    again = install(executable=["/opt/other/bin/pykubelet"], config=config, unit_dir=tmp_path)
    assert again.written == (tmp_path / "pykubelet.service",)  # ExecStart moved; config kept
    assert "healthzPort: 10300" in config.read_text()


def test_default_config_is_a_valid_single_node_config() -> None:
    cfg = decode_config(yaml.safe_load(default_config()))
    assert cfg.controlPlane is not None
    assert cfg.nodeName == ""  # the host name, as kubelet
    # a systemd node proxies Services (off in the code's default, so tests never touch a host)
    assert cfg.serviceProxy.enabled
    assert cfg.serviceProxy.clusterCIDR == "10.244.0.0/16"


def test_cli_writes_files_and_reports_what_it_did(tmp_path: Path) -> None:
    args = ["install-service", "--unit-dir", str(tmp_path / "u"), "--config",
            str(tmp_path / "c.yaml"), "--no-reload"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert f"wrote {tmp_path}/u/pykubelet.service" in first.output
    second = CliRunner().invoke(main, args)
    assert "is up to date" in second.output
    assert "left as it is" in second.output


def test_cli_refuses_a_relative_config(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["install-service", "--config", "c.yaml", "--no-reload",
                                    "--unit-dir", str(tmp_path)])
    assert res.exit_code == 2
    assert "must be an absolute path" in res.output
    assert not (tmp_path / "pykubelet.service").exists()


@pytest.mark.parametrize("flag", ["--enable", "--now"])
def test_cli_needs_systemctl_for_enable_and_now(tmp_path: Path, flag: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no systemctl here
    res = CliRunner().invoke(main, ["install-service", "--unit-dir", str(tmp_path / "u"),
                                    "--config", str(tmp_path / "c.yaml"), flag])
    assert res.exit_code == 1
    assert "systemctl not found" in res.output
