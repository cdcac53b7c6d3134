"""The cheap checks of the Vagrant lab and the scripts, run in CI on every change:
``vagrant validate`` (with vagrant-libvirt, which checks the provider's keys),
``shellcheck`` of every shell script in the repository. Each has a negative control that
must fail, so a check that silently stopped working would be noticed.
(``systemd-analyze verify`` of the unit is in tests/unit/systemd/test_systemd_unit.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed (scripts/install.sh installs it)"
    return path


def shell_scripts() -> list[str]:
    """Every tracked or new file that is a shell script: *.sh, or a sh/bash shebang."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    scripts = []
    for rel in out:
        p = REPO / rel
        if not p.is_file():
            continue
        if rel.endswith(".sh"):
            scripts.append(rel)
            continue
        with p.open("rb") as f:
            first = f.readline(100)
        if first.startswith(b"#!") and first.split()[-1].rsplit(b"/", 1)[-1] in (b"sh", b"bash"):
            scripts.append(rel)
    return sorted(scripts)


def test_every_shell_script_passes_shellcheck() -> None:
    scripts = shell_scripts()
    assert {"vagrant/provision.sh", "vagrant/box/build-rootfs.sh", "vagrant/box/build-box.sh",
            "scripts/install.sh", "scripts/test.sh", ".ci/run"} <= set(scripts)
    res = subprocess.run([tool("shellcheck"), "-x", *scripts], cwd=REPO, capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stdout


def test_shellcheck_catches_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/bash\nrm -rf $dir/*\n")
    assert subprocess.run([tool("shellcheck"), str(bad)], capture_output=True,
                          check=False).returncode != 0


def validate(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "vagrant.d"
    home.mkdir(exist_ok=True)
    full = {**os.environ, "VAGRANT_HOME": str(home),
            "VAGRANT_DOTFILE_PATH": str(tmp_path / "dot"), **env}
    return subprocess.run([tool("vagrant"), "validate"], cwd=REPO, env=full,
                          capture_output=True, text=True, check=False, timeout=120)


def test_vagrantfile_validates_with_defaults_and_with_the_offline_settings(
        tmp_path: Path) -> None:
    res = validate(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    res = validate(tmp_path, NODES="5", PYKUBE_BOX="pykube/bookworm",
                   PYKUBE_LIBVIRT_DRIVER="qemu", PYKUBE_MGMT_NETWORK_MODE="none",
                   PYKUBE_MGMT_NETWORK_ADDRESS="10.202.1.0/24", PYKUBE_CPUS="1",
                   PYKUBE_MEMORY="1536", PYKUBE_WHEELS=str(wheels))
    assert res.returncode == 0, res.stdout + res.stderr
    # the lab key the workers join with, made outside the repository
    assert (tmp_path / "dot" / "pykube" / "join-key.pub").read_text().startswith("ssh-ed25519")


@pytest.mark.parametrize(("env", "says"), [
    ({"NODES": "0"}, "NODES must be between 1 and 200"),
    ({"PYKUBE_MEMORY": "lots"}, "invalid value for Integer"),
    ({"PYKUBE_NETWORK": "10.202.2.0/24"}, "PYKUBE_NETWORK must look like"),
    ({"PYKUBE_WHEELS": "/nonexistent"}, "not a directory"),
])
def test_bad_settings_fail_validation_with_a_clear_message(
        tmp_path: Path, env: dict[str, str], says: str) -> None:
    res = validate(tmp_path, **env)
    assert res.returncode != 0
    assert says in res.stdout + res.stderr


def test_the_join_key_once_published_is_replaced_by_a_new_one(tmp_path: Path) -> None:
    """The lab key pair that was committed (issue 24) is never reused: a checkout that still
    holds it gets a fresh pair, so no lab trusts a key anyone can read."""
    state = tmp_path / "dot" / "pykube"
    state.mkdir(parents=True)
    published = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIKkToQpOV8oI90vquAkjftDyzFuMyblXDQNN"
                 "TN0j4Kb pykube-lab-join\n")
    (state / "join-key.pub").write_text(published)
    (state / "join-key").write_text("the published private key\n")
    res = validate(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    pub = (state / "join-key.pub").read_text()
    assert pub.startswith("ssh-ed25519 ")
    assert pub != published
    assert (state / "join-key").read_text().startswith("-----BEGIN OPENSSH")
    assert (state / "join-key").stat().st_mode & 0o077 == 0
