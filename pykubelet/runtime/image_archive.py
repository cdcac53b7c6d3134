"""Image archives as ``docker save`` and ``skopeo copy ... oci-archive:`` write them:
opening the tar, finding its images (a docker-archive's manifest.json, or an OCI layout's
index.json through nested indexes, linux/amd64 chosen) and reading their members, following
in-archive symlinks. What an archive holds is read here; the store records it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pykubelet.runtime import imageref
from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.imageref import sha256_hex
from pykubelet.runtime.layer_unpack import clean_member_path

_MEDIA_INDEXES = {
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
}


@dataclass
class ArchiveImage:
    """One image found in an archive, before import."""

    config_member: str
    config_digest: str | None  # expected digest of the config blob when the archive names it
    layer_members: list[str]
    names: list[str]
    manifest_digest: str = ""


@contextlib.contextmanager
def open_archive(
    path: str | os.PathLike[str],
) -> Iterator[tuple[tarfile.TarFile, dict[str, tarfile.TarInfo], list[ArchiveImage]]]:
    """The open tar, its members by clean path, and the images it holds (at least one)."""
    try:
        tar = tarfile.open(path, "r:*")  # noqa: SIM115 (closed by the with below)
    except FileNotFoundError as exc:
        raise InvalidArgument(f"archive {str(path)!r} does not exist") from exc
    except tarfile.TarError as exc:
        raise InvalidArgument(f"archive {str(path)!r} is not a tar file: {exc}") from exc
    with tar:
        try:
            listed = tar.getmembers()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise InvalidArgument(f"archive {str(path)!r} is damaged or truncated: "
                                  f"{exc}") from exc
        members = {clean_member_path(m.name, "archive"): m for m in listed}
        if "manifest.json" in members:
            found = scan_docker_archive(tar, members)
        elif "index.json" in members:
            found = scan_oci_layout(tar, members)
        else:
            raise InvalidArgument(
                f"archive {str(path)!r} is neither a docker-archive (manifest.json) "
                "nor an OCI image layout (index.json)"
            )
        if not found:
            raise InvalidArgument(f"archive {str(path)!r} holds no image")
        yield tar, members, found


def read_member(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str) -> bytes:
    """The bytes of the regular file ``name`` names in the archive."""
    member = resolve_member(members, name)
    f = tar.extractfile(member)
    assert f is not None
    return f.read()


def scan_docker_archive(
    tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo]
) -> list[ArchiveImage]:
    """The images a docker-archive's manifest.json lists (``docker save``)."""
    try:
        manifest = json.loads(read_member(tar, members, "manifest.json"))
    except ValueError as exc:
        raise InvalidArgument(f"archive: manifest.json is not JSON: {exc}") from exc
    if not isinstance(manifest, list):
        raise InvalidArgument("archive: manifest.json must be a list")
    out = []
    for i, entry in enumerate(manifest):
        if not isinstance(entry, dict) or "Config" not in entry or "Layers" not in entry:
            raise InvalidArgument(f"archive: manifest.json[{i}] lacks Config or Layers")
        names = [imageref.normalize(t, field=f"manifest.json[{i}].RepoTags")
                 for t in entry.get("RepoTags") or []]
        out.append(ArchiveImage(entry["Config"], None, list(entry["Layers"]), names))
    return out


def scan_oci_layout(
    tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo]
) -> list[ArchiveImage]:
    """The images an OCI layout's index.json names, through nested indexes."""
    def blob(digest: str) -> bytes:
        data = read_member(tar, members, f"blobs/sha256/{sha256_hex(digest, 'blob')}")
        if hashlib.sha256(data).hexdigest() != sha256_hex(digest, "blob"):
            raise InvalidArgument(f"archive: blob {digest} does not match its digest")
        return data

    try:
        index = json.loads(read_member(tar, members, "index.json"))
    except ValueError as exc:
        raise InvalidArgument(f"archive: index.json is not JSON: {exc}") from exc
    out: list[ArchiveImage] = []

    def visit(descs: list[dict[str, Any]], inherited: list[str]) -> None:
        for desc in descs:
            ann = desc.get("annotations") or {}
            names = list(inherited)
            for key in ("io.containerd.image.name", "org.opencontainers.image.ref.name"):
                ref = ann.get(key, "")
                # a bare tag ("latest") names nothing without a repository
                if ref and ("/" in ref or ":" in ref) and "@" not in ref:
                    norm = imageref.normalize(ref, field=f"index.json {key}")
                    if norm not in names:
                        names.append(norm)
            media = desc.get("mediaType", "")
            data = blob(desc["digest"])
            doc = json.loads(data)
            if media in _MEDIA_INDEXES or "manifests" in doc:
                plat = [m for m in doc.get("manifests", [])
                        if (m.get("platform") or {}).get("os", "linux") == "linux"
                        and (m.get("platform") or {}).get("architecture", "amd64") == "amd64"]
                visit(plat[:1], names)
                continue
            out.append(ArchiveImage(
                config_member=f"blobs/sha256/{sha256_hex(doc['config']['digest'], 'config')}",
                config_digest=doc["config"]["digest"],
                layer_members=[f"blobs/sha256/{sha256_hex(la['digest'], 'layer')}"
                               for la in doc.get("layers", [])],
                names=names,
                manifest_digest=desc["digest"],
            ))

    visit(index.get("manifests", []), [])
    return out


def resolve_member(members: dict[str, tarfile.TarInfo], name: str) -> tarfile.TarInfo:
    """The regular file ``name`` names in the archive, following in-archive symlinks
    (skopeo's docker-archives link ``<id>/layer.tar`` to ``../<diff_id>.tar``)."""
    rel = clean_member_path(name, "archive")
    for _ in range(8):
        member = members.get(rel)
        if member is None:
            break
        if member.isfile():
            return member
        if not member.issym():
            break
        base = rel.rsplit("/", 1)[0] if "/" in rel else ""
        target = os.path.normpath(os.path.join(base, member.linkname))
        rel = clean_member_path(target, "archive")
    raise InvalidArgument(f"archive: {name!r} is missing or not a regular file")
