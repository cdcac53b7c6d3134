"""The offline busybox image: a valid, deterministic OCI layout tar."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from pykubelet.runtime.errors import InvalidArgument
from pykubelet.runtime.image_build import build_busybox_image, busybox_applets

BUSYBOX = "/bin/busybox"


def _blob(tar: tarfile.TarFile, digest: str) -> bytes:
    f = tar.extractfile("blobs/sha256/" + digest.split(":", 1)[1])
    assert f is not None
    data = f.read()
    assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
    return data


def test_build_is_deterministic_and_valid(tmp_path: Path) -> None:
    a = build_busybox_image(tmp_path / "a.tar", entrypoint=["/bin/sh", "-c"],
                            cmd=["echo hi"], user="65534", working_dir="/tmp",
                            exposed_ports=["80/tcp"])
    b = build_busybox_image(tmp_path / "b.tar", entrypoint=["/bin/sh", "-c"],
                            cmd=["echo hi"], user="65534", working_dir="/tmp",
                            exposed_ports=["80/tcp"])
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    assert a.config_digest == b.config_digest
    with tarfile.open(a.path) as tar:
        assert json.loads(tar.extractfile("oci-layout").read()) == {  # type: ignore[union-attr]
            "imageLayoutVersion": "1.0.0"}
        index = json.loads(tar.extractfile("index.json").read())  # type: ignore[union-attr]
        desc = index["manifests"][0]
        assert desc["digest"] == a.manifest_digest
        assert desc["annotations"]["io.containerd.image.name"] == "docker.io/library/busybox:latest"
        manifest = json.loads(_blob(tar, desc["digest"]))
        config = json.loads(_blob(tar, manifest["config"]["digest"]))
        assert config["config"]["Entrypoint"] == ["/bin/sh", "-c"]
        assert config["config"]["Cmd"] == ["echo hi"]
        assert config["config"]["User"] == "65534"
        assert config["config"]["WorkingDir"] == "/tmp"
        assert config["config"]["ExposedPorts"] == {"80/tcp": {}}
        layer_gz = _blob(tar, manifest["layers"][0]["digest"])
    layer = gzip.decompress(layer_gz)
    assert "sha256:" + hashlib.sha256(layer).hexdigest() == config["rootfs"]["diff_ids"][0]
    with tarfile.open(fileobj=io.BytesIO(layer)) as lt:
        names = {m.name: m for m in lt.getmembers()}
    assert names["bin/busybox"].isfile()
    assert names["bin/busybox"].size == Path(BUSYBOX).stat().st_size
    assert names["bin/sh"].issym()
    assert names["bin/sh"].linkname == "busybox"
    assert len([n for n in names if n.startswith("bin/")]) == len(busybox_applets(BUSYBOX)) + 1
    for f in ("etc/passwd", "etc/group", "etc/hosts"):
        assert names[f].isfile()
    assert names["tmp"].mode == 0o1777


def test_missing_busybox_or_output_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="busybox-static"):
        build_busybox_image(tmp_path / "x.tar", busybox=str(tmp_path / "nope"))
    with pytest.raises(InvalidArgument, match="not found or not an executable file"):
        build_busybox_image(tmp_path / "x.tar", busybox=str(tmp_path))
    with pytest.raises(InvalidArgument, match=f"directory {tmp_path / 'no'} does not exist"):
        build_busybox_image(tmp_path / "no" / "x.tar")
    with pytest.raises(InvalidArgument, match="is a directory"):
        build_busybox_image(tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert not (tmp_path / "x.tar").exists()


def test_import_reports_each_layer_as_it_is_read(tmp_path: Path) -> None:
    """What `pykubelet image import` draws its progress from: bytes as they are read,
    the layer's end, and a layer the store already had."""
    from pykubelet.runtime.images import ImageStore, LayerProgress

    built = build_busybox_image(tmp_path / "bb.tar", name="localhost/bb:1")
    store = ImageStore(tmp_path / "images")
    seen: list[LayerProgress] = []
    store.import_archive(built.path, progress=seen.append)
    assert seen[-1].finished
    assert seen[-1].done == seen[-1].total > 0
    reading = [e.done for e in seen if not e.finished]
    assert reading == sorted(reading)
    assert len(reading) >= 1
    again: list[LayerProgress] = []
    store.import_archive(built.path, progress=again.append)
    assert [(e.skipped, e.done) for e in again] == [(True, seen[-1].total)]


def test_busybox_version_is_the_release_upstream_tags_images_with(tmp_path: Path) -> None:
    from pykubelet.runtime.image_build import busybox_version

    fake = tmp_path / "busybox"
    fake.write_text("#!/bin/sh\necho 'BusyBox v1.36.1 (2024-01-01) multi-call binary.'\n")
    fake.chmod(0o755)
    assert busybox_version(str(fake)) == "1.36"
    assert busybox_version(str(tmp_path / "none")) == ""
    assert busybox_version(BUSYBOX).count(".") == 1  # Debian 12's: 1.35


def test_an_image_is_copied_from_another_store_with_its_tags(tmp_path: Path) -> None:
    """`lab load`'s copy: layers, config and tags from the host's store to a node's; a tag
    it brings is taken from the image that had it."""
    from pykubelet.runtime.errors import NotFound
    from pykubelet.runtime.images import ImageStore

    build_busybox_image(tmp_path / "a.tar", name="localhost/app:v1", cmd=["echo", "a"])
    build_busybox_image(tmp_path / "b.tar", name="localhost/app:v1", cmd=["echo", "b"])
    host, node = ImageStore(tmp_path / "host"), ImageStore(tmp_path / "node")
    [img] = host.import_archive(tmp_path / "a.tar")
    host.import_archive(tmp_path / "a.tar", name="localhost/app:2.0")
    [old] = node.import_archive(tmp_path / "b.tar")  # another image under the same tag
    copied = node.copy_from(host, "localhost/app:v1")
    assert copied.id == img.id
    assert set(copied.repo_tags) == {"localhost/app:v1", "localhost/app:2.0"}
    assert node.require("localhost/app:2.0").id == img.id
    left = node.get(old.id)
    assert left is not None
    assert left.repo_tags == []
    for d in node.layer_dirs(copied):
        assert (d / "bin" / "busybox").is_file()
    assert node.config_blob(img.id) == host.config_blob(img.id)
    assert node.copy_from(host, img.id).id == img.id  # again: nothing changes
    with pytest.raises(NotFound):
        node.copy_from(host, "localhost/none:1")
