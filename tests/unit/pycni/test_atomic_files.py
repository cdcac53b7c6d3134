"""write_atomic: the one writer of persisted state (pycni and pykubelet)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pycni.atomic_files import write_atomic


@pytest.mark.parametrize("durable", [True, False])
def test_replaces_the_contents_with_the_mode_asked(tmp_path: Path, durable: bool) -> None:
    target = tmp_path / "checkpoint"
    target.write_text("old")
    write_atomic(target, b"new\x00bytes", mode=0o600, durable=durable)
    assert target.read_bytes() == b"new\x00bytes"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(str(target), "text is UTF-8: é", mode=0o755, durable=durable)
    assert target.read_text() == "text is UTF-8: é"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]  # no temp file left


def test_mode_is_not_narrowed_by_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        write_atomic(tmp_path / "launcher", "#!/bin/sh\n", mode=0o755)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "launcher").stat().st_mode) == 0o755


def test_a_failed_write_keeps_the_old_contents_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "index.json"
    target.write_text('{"old": true}')
    with pytest.raises(TypeError):
        write_atomic(target, 42, mode=0o644)  # type: ignore[arg-type]
    assert target.read_text() == '{"old": true}'
    assert sorted(os.listdir(tmp_path)) == ["index.json"]


def test_a_failed_rename_leaves_no_temp(tmp_path: Path) -> None:
    (tmp_path / "occupied").mkdir()
    (tmp_path / "occupied" / "x").touch()
    with pytest.raises(OSError):
        write_atomic(tmp_path / "occupied", b"data")
    assert sorted(os.listdir(tmp_path)) == ["occupied"]


# Renames that are not "replace a file's contents": the unpacked-layer directories moved into
# place, log rotation and its streamed gzip, and the projected volume's ..data symlink swap
# (upstream's AtomicWriter).
OTHER_RENAMES = {"pykubelet/runtime/images.py", "pykubelet/kubelet/logs/container_log_manager.py",
                 "pykubelet/kubelet/volumemanager/volumes.py",
                 "pykubelet/controlplane/apiserver/audit/backend.py"}  # the audit log's rotation


def test_no_other_hand_rolled_atomic_writer() -> None:
    """Every file written whole goes through write_atomic (issue 25 counted seven copies)."""
    import re

    repo = Path(__file__).resolve().parents[3]
    rename = re.compile(r"\bos\.(replace|rename)\(|\btmp\.(replace|rename)\(")
    found = {str(f.relative_to(repo))
             for top in ("pycni", "pykubelet", "pysched")
             for f in (repo / top).rglob("*.py")
             if rename.search(f.read_text())}
    assert found - OTHER_RENAMES == {"pycni/atomic_files.py"}


def test_the_temp_name_is_exclusive_and_a_taken_one_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mkstemp's contract without tempfile: O_EXCL on a random name, another try on a clash."""
    draws = iter([b"\x01" * 8, b"\x01" * 8, b"\x02" * 8])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    taken = tmp_path / f".state.{'01' * 8}.tmp"
    taken.write_text("someone else's")
    write_atomic(tmp_path / "state", b"mine")
    assert (tmp_path / "state").read_bytes() == b"mine"
    assert taken.read_text() == "someone else's"
    assert sorted(os.listdir(tmp_path)) == [taken.name, "state"]
    assert list(draws) == []  # the clash cost one more draw
