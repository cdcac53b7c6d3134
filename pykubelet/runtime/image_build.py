"""Build a small busybox image offline, from Debian's ``busybox-static``.

Tests, the demo and the lab need an image without a registry. This writes an OCI
image layout packed as a tar (what ``pykubelet image import``, ``ctr images import``
and ``skopeo copy oci-archive:`` accept) with one layer: the static ``/bin/busybox``,
a symlink per applet in ``/bin``, and a minimal ``/etc`` (passwd, group, hosts).

The output is deterministic: the same busybox binary gives the same digests, so an
image built twice imports as the same image ID.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from pycni.atomic_files import write_atomic
from pykubelet.runtime.errors import InvalidArgument

DEFAULT_BUSYBOX = "/bin/busybox"
DEFAULT_NAME = "docker.io/library/busybox:latest"
DEFAULT_CMD = ("sh",)
DEFAULT_ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
EPOCH = "1970-01-01T00:00:00Z"

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"

_DIRS = (
    ("bin", 0o755),
    ("dev", 0o755),
    ("etc", 0o755),
    ("home", 0o755),
    ("proc", 0o555),
    ("root", 0o700),
    ("run", 0o755),
    ("sys", 0o555),
    ("tmp", 0o1777),
    ("usr", 0o755),
    ("usr/bin", 0o755),
    ("usr/sbin", 0o755),
    ("sbin", 0o755),
    ("var", 0o755),
    ("var/tmp", 0o1777),
)

_ETC_FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\n"
    b"daemon:x:1:1:daemon:/usr/sbin:/bin/false\n"
    b"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "etc/group": b"root:x:0:\ndaemon:x:1:\nnogroup:x:65534:\n",
    "etc/hosts": b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
}


@dataclass(frozen=True)
class BuiltImage:
    """What was written: the name and digests a test can assert against."""

    path: Path
    name: str
    manifest_digest: str
    config_digest: str
    layer_digest: str
    diff_id: str


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _member(
    name: str, kind: bytes, mode: int, size: int = 0, linkname: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.linkname = linkname
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def busybox_applets(busybox: str) -> list[str]:
    """The applet names this busybox provides (``busybox --list``)."""
    out = subprocess.run(
        [busybox, "--list"], check=True, capture_output=True, text=True, timeout=30
    ).stdout
    return sorted({a for a in out.split() if a and "/" not in a and a != "busybox"})


def busybox_version(busybox: str = DEFAULT_BUSYBOX) -> str:
    """The release of this busybox as its images are tagged upstream (``1.35`` for
    ``BusyBox v1.35.0 (Debian 1:1.35.0-4...)``); "" when it does not say."""
    try:
        out = subprocess.run([busybox], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return ""
    m = re.match(r"BusyBox v(\d+)\.(\d+)", out)
    return f"{m.group(1)}.{m.group(2)}" if m else ""


def build_rootfs_layer(busybox: str = DEFAULT_BUSYBOX) -> bytes:
    """The uncompressed layer tar: directories, busybox, applet symlinks, /etc files."""
    data = Path(busybox).read_bytes()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, mode in _DIRS:
            tar.addfile(_member(name, tarfile.DIRTYPE, mode))
        tar.addfile(_member("bin/busybox", tarfile.REGTYPE, 0o755, len(data)), io.BytesIO(data))
        for applet in busybox_applets(busybox):
            tar.addfile(_member(f"bin/{applet}", tarfile.SYMTYPE, 0o777, linkname="busybox"))
        for name in sorted(_ETC_FILES):
            content = _ETC_FILES[name]
            tar.addfile(_member(name, tarfile.REGTYPE, 0o644, len(content)), io.BytesIO(content))
    return buf.getvalue()


def _json_bytes(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def build_busybox_image(
    out: str | os.PathLike[str],
    *,
    name: str = DEFAULT_NAME,
    busybox: str = DEFAULT_BUSYBOX,
    cmd: tuple[str, ...] | list[str] = DEFAULT_CMD,
    entrypoint: tuple[str, ...] | list[str] | None = None,
    env: tuple[str, ...] | list[str] = DEFAULT_ENV,
    working_dir: str = "/",
    user: str = "",
    exposed_ports: tuple[str, ...] | list[str] = (),
) -> BuiltImage:
    """Write the OCI-layout tar to ``out`` (atomically) and return its digests.

    ``name`` is checked (and normalised) before anything is written: an archive whose name
    every importer refuses is worth nothing. InvalidArgument names ``--name``. Other bad
    input (no such busybox, an output directory that does not exist) is an InvalidArgument
    naming it too, raised before anything is written.
    """
    from pykubelet.runtime.imageref import normalize

    name = normalize(name, field="--name")
    if "@" in name:
        raise InvalidArgument(f"--name: {name!r} must be a tag, not a digest reference")
    if not (os.path.isfile(busybox) and os.access(busybox, os.X_OK)):
        raise InvalidArgument(
            f"busybox {busybox}: not found or not an executable file "
            "(install Debian's busybox-static)"
        )
    out_path = Path(out)
    if not out_path.parent.is_dir():
        raise InvalidArgument(f"output {out_path}: directory {out_path.parent} does not exist")
    if out_path.is_dir():
        raise InvalidArgument(f"output {out_path}: is a directory")
    layer = build_rootfs_layer(busybox)
    layer_gz = gzip.compress(layer, compresslevel=6, mtime=0)
    image_config: dict[str, object] = {
        "Env": list(env), "Cmd": list(cmd), "WorkingDir": working_dir,
    }
    if entrypoint:
        image_config["Entrypoint"] = list(entrypoint)
    if user:
        image_config["User"] = user
    if exposed_ports:
        image_config["ExposedPorts"] = {p: {} for p in exposed_ports}
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": EPOCH,
        "config": image_config,
        "rootfs": {"type": "layers", "diff_ids": [sha256_digest(layer)]},
        "history": [{"created": EPOCH, "created_by": "pykubelet image_build: busybox-static"}],
    }
    config_b = _json_bytes(config)
    manifest_b = _json_bytes(
        {
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": {"mediaType": MEDIA_CONFIG, "digest": sha256_digest(config_b),
                       "size": len(config_b)},
            "layers": [{"mediaType": MEDIA_LAYER_GZIP, "digest": sha256_digest(layer_gz),
                        "size": len(layer_gz)}],
        }
    )
    index_b = _json_bytes(
        {
            "schemaVersion": 2,
            "mediaType": MEDIA_INDEX,
            "manifests": [
                {
                    "mediaType": MEDIA_MANIFEST,
                    "digest": sha256_digest(manifest_b),
                    "size": len(manifest_b),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name,
                    },
                }
            ],
        }
    )
    archive = io.BytesIO()  # the blobs are in memory already; the tar adds only headers
    with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_member("blobs", tarfile.DIRTYPE, 0o755))
        tar.addfile(_member("blobs/sha256", tarfile.DIRTYPE, 0o755))
        for blob in (config_b, layer_gz, manifest_b):
            member = "blobs/sha256/" + sha256_digest(blob).split(":", 1)[1]
            tar.addfile(_member(member, tarfile.REGTYPE, 0o644, len(blob)),
                        io.BytesIO(blob))
        for member, blob in (("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
                             ("index.json", index_b)):
            tar.addfile(_member(member, tarfile.REGTYPE, 0o644, len(blob)),
                        io.BytesIO(blob))
    write_atomic(out_path, archive.getvalue(), durable=False)
    return BuiltImage(
        path=out_path,
        name=name,
        manifest_digest=sha256_digest(manifest_b),
        config_digest=sha256_digest(config_b),
        layer_digest=sha256_digest(layer_gz),
        diff_id=sha256_digest(layer),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build a busybox OCI-layout tar offline.")
    parser.add_argument("out")
    parser.add_argument("--name", default=DEFAULT_NAME)
    parser.add_argument("--busybox", default=DEFAULT_BUSYBOX)
    parser.add_argument("--cmd", default=" ".join(DEFAULT_CMD), help="image Cmd, space separated")
    args = parser.parse_args(argv)
    built = build_busybox_image(args.out, name=args.name, busybox=args.busybox,
                                cmd=args.cmd.split())
    print(json.dumps({"name": built.name, "path": str(built.path),
                      "config_digest": built.config_digest,
                      "manifest_digest": built.manifest_digest}))


if __name__ == "__main__":
    main()
