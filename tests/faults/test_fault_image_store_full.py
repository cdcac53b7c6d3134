"""The image store's disk full: ``pykubelet image import`` onto a node root on a small
ext4 loop filesystem with almost no space left fails with a message that says so (no
traceback), leaves the store as it was (listing works, no half image listed, the space it
took given back), and succeeds once space is freed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from loopfs import fill, free_bytes, loop_filesystem

from pykubelet.runtime.image_build import build_busybox_image

pytestmark = [pytest.mark.root, pytest.mark.slow]

IMAGE = "localhost/busybox:full"


def image(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykubelet.cli.main", "image", "--root",
                           str(root), *args], capture_output=True, text=True, timeout=120)


def listed(root: Path) -> set[str]:
    """``repo:tag`` of each image ``image ls`` prints (columns IMAGE, TAG, IMAGE ID, SIZE)."""
    res = image(root, "ls")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split()[:2] == ["IMAGE", "TAG"]
    return {":".join(line.split()[:2]) for line in lines[1:]}


def test_an_image_import_on_a_full_disk_fails_clearly_and_leaves_the_store_whole(tmp_path):
    archive = tmp_path / "busybox.tar"
    build_busybox_image(archive, name=IMAGE)
    with loop_filesystem(tmp_path / "disk.img", tmp_path / "disk") as disk:
        root = disk / "root"
        assert image(root, "ls").returncode == 0  # the store made, empty
        filler = disk / "filler"
        fill(filler, leave=64 << 10)
        before = free_bytes(disk)
        res = image(root, "import", str(archive))
        print(f"\nimport on a full disk: rc {res.returncode}: {res.stderr.strip()[-300:]}")
        assert res.returncode != 0
        assert "No space left on device" in res.stderr
        assert "Traceback" not in res.stderr
        assert listed(root) == set()  # listing works, no half image
        assert free_bytes(disk) >= before - (16 << 10)  # what the import wrote, removed

        filler.unlink()
        res = image(root, "import", str(archive))
        assert res.returncode == 0, res.stderr
        assert listed(root) == {IMAGE}
