"""``pycni install``: launchers, drop-ins, and how the runtime side recognises them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from pycni.install import install
from pycni.invoke import LAUNCHER_MARKER, launcher_module

NAMES = ["pycni-bridge", "pycni-host-local", "pycni-loopback"]
DROP_INS = {"bridge": "pycni.plugins.bridge", "host-local": "pycni.plugins.host_local",
            "loopback": "pycni.plugins.loopback"}


def test_install_writes_the_three_launchers(tmp_path: Path) -> None:
    written = install(str(tmp_path / "bin"))
    assert sorted(os.path.basename(p) for p in written) == NAMES
    for path in written:
        st = os.stat(path)
        assert st.st_mode & 0o777 == 0o755
        text = Path(path).read_text()
        first, second = text.splitlines()[:2]
        assert first.startswith("#!/")
        assert first.endswith(" -IS")
        assert second.startswith(LAUNCHER_MARKER)
    assert sorted(os.listdir(tmp_path / "bin")) == NAMES  # no temp files left behind


def test_drop_in_adds_the_reference_names_and_replaces_files(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bridge").write_text("#!/bin/sh\necho reference\n")
    (bin_dir / "portmap").write_text("#!/bin/sh\necho untouched\n")
    install(str(bin_dir), drop_in=True)
    assert sorted(os.listdir(bin_dir)) == sorted([*NAMES, *DROP_INS, "portmap"])
    for name, module in DROP_INS.items():
        assert launcher_module(str(bin_dir / name)) == module
    assert launcher_module(str(bin_dir / "portmap")) is None
    assert "untouched" in (bin_dir / "portmap").read_text()


def test_reference_binaries_are_not_ours() -> None:
    for name in ("bridge", "host-local", "loopback"):
        path = f"/usr/lib/cni/{name}"
        if os.path.exists(path):
            assert launcher_module(path) is None


def test_marker_naming_a_foreign_module_is_not_trusted(tmp_path: Path) -> None:
    fake = tmp_path / "bridge"
    fake.write_text(f"#!/bin/sh\n{LAUNCHER_MARKER}os\n")
    assert launcher_module(str(fake)) is None


def test_launcher_runs_the_plugin(tmp_path: Path) -> None:
    install(str(tmp_path))
    exe = str(tmp_path / "pycni-loopback")
    about = subprocess.run([exe], capture_output=True, text=True, env={}, check=False)
    assert about.returncode == 0
    assert "CNI protocol versions supported" in about.stderr
    version = subprocess.run([exe], input="", capture_output=True, text=True,
                             env={"CNI_COMMAND": "VERSION"}, check=False)
    assert version.returncode == 0
    assert "1.0.0" in json.loads(version.stdout)["supportedVersions"]
