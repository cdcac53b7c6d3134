"""scripts/link-commands.sh (run by install.sh): the commands on PATH without activating
the virtualenv, never clobbering a file that is not a checkout's link."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
COMMANDS = ("pykubelet", "pykubectl", "pycni", "pysched")


def link(dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "scripts" / "link-commands.sh"), str(dest)],
                          capture_output=True, text=True, check=False)


def test_commands_are_linked_into_the_directory_and_run(tmp_path: Path) -> None:
    dest = tmp_path / "bin"
    other = tmp_path / "clone" / ".venv" / "bin"
    other.mkdir(parents=True)
    dest.mkdir()
    (dest / "pycni").symlink_to(other / "pycni")  # another checkout's: taken over
    (dest / "pysched").write_text("#!/bin/sh\necho mine\n")  # the user's own: kept
    done = link(dest)
    assert done.returncode == 0, done.stderr
    assert f"{dest}/pysched exists and is not ours; left as it is" in done.stderr
    for cmd in ("pykubelet", "pykubectl", "pycni"):
        assert os.readlink(dest / cmd) == str(REPO / ".venv" / "bin" / cmd)
    assert (dest / "pysched").read_text() == "#!/bin/sh\necho mine\n"
    out = subprocess.run([str(dest / "pykubelet"), "--version"], capture_output=True,
                         text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.strip()
    again = link(dest)  # idempotent
    assert again.returncode == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted(COMMANDS)


def test_install_sh_links_the_commands_unless_told_not_to() -> None:
    text = (REPO / "scripts" / "install.sh").read_text()
    assert 'scripts/link-commands.sh /usr/local/bin' in text
    assert "PYKUBE_NO_LINKS" in text
