"""The node's image store: content-addressed, layers unpacked once, safe across processes.

Layout under ``root`` (``<--root>/images``)::

    lock                   flock: every mutation (import, remove, lease) holds it
    index.json             {"images": {id: record}}, replaced atomically, read without the lock
    configs/<hex>.json     the image config blob as imported (the image ID is its digest)
    layers/<hex>/fs        one unpacked layer (keyed by its diff_id), an overlayfs lower dir:
                           OCI whiteouts become overlay whiteouts (0:0 char devices) and
                           opaque dirs (``trusted.overlay.opaque=y``), as containerd's
                           overlay snapshotter does
    layers/<hex>/meta.json {"size": bytes, "inodes": n}
    leases/<holder>.json   layers a container's rootfs uses; removing an image never deletes
                           a layer a lease still names

Archives: docker-archive (``docker save``: manifest.json + config + layer tars) and OCI image
layout tars (``skopeo copy ... oci-archive:``, ``image_build``), read by ``image_archive``;
registries' images come through ``registry`` (``add_pulled``). Layer blobs may be plain tar
or gzip, unpacked by ``layer_unpack``; their uncompressed digest must match the config's
``rootfs.diff_ids``. The store records what those read: the index, configs, layers, leases.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from pycni.atomic_files import write_atomic
from pykubelet.runtime import imageref
from pykubelet.runtime.errors import InvalidArgument, NotFound
from pykubelet.runtime.image_archive import ArchiveImage, open_archive, read_member, resolve_member
from pykubelet.runtime.imageref import sha256_hex
from pykubelet.runtime.layer_unpack import unpack_verified


@dataclass(frozen=True)
class ImageConfig:
    """The parts of the image config a container needs (OCI ``config`` object)."""

    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    working_dir: str = ""
    user: str = ""
    exposed_ports: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    stop_signal: str = ""

    @classmethod
    def from_oci(cls, cfg: dict[str, Any] | None) -> ImageConfig:
        cfg = cfg or {}
        return cls(
            entrypoint=list(cfg.get("Entrypoint") or []),
            cmd=list(cfg.get("Cmd") or []),
            env=list(cfg.get("Env") or []),
            working_dir=cfg.get("WorkingDir") or "",
            user=cfg.get("User") or "",
            exposed_ports=sorted((cfg.get("ExposedPorts") or {}).keys()),
            volumes=sorted((cfg.get("Volumes") or {}).keys()),
            labels=dict(cfg.get("Labels") or {}),
            stop_signal=cfg.get("StopSignal") or "",
        )


@dataclass(frozen=True)
class Image:
    """One image in the store. ``id`` is the config digest (``sha256:...``)."""

    id: str
    repo_tags: list[str]
    repo_digests: list[str]
    size: int
    layers: list[str]
    config: ImageConfig
    manifest_digest: str = ""
    created: str = ""
    imported_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Image:
        d = dict(d)
        d["config"] = ImageConfig(**d["config"])
        return cls(**d)


@dataclass(frozen=True)
class FsInfo:
    """ImageFsInfo: what the image layers use on the store's filesystem."""

    timestamp_ns: int
    mountpoint: str
    used_bytes: int
    inodes_used: int


@dataclass(frozen=True)
class RemovedRefs:
    """What ``untag`` did: the references dropped, and whether the image itself went."""

    image: Image
    untagged: list[str]
    deleted: bool


def _write_json_atomic(path: Path, obj: object, *, durable: bool = True) -> None:
    write_atomic(path, json.dumps(obj, sort_keys=True), durable=durable)


class ImageStore:
    """Import, list, resolve and remove images; unpacked layers serve as overlay lower dirs."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._layers = self.root / "layers"
        self._configs = self.root / "configs"
        self._leases = self.root / "leases"
        self._tmp = self.root / "tmp"
        for d in (self.root, self._layers, self._configs, self._leases, self._tmp):
            d.mkdir(parents=True, exist_ok=True)
        self._index_path = self.root / "index.json"
        self._lock_path = self.root / "lock"
        self._cache_key: tuple[int, int, int] | None = None
        self._cache: dict[str, Image] = {}
        self._is_root = os.geteuid() == 0

    # ----------------------------------------------------------------- locking, index
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read_index(self) -> dict[str, Image]:
        try:
            st = os.stat(self._index_path)
        except FileNotFoundError:
            return {}
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self._cache_key:
            with open(self._index_path) as f:
                raw = json.load(f)
            self._cache = {k: Image.from_json(v) for k, v in raw.get("images", {}).items()}
            self._cache_key = key
        return dict(self._cache)

    def _write_index(self, images: dict[str, Image]) -> None:
        doc = {"images": {k: v.to_json() for k, v in images.items()}}
        _write_json_atomic(self._index_path, doc)

    # ----------------------------------------------------------------- queries
    def list(self) -> list[Image]:
        return sorted(self._read_index().values(), key=lambda i: i.id)

    def get(self, ref: str) -> Image | None:
        """The image ``ref`` names, or None.

        As docker and crictl resolve: a full ID; else a reference (tag or repo digest);
        else a unique ID prefix (``3f57d9`` or ``sha256:3f57d9``). A prefix matching
        several images is an InvalidArgument, never a guess.
        """
        images = self._read_index()
        ref = ref.strip()
        if imageref.is_image_id(ref):
            return images.get(imageref.canonical_id(ref))
        try:
            norm = imageref.normalize(ref)
        except InvalidArgument:
            norm = None
        if norm is not None:
            for img in images.values():
                if norm in img.repo_tags or norm in img.repo_digests:
                    return img
        hits = self._by_id_prefix(images, ref)
        if len(hits) > 1:
            raise InvalidArgument(f"image ID prefix {ref!r} is ambiguous: it matches "
                                  f"{len(hits)} images")
        return hits[0] if hits else None

    @staticmethod
    def _by_id_prefix(images: dict[str, Image], ref: str) -> builtins.list[Image]:
        hexpart = ref.removeprefix("sha256:")
        if not hexpart or len(hexpart) > 64 or any(c not in "0123456789abcdef" for c in hexpart):
            return []
        return [img for k, img in images.items() if k.startswith("sha256:" + hexpart)]

    def require(self, ref: str, *, field: str = "image") -> Image:
        """Like get, but raise NotFound (or InvalidArgument for a malformed ref)."""
        if not ref.strip():
            raise InvalidArgument(f"{field}: image reference is empty")
        img = self.get(ref)
        if img is None:
            if not imageref.is_image_id(ref.strip()):
                imageref.normalize(ref, field=field)  # malformed refs get InvalidArgument
            raise NotFound(f"{field}: image {ref!r} not found in the local image store")
        return img

    def layer_dir(self, diff_id: str) -> Path:
        return self._layers / sha256_hex(diff_id, "layer") / "fs"

    def layer_dirs(self, image: Image) -> builtins.list[Path]:
        """The image's unpacked layers, bottom first."""
        return [self.layer_dir(d) for d in image.layers]

    def fs_info(self) -> FsInfo:
        used = inodes = 0
        for meta in self._layers.glob("*/meta.json"):
            try:
                m = json.loads(meta.read_text())
            except (OSError, ValueError):
                continue
            used += int(m.get("size", 0))
            inodes += int(m.get("inodes", 0))
        return FsInfo(time.time_ns(), str(self.root), used, inodes)

    # ----------------------------------------------------------------- leases
    def acquire_lease(self, holder: str, image: Image) -> builtins.list[Path]:
        """Pin ``image``'s layers for ``holder`` (a container ID); returns the layer dirs."""
        with self._locked():
            current = self._read_index().get(image.id)
            if current is None:
                raise NotFound(f"image {image.id} was removed")
            dirs = self.layer_dirs(current)
            for d in dirs:
                if not d.is_dir():
                    raise NotFound(f"layer {d.parent.name} of image {image.id} is missing")
            # no fsync: leases only matter while their containers' mounts exist, and a
            # host crash takes those away too (it would cost the create path milliseconds)
            _write_json_atomic(self._leases / f"{holder}.json",
                               {"image": current.id, "layers": current.layers}, durable=False)
            return dirs

    def release_lease(self, holder: str) -> None:
        with self._locked():
            with contextlib.suppress(FileNotFoundError):
                (self._leases / f"{holder}.json").unlink()
            self._gc_layers(self._read_index())

    def lease_holders(self) -> builtins.list[str]:
        return sorted(p.stem for p in self._leases.glob("*.json"))

    def _leased_layers(self) -> set[str]:
        leased: set[str] = set()
        for p in self._leases.glob("*.json"):
            try:
                leased.update(json.loads(p.read_text()).get("layers", []))
            except (OSError, ValueError):
                continue
        return leased

    # ----------------------------------------------------------------- remove
    def remove(self, ref: str) -> Image | None:
        """Remove the image ``ref`` names with all its tags; None when it was not there."""
        with self._locked():
            images = self._read_index()
            img = self.get(ref)
            if img is None or img.id not in images:
                return None
            del images[img.id]
            self._write_index(images)
            with contextlib.suppress(FileNotFoundError):
                (self._configs / f"{sha256_hex(img.id, 'image')}.json").unlink()
            self._gc_layers(images)
            return img

    def untag(self, ref: str) -> RemovedRefs | None:
        """``docker rmi REF``: drop the reference ``ref`` names; the image goes only when no
        reference is left. An ID (or ID prefix) removes the image with all its references.

        Dropping a repository's last tag drops its digest references too (as docker does).
        None when nothing matches.
        """
        with self._locked():
            images = self._read_index()
            img = self.get(ref)
            if img is None or img.id not in images:
                return None
            img = images[img.id]
            norm = None
            with contextlib.suppress(InvalidArgument):
                norm = imageref.normalize(ref.strip())
            if norm is None or (norm not in img.repo_tags and norm not in img.repo_digests):
                return self._delete(images, img)  # named by its ID
            tags = [t for t in img.repo_tags if t != norm]
            repos = {imageref.repository(t) for t in tags}
            digests = [d for d in img.repo_digests
                       if d != norm and imageref.repository(d) in repos]
            if not tags and not digests:
                return self._delete(images, img)
            gone = [r for r in (*img.repo_tags, *img.repo_digests)
                    if r not in tags and r not in digests]
            images[img.id] = replace(img, repo_tags=tags, repo_digests=digests)
            self._write_index(images)
            return RemovedRefs(img, gone, deleted=False)

    def _delete(self, images: dict[str, Image], img: Image) -> RemovedRefs:
        """Remove ``img`` from ``images`` and the disk (caller holds the lock)."""
        del images[img.id]
        self._write_index(images)
        with contextlib.suppress(FileNotFoundError):
            (self._configs / f"{sha256_hex(img.id, 'image')}.json").unlink()
        self._gc_layers(images)
        return RemovedRefs(img, [*img.repo_tags, *img.repo_digests], deleted=True)

    def _gc_layers(self, images: dict[str, Image]) -> None:
        keep = {d for img in images.values() for d in img.layers} | self._leased_layers()
        keep_hex = {sha256_hex(d, "layer") for d in keep}
        for layer in self._layers.iterdir():
            if layer.name not in keep_hex:
                _rmtree(layer)

    # ----------------------------------------------------------------- import
    def import_archive(
        self, path: str | os.PathLike[str], *, name: str = "",
        progress: Callable[[LayerProgress], None] | None = None,
    ) -> builtins.list[Image]:
        """Import every image in a docker-archive or OCI-layout tar; ``name`` tags the first.
        ``progress`` hears of each layer as it is read (as a pull's progress does)."""
        if name:
            name = imageref.normalize(name, field="name")
        with open_archive(path) as (tar, members, found):
            if name:
                found[0].names = [name, *found[0].names]
            return [self._import_one(tar, members, item, progress) for item in found]

    def _import_one(self, tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo],
                    item: ArchiveImage,
                    progress: Callable[[LayerProgress], None] | None = None) -> Image:
        config_b = read_member(tar, members, item.config_member)
        image_id = "sha256:" + hashlib.sha256(config_b).hexdigest()
        if item.config_digest and item.config_digest != image_id:
            raise InvalidArgument(f"archive: config {item.config_member} does not match its digest")
        try:
            config = json.loads(config_b)
            diff_ids = list(config["rootfs"]["diff_ids"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidArgument(f"archive: image config {item.config_member} is invalid: "
                                  f"{exc}") from exc
        if len(diff_ids) != len(item.layer_members):
            raise InvalidArgument(
                f"archive: image {image_id} names {len(diff_ids)} diff_ids "
                f"but {len(item.layer_members)} layers"
            )
        for d in diff_ids:
            sha256_hex(d, "rootfs.diff_ids")
        size = 0
        with self._locked():
            for diff_id, member_name in zip(diff_ids, item.layer_members, strict=True):
                member = resolve_member(members, member_name)
                size += member.size
                self._unpack_layer(tar, member, diff_id, progress)
            # durable before the index names it: a crash never leaves a torn config
            write_atomic(self._configs / f"{image_id.split(':', 1)[1]}.json", config_b)
            images = self._read_index()
            tags = list(dict.fromkeys(item.names))
            old = images.get(image_id)
            if old is not None:
                tags = list(dict.fromkeys([*old.repo_tags, *tags]))
            digests: list[str] = list(old.repo_digests) if old else []
            if item.manifest_digest:
                for t in tags:
                    rd = f"{imageref.repository(t)}@{item.manifest_digest}"
                    if rd not in digests:
                        digests.append(rd)
            # a tag names one image: take it from any other image that had it
            for other_id, other in list(images.items()):
                if other_id != image_id and set(other.repo_tags) & set(tags):
                    images[other_id] = replace(
                        other, repo_tags=[t for t in other.repo_tags if t not in tags])
            img = Image(
                id=image_id,
                repo_tags=tags,
                repo_digests=digests,
                size=size,
                layers=diff_ids,
                config=ImageConfig.from_oci(config.get("config")),
                manifest_digest=item.manifest_digest,
                created=config.get("created", ""),
                imported_at=old.imported_at if old else time.time(),
            )
            images[image_id] = img
            self._write_index(images)
            return img

    def _unpack_layer(self, tar: tarfile.TarFile, member: tarfile.TarInfo, diff_id: str,
                      progress: Callable[[LayerProgress], None] | None = None) -> None:
        """Unpack one layer blob into layers/<diff_id hex>/fs, once (caller holds the lock)."""
        if self.has_layer(diff_id):
            if progress:
                progress(LayerProgress(diff_id, member.size, member.size, skipped=True))
            return
        raw = tar.extractfile(member)
        assert raw is not None
        if progress:
            raw = _CountingReader(raw, lambda n: progress(  # type: ignore[assignment]
                LayerProgress(diff_id, n, member.size)))
        self._unpack_stream(raw, diff_id, member.name)
        if progress:
            progress(LayerProgress(diff_id, member.size, member.size, finished=True))

    # ----------------------------------------------------------------- pulled images
    def config_blob(self, digest: str) -> bytes | None:
        """An image config the store already has (a pull need not fetch it), or None."""
        try:
            data = (self._configs / f"{sha256_hex(digest, 'config')}.json").read_bytes()
        except (OSError, InvalidArgument):
            return None
        return data if "sha256:" + hashlib.sha256(data).hexdigest() == digest else None

    def has_layer(self, diff_id: str) -> bool:
        """True once the layer is unpacked (a pull need not download it again)."""
        return (self._layers / sha256_hex(diff_id, "rootfs.diff_ids") / "meta.json").exists()

    def tmp_dir(self) -> Path:
        """Where downloads wait before they are unpacked (same filesystem as the store)."""
        return self._tmp

    def add_pulled(self, *, config: bytes, layers: builtins.list[tuple[str, Path | None]],
                   name: str, manifest_digest: str, size: int) -> Image:
        """Record an image a registry served: ``config`` (verified by the caller), and per
        diff_id the downloaded blob (None when the layer is already unpacked). ``name`` is
        the normalised reference pulled (a tag gives a tag; a digest only a repo digest)."""
        image_id = "sha256:" + hashlib.sha256(config).hexdigest()
        try:
            cfg = json.loads(config)
            diff_ids = list(cfg["rootfs"]["diff_ids"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidArgument(f"image config {image_id} is invalid: {exc}") from exc
        if diff_ids != [d for d, _ in layers]:
            raise InvalidArgument(f"image {image_id}: manifest layers do not match the "
                                  "config's rootfs.diff_ids")
        with self._locked():
            for diff_id, blob in layers:
                if self.has_layer(diff_id):
                    continue
                if blob is None:
                    raise NotFound(f"layer {diff_id} was removed during the pull")
                with open(blob, "rb") as raw:
                    self._unpack_stream(raw, diff_id, str(blob.name))
            # durable before the index names it: a crash never leaves a torn config
            write_atomic(self._configs / f"{image_id.split(':', 1)[1]}.json", config)
            images = self._read_index()
            old = images.get(image_id)
            tags = list(old.repo_tags) if old else []
            digests = list(old.repo_digests) if old else []
            rd = f"{imageref.repository(name)}@{manifest_digest}"
            if rd not in digests:
                digests.append(rd)
            if "@" not in name and name not in tags:
                tags.append(name)
                for other_id, other in list(images.items()):
                    if other_id != image_id and name in other.repo_tags:
                        images[other_id] = replace(
                            other, repo_tags=[t for t in other.repo_tags if t != name])
            img = Image(
                id=image_id, repo_tags=tags, repo_digests=digests,
                size=old.size if old else size, layers=diff_ids,
                config=ImageConfig.from_oci(cfg.get("config")),
                manifest_digest=manifest_digest, created=cfg.get("created", ""),
                imported_at=old.imported_at if old else time.time(),
            )
            images[image_id] = img
            self._write_index(images)
            return img

    def copy_from(self, src: ImageStore, ref: str) -> Image:
        """Copy the image ``ref`` names in another store of this host (its unpacked layers,
        config, tags and repo digests) into this one, as `kind load docker-image` copies
        an image from the host onto its nodes. Layers this store has are not copied; a tag
        the image brings is taken from any other image here that had it."""
        img = src.require(ref)
        config = src.config_blob(img.id)
        if config is None:
            raise NotFound(f"image {ref!r}: its config {img.id} is missing from {src.root}")
        for diff_id in img.layers:
            if self.has_layer(diff_id):
                continue
            hexid = sha256_hex(diff_id, "layer")
            source = src._layers / hexid
            if not (source / "meta.json").exists():
                raise NotFound(f"image {ref!r}: layer {diff_id} is missing from {src.root}")
            work = self._tmp / f"{hexid}.{uuid.uuid4().hex[:8]}"
            try:  # cp -a keeps owners, modes, devices (whiteouts) and xattrs
                subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(work)],
                               check=True, capture_output=True, text=True)
                with self._locked():
                    final = self._layers / hexid
                    if not (final / "meta.json").exists():
                        if final.exists():
                            _rmtree(final)
                        os.rename(work, final)
            except subprocess.CalledProcessError as exc:
                raise InvalidArgument(f"layer {diff_id}: cannot copy from {src.root}: "
                                      f"{exc.stderr.strip()}") from exc
            finally:
                if work.exists():
                    _rmtree(work)
        with self._locked():
            write_atomic(self._configs / f"{img.id.split(':', 1)[1]}.json", config)
            images = self._read_index()
            old = images.get(img.id)
            tags = list(dict.fromkeys([*(old.repo_tags if old else []), *img.repo_tags]))
            digests = list(dict.fromkeys([*(old.repo_digests if old else []),
                                          *img.repo_digests]))
            for other_id, other in list(images.items()):
                if other_id != img.id and set(other.repo_tags) & set(img.repo_tags):
                    images[other_id] = replace(
                        other, repo_tags=[t for t in other.repo_tags if t not in img.repo_tags])
            copied = replace(img, repo_tags=tags, repo_digests=digests,
                             imported_at=old.imported_at if old else time.time())
            images[img.id] = copied
            self._write_index(images)
            return copied

    def unpack_reader(self, raw: IO[bytes], diff_id: str, what: str) -> None:
        """Unpack a layer from a stream as it arrives (a pull feeds its download here).

        The extraction runs without the store lock, into its own work dir; only the final
        rename takes it, and a layer someone else finished meanwhile wins. The layer is
        unreferenced until ``add_pulled`` indexes the image.
        """
        if self.has_layer(diff_id):
            return
        self._unpack_stream(raw, diff_id, what, locked_commit=True)

    def _unpack_stream(self, raw: IO[bytes], diff_id: str, what: str, *,
                       locked_commit: bool = False) -> None:
        """Unpack a (possibly gzipped) layer tar, checking its digest against ``diff_id``.
        The caller holds the lock, unless ``locked_commit`` (then only the rename takes it)."""
        hexid = sha256_hex(diff_id, "rootfs.diff_ids")
        final = self._layers / hexid
        work = Path(self._tmp) / f"{hexid}.{uuid.uuid4().hex[:8]}"
        fs = work / "fs"
        fs.mkdir(parents=True)
        try:
            size, inodes = unpack_verified(raw, fs, diff_id, what, self._is_root)
            _write_json_atomic(work / "meta.json", {"size": size, "inodes": inodes})
            with self._locked() if locked_commit else contextlib.nullcontext():
                if (final / "meta.json").exists():
                    return  # unpacked meanwhile by another pull: ours goes (finally)
                if final.exists():
                    _rmtree(final)  # a half-made leftover without meta.json
                os.rename(work, final)
        finally:
            if work.exists():
                _rmtree(work)


@dataclass(frozen=True)
class LayerProgress:
    """One layer being read from an archive or downloaded from a registry: ``done`` of
    ``total`` bytes (``skipped``: already unpacked)."""

    digest: str
    done: int
    total: int
    skipped: bool = False
    finished: bool = False


class _CountingReader(io.RawIOBase):
    """A reader that reports how many bytes went through it."""

    def __init__(self, raw: IO[bytes], report: Callable[[int], None]) -> None:
        self.raw = raw
        self.report = report
        self.done = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        data = self.raw.read(len(buf))
        n = len(data)
        buf[:n] = data
        self.done += n
        self.report(self.done)
        return n


def _rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


