"""A layer tar unpacked into an overlayfs lower dir, as containerd's archive/tar.go applies
a layer for its overlay snapshotter: OCI whiteouts (``.wh.<name>``) become overlay
whiteouts (0:0 character devices) and opaque markers (``.wh..wh..opq``) the
``trusted.overlay.opaque=y`` xattr; owners, modes, xattrs and times as the tar says (owners,
devices and xattrs only as root); no entry may leave the layer's root, directly or through a
symlink. ``unpack_verified`` reads a plain or gzipped stream and checks the uncompressed
digest against the layer's diff_id.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import shutil
import stat
import tarfile
from pathlib import Path
from typing import IO, cast

from pykubelet.runtime.errors import InvalidArgument

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_WHITEOUT_PREFIX = ".wh."
_OPAQUE = ".wh..wh..opq"


class HashingReader:
    """A read-only stream that hashes what passes through it (the layer's diff_id)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.hash = hashlib.sha256()
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self.hash.update(data)
        self.count += len(data)
        return data

    def drain(self) -> None:
        while self.read(1 << 20):
            pass


def clean_member_path(name: str, what: str) -> str:
    """A layer entry's path relative to the layer root; '' for the root itself."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise InvalidArgument(f"{what}: entry {name!r} escapes the layer root")
    return "/".join(parts)


def unpack_verified(raw: IO[bytes], fs: Path, diff_id: str, what: str,
                    is_root: bool) -> tuple[int, int]:
    """Unpack a (possibly gzipped) layer tar into ``fs``, checking its digest against
    ``diff_id``; returns (bytes, inodes)."""
    if not hasattr(raw, "peek"):
        raw = io.BufferedReader(raw, 1 << 20)  # type: ignore[arg-type,type-var]
    head = raw.peek(4)[:4]  # type: ignore[attr-defined]
    if head.startswith(_ZSTD_MAGIC):
        raise InvalidArgument(f"layer {diff_id}: zstd-compressed layers are not supported")
    stream: IO[bytes] = (
        cast(IO[bytes], gzip.GzipFile(fileobj=raw)) if head.startswith(_GZIP_MAGIC) else raw
    )
    hashing = HashingReader(stream)
    try:
        with tarfile.open(fileobj=hashing, mode="r|") as layer:  # type: ignore[call-overload]
            size, inodes = extract_layer(layer, fs, diff_id, is_root)
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
        raise InvalidArgument(f"layer {diff_id}: cannot unpack: {exc}") from exc
    hashing.drain()
    if "sha256:" + hashing.hash.hexdigest() != diff_id:
        raise InvalidArgument(
            f"layer {what}: content digest sha256:{hashing.hash.hexdigest()} "
            f"does not match diff_id {diff_id}"
        )
    return size, inodes


def _check_no_symlink_parents(fs: Path, rel: str, what: str) -> None:
    """Refuse entries that would be written through a symlink (a layer escaping its root)."""
    cur = fs
    for part in rel.split("/")[:-1]:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise InvalidArgument(f"{what}: entry {rel!r} goes through the symlink {part!r}")


def _ensure_parents(fs: Path, rel: str, what: str) -> Path:
    _check_no_symlink_parents(fs, rel, what)
    target = fs / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _remove_existing(target: Path, keep_dir: bool) -> None:
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        if not keep_dir:
            shutil.rmtree(target)
    else:
        target.unlink()


def extract_layer(layer: tarfile.TarFile, fs: Path, diff_id: str,
                   is_root: bool) -> tuple[int, int]:
    """Extract a layer as an overlay diff dir; returns (bytes, inodes)."""
    what = f"layer {diff_id}"
    size = inodes = 0
    dirs: list[tuple[Path, tarfile.TarInfo]] = []
    for m in layer:
        rel = clean_member_path(m.name, what)
        if not rel:
            continue
        base = rel.rsplit("/", 1)[-1]
        parent_rel = rel.rsplit("/", 1)[0] if "/" in rel else ""
        inodes += 1
        if base == _OPAQUE:
            _check_no_symlink_parents(fs, rel, what)
            d = fs / parent_rel if parent_rel else fs
            d.mkdir(parents=True, exist_ok=True)
            if is_root:
                os.setxattr(d, "trusted.overlay.opaque", b"y")
            continue
        if base.startswith(_WHITEOUT_PREFIX):
            hidden_base = base[len(_WHITEOUT_PREFIX):]
            if hidden_base in ("", ".", ".."):
                # containerd's validateWhiteout: ".wh.." would white out the directory
                # itself, ".wh..." its parent (at the top, the store holding the layer)
                raise InvalidArgument(f"{what}: entry {rel!r}: invalid whiteout name: "
                                      f"{base}: invalid archive")
            hidden = (parent_rel + "/" if parent_rel else "") + hidden_base
            target = _ensure_parents(fs, hidden, what)
            _remove_existing(target, keep_dir=False)
            if is_root:
                os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))
            continue
        target = _ensure_parents(fs, rel, what)
        _remove_existing(target, keep_dir=m.isdir())
        if m.isdir():
            target.mkdir(exist_ok=True)
            dirs.append((target, m))
            continue
        if m.isreg():
            src = layer.extractfile(m)
            assert src is not None
            with open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            size += m.size
        elif m.issym():
            os.symlink(m.linkname, target)
        elif m.islnk():
            link_rel = clean_member_path(m.linkname, what)
            _check_no_symlink_parents(fs, link_rel, what)
            src_path = fs / link_rel
            if not os.path.lexists(src_path):
                raise InvalidArgument(f"{what}: hard link {rel!r} to missing {m.linkname!r}")
            os.link(src_path, target, follow_symlinks=False)
            continue  # shares the inode: attributes already set
        elif m.ischr() or m.isblk():
            if not is_root:
                continue
            kind = stat.S_IFCHR if m.ischr() else stat.S_IFBLK
            os.mknod(target, kind | (m.mode & 0o7777), os.makedev(m.devmajor, m.devminor))
        elif m.isfifo():
            os.mkfifo(target, m.mode & 0o7777)
        else:
            continue
        _apply_attrs(target, m, is_root)
    for target, m in reversed(dirs):
        _apply_attrs(target, m, is_root)
    return size, inodes


def _apply_attrs(target: Path, m: tarfile.TarInfo, is_root: bool) -> None:
    if is_root:
        os.lchown(target, m.uid, m.gid)
    for key, value in m.pax_headers.items():
        if key.startswith("SCHILY.xattr.") and is_root:
            with contextlib.suppress(OSError):
                os.setxattr(target, key[len("SCHILY.xattr."):],
                            value.encode("utf-8", "surrogateescape"), follow_symlinks=False)
    if not m.issym():
        os.chmod(target, m.mode & 0o7777)
    os.utime(target, ns=(int(m.mtime * 1e9), int(m.mtime * 1e9)), follow_symlinks=False)
