"""Crafted layer tars that try to leave the layer's root (issue 29 item 3).

containerd's archive.Apply (pkg/archive/tar.go) keeps every entry inside the root: names
are cleaned, parents resolved inside the root (fs.RootPath), hard links bounded to it, and
a whiteout whose name leaves its directory (``.wh..``, ``.wh...``) is refused with
"invalid whiteout name". We refuse what would go through a symlink or above the root,
with an error naming the entry, and nothing outside the layer's directory changes.
Unpacked as a non-root caller (no owners, devices or overlay whiteout nodes).
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.layer_unpack import extract_layer

Entry = tarfile.TarInfo


def _reg(name: str, data: bytes = b"x", mode: int = 0o644) -> tuple[Entry, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    return info, data


def _link(name: str, target: str, kind: bytes) -> tuple[Entry, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, b""


def _dir(name: str) -> tuple[Entry, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info, b""


def _dev(name: str) -> tuple[Entry, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.devmajor, info.devminor, info.mode = tarfile.BLKTYPE, 8, 0, 0o666
    return info, b""


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    """(the layer's directory inside a store, a directory outside holding a secret)."""
    store = tmp_path / "store"
    fs = store / "layer"
    fs.mkdir(parents=True)
    (store / "sibling-layer").mkdir()
    (store / "sibling-layer" / "kept").write_text("kept")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    return fs, outside


def _apply(fs: Path, entries: list[tuple[Entry, bytes]]) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r|") as tar:
        extract_layer(tar, fs, "sha256:test", is_root=False)


def _untouched(fs: Path, outside: Path) -> None:
    assert (outside / "secret").read_text() == "secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert fs.is_dir()
    assert (fs.parent / "sibling-layer" / "kept").read_text() == "kept"
    assert sorted(p.name for p in fs.parent.iterdir()) == ["layer", "sibling-layer"]


def test_a_dot_dot_entry_is_refused(place: tuple[Path, Path]) -> None:
    fs, outside = place
    with pytest.raises(InvalidArgument, match=r"'\.\./outside/x'.*escapes the layer root"):
        _apply(fs, [_reg("../outside/x")])
    _untouched(fs, outside)


def test_an_absolute_entry_lands_inside_the_root(place: tuple[Path, Path]) -> None:
    fs, outside = place
    _apply(fs, [_reg(f"{outside}/x", b"in")])
    assert (fs / str(outside).lstrip("/") / "x").read_bytes() == b"in"
    _untouched(fs, outside)


@pytest.mark.parametrize("target", ["OUTSIDE", "../../outside", "/"])
def test_writing_through_a_symlink_is_refused(place: tuple[Path, Path], target: str) -> None:
    fs, outside = place
    target = str(outside) if target == "OUTSIDE" else target
    with pytest.raises(InvalidArgument, match="'lnk/secret' goes through the symlink 'lnk'"):
        _apply(fs, [_link("lnk", target, tarfile.SYMTYPE), _reg("lnk/secret", b"owned")])
    _untouched(fs, outside)


def test_a_file_over_a_symlink_replaces_the_symlink(place: tuple[Path, Path]) -> None:
    fs, outside = place
    _apply(fs, [_link("f", str(outside / "secret"), tarfile.SYMTYPE), _reg("f", b"mine")])
    assert not (fs / "f").is_symlink()
    assert (fs / "f").read_bytes() == b"mine"
    _untouched(fs, outside)


def test_hard_links_stay_inside_the_root(place: tuple[Path, Path]) -> None:
    fs, outside = place
    with pytest.raises(InvalidArgument, match="escapes the layer root"):
        _apply(fs, [_link("h", "../../outside/secret", tarfile.LNKTYPE)])
    # an absolute target names a file of the layer, never the host's
    with pytest.raises(InvalidArgument, match="hard link 'h' to missing"):
        _apply(fs, [_link("h", str(outside / "secret"), tarfile.LNKTYPE)])
    with pytest.raises(InvalidArgument, match="goes through the symlink 'lnk'"):
        _apply(fs, [_link("lnk", str(outside), tarfile.SYMTYPE),
                    _link("h2", "lnk/secret", tarfile.LNKTYPE)])
    assert (outside / "secret").stat().st_nlink == 1
    _untouched(fs, outside)


def test_a_hard_link_to_a_symlink_links_the_symlink(place: tuple[Path, Path]) -> None:
    fs, outside = place
    _apply(fs, [_link("s", str(outside / "secret"), tarfile.SYMTYPE),
                _link("h", "s", tarfile.LNKTYPE)])
    assert (fs / "h").is_symlink()
    assert os.readlink(fs / "h") == str(outside / "secret")
    assert (outside / "secret").stat().st_nlink == 1
    _untouched(fs, outside)


@pytest.mark.parametrize("name", [".wh...", ".wh..", ".wh.", "sub/.wh...", "sub/.wh.."])
def test_a_whiteout_naming_no_entry_of_its_directory_is_refused(
        place: tuple[Path, Path], name: str) -> None:
    """``.wh...`` would white out the layer's parent (the store), ``.wh..`` the root."""
    fs, outside = place
    (fs / "sub").mkdir()
    (fs / "sub" / "kept").write_text("kept")
    with pytest.raises(InvalidArgument, match=f"invalid whiteout name: {name.split('/')[-1]}"):
        _apply(fs, [_reg(name, b"")])
    assert (fs / "sub" / "kept").read_text() == "kept"
    _untouched(fs, outside)


def test_a_whiteout_through_a_symlink_is_refused(place: tuple[Path, Path]) -> None:
    fs, outside = place
    with pytest.raises(InvalidArgument, match="goes through the symlink 'lnk'"):
        _apply(fs, [_link("lnk", str(outside), tarfile.SYMTYPE), _reg("lnk/.wh.secret", b"")])
    with pytest.raises(InvalidArgument, match="goes through the symlink 'lnk'"):
        _apply(fs, [_reg("lnk/.wh..wh..opq", b"")])
    _untouched(fs, outside)


def test_a_whiteout_removes_only_its_own_entry(place: tuple[Path, Path]) -> None:
    fs, outside = place
    _apply(fs, [_dir("d"), _reg("d/a"), _reg("d/b"), _reg("d/.wh.a", b"")])
    assert sorted(p.name for p in (fs / "d").iterdir()) == ["b"]
    _untouched(fs, outside)


def test_devices_are_skipped_and_setuid_kept_without_root(place: tuple[Path, Path]) -> None:
    """As containerd in a user namespace: no device nodes; modes (setuid too) as the tar
    says, since the container's no_new_privs and capabilities decide what they grant."""
    fs, outside = place
    _apply(fs, [_dev("disk"), _reg("su", b"#!", 0o4755)])
    assert not os.path.lexists(fs / "disk")
    assert stat.S_IMODE((fs / "su").stat().st_mode) == 0o4755
    _untouched(fs, outside)
