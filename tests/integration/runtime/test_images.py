"""The image store against real archives, real overlay mounts and concurrent processes."""

from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from pykubelet.cli.image_cmd import image as image_cli
from pykubelet.runtime.errors import InvalidArgument, NotFound
from pykubelet.runtime.image_build import build_busybox_image
from pykubelet.runtime.images import ImageStore

pytestmark = pytest.mark.root


def _tar_bytes(entries: list[tuple[str, bytes | None, int]]) -> bytes:
    """A layer tar from (name, data-or-None-for-dir, mode) entries."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in entries:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _docker_archive(path: Path, layers: list[bytes], tags: list[str],
                    config_extra: dict | None = None, diff_ids: list[str] | None = None) -> str:
    """Write a docker-archive (docker save format); returns the image ID."""
    ids = diff_ids or ["sha256:" + hashlib.sha256(la).hexdigest() for la in layers]
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Cmd": ["sh"], **(config_extra or {})},
              "rootfs": {"type": "layers", "diff_ids": ids}}
    config_b = json.dumps(config).encode()
    cid = hashlib.sha256(config_b).hexdigest()
    manifest = [{"Config": f"{cid}.json", "RepoTags": tags,
                 "Layers": [f"l{i}/layer.tar" for i in range(len(layers))]}]
    with tarfile.open(path, "w") as tar:
        files = {f"{cid}.json": config_b, "manifest.json": json.dumps(manifest).encode()}
        for i, la in enumerate(layers):
            files[f"l{i}/layer.tar"] = la
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return "sha256:" + cid


@pytest.fixture
def busybox_tar(tmp_path: Path) -> Path:
    out = tmp_path / "busybox.tar"
    build_busybox_image(out, entrypoint=["/bin/sh", "-c"], cmd=["echo hi"], user="1:1",
                        working_dir="/tmp", exposed_ports=["8080/tcp"],
                        env=["PATH=/bin", "A=1"])
    return out


def test_import_oci_layout_keeps_config_and_resolves_refs(tmp_path: Path,
                                                           busybox_tar: Path) -> None:
    store = ImageStore(tmp_path / "images")
    [img] = store.import_archive(busybox_tar)
    assert img.repo_tags == ["docker.io/library/busybox:latest"]
    assert img.repo_digests[0].startswith("docker.io/library/busybox@sha256:")
    cfg = img.config
    assert cfg.entrypoint == ["/bin/sh", "-c"]
    assert cfg.cmd == ["echo hi"]
    assert cfg.env == ["PATH=/bin", "A=1"]
    assert cfg.working_dir == "/tmp"
    assert cfg.user == "1:1"
    assert cfg.exposed_ports == ["8080/tcp"]
    for ref in ("busybox", "busybox:latest", "docker.io/library/busybox:latest", img.id,
                img.id.split(":")[1], img.id.split(":")[1][:12], img.repo_digests[0]):
        assert store.get(ref) == img, ref
    assert store.get("busybox:other") is None
    [layer] = store.layer_dirs(img)
    assert (layer / "bin" / "busybox").stat().st_size == Path("/bin/busybox").stat().st_size
    assert os.readlink(layer / "bin" / "sh") == "busybox"
    assert stat.S_IMODE((layer / "tmp").stat().st_mode) == 0o1777
    # a second store instance (another process) sees the same image
    assert ImageStore(tmp_path / "images").list() == [img]
    info = store.fs_info()
    assert info.used_bytes >= Path("/bin/busybox").stat().st_size
    assert info.inodes_used > 100


def test_layers_are_unpacked_once(tmp_path: Path, busybox_tar: Path) -> None:
    store = ImageStore(tmp_path / "images")
    [img] = store.import_archive(busybox_tar)
    [layer] = store.layer_dirs(img)
    before = layer.stat().st_ino
    # the same layer under another name: skopeo-made docker-archive, which links layer tars
    da = tmp_path / "da.tar"
    subprocess.run(["skopeo", "copy", "-q", f"oci-archive:{busybox_tar}",
                    f"docker-archive:{da}:example.com/other:v2"], check=True, timeout=60)
    [other] = store.import_archive(da)
    assert other.id == img.id  # same config: same image, now with both tags
    assert set(other.repo_tags) == {"docker.io/library/busybox:latest", "example.com/other:v2"}
    assert layer.stat().st_ino == before
    assert len(list((tmp_path / "images" / "layers").iterdir())) == 1


def test_whiteouts_work_in_an_overlay_mount(tmp_path: Path) -> None:
    lower = _tar_bytes([("a", None, 0o755), ("a/x", b"x", 0o644), ("a/y", b"y", 0o644),
                        ("d", None, 0o755), ("d/old", b"old", 0o644), ("f", b"f", 0o600)])
    upper = _tar_bytes([("a", None, 0o755), ("a/.wh.x", b"", 0o644),
                        ("d", None, 0o755), ("d/.wh..wh..opq", b"", 0o644),
                        ("d/new", b"new", 0o644), ("g", b"g", 0o644)])
    archive = tmp_path / "wh.tar"
    _docker_archive(archive, [lower, upper], ["example.com/wh:1"])
    store = ImageStore(tmp_path / "images")
    [img] = store.import_archive(archive)
    l0, l1 = store.layer_dirs(img)
    st = os.lstat(l1 / "a" / "x")
    assert stat.S_ISCHR(st.st_mode)
    assert st.st_rdev == 0
    assert os.getxattr(l1 / "d", "trusted.overlay.opaque") == b"y"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={l1}:{l0}", str(mnt)],
                   check=True)
    try:
        assert sorted(os.listdir(mnt / "a")) == ["y"]
        assert sorted(os.listdir(mnt / "d")) == ["new"]
        assert (mnt / "f").read_bytes() == b"f"
        assert stat.S_IMODE((mnt / "f").stat().st_mode) == 0o600
        assert (mnt / "g").read_bytes() == b"g"
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_bad_archives_change_nothing(tmp_path: Path, busybox_tar: Path) -> None:
    store = ImageStore(tmp_path / "images")
    [good] = store.import_archive(busybox_tar)
    index_before = (tmp_path / "images" / "index.json").read_bytes()

    layer = _tar_bytes([("etc", None, 0o755), ("etc/x", b"x", 0o644)])
    wrong = tmp_path / "wrong-digest.tar"
    _docker_archive(wrong, [layer], ["example.com/bad:1"], diff_ids=["sha256:" + "0" * 64])
    with pytest.raises(InvalidArgument, match="does not match diff_id"):
        store.import_archive(wrong)

    evil = _tar_bytes([("../escape", b"x", 0o644)])
    escape = tmp_path / "escape.tar"
    _docker_archive(escape, [evil], ["example.com/bad:2"])
    with pytest.raises(InvalidArgument, match="escapes the layer root"):
        store.import_archive(escape)
    assert not (tmp_path / "images" / "escape").exists()

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        link = tarfile.TarInfo("lnk")
        link.type = tarfile.SYMTYPE
        link.linkname = str(tmp_path)
        tar.addfile(link)
        info = tarfile.TarInfo("lnk/pwned")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    through = tmp_path / "through.tar"
    _docker_archive(through, [buf.getvalue()], ["example.com/bad:3"])
    with pytest.raises(InvalidArgument, match="goes through the symlink"):
        store.import_archive(through)
    assert not (tmp_path / "pwned").exists()

    (tmp_path / "junk.tar").write_bytes(b"not a tar at all")
    with pytest.raises(InvalidArgument, match="not a tar file"):
        store.import_archive(tmp_path / "junk.tar")
    with pytest.raises(InvalidArgument, match="does not exist"):
        store.import_archive(tmp_path / "missing.tar")

    assert (tmp_path / "images" / "index.json").read_bytes() == index_before
    assert store.list() == [good]
    assert len(list((tmp_path / "images" / "layers").iterdir())) == 1
    assert list((tmp_path / "images" / "tmp").iterdir()) == []


def test_layer_whiteouts_devices_and_setuid_as_root(tmp_path: Path, busybox_tar: Path) -> None:
    """As root, as containerd's archive.Apply: a whiteout naming its own directory or its
    parent (".wh..", ".wh...") is refused, where ".wh..." at a layer's top used to wipe
    every layer of the store; device nodes are made and setuid bits kept (issue 29)."""
    store = ImageStore(tmp_path / "images")
    [good] = store.import_archive(busybox_tar)
    layers_before = sorted(p.name for p in (tmp_path / "images" / "layers").iterdir())
    for name in (".wh...", ".wh..", "bin/.wh..."):
        bad = tmp_path / "whiteout.tar"
        _docker_archive(bad, [_tar_bytes([("bin", None, 0o755), (name, b"", 0o644)])],
                        ["example.com/bad:wh"])
        with pytest.raises(InvalidArgument, match="invalid whiteout name"):
            store.import_archive(bad)
        assert sorted(p.name for p in (tmp_path / "images" / "layers").iterdir()) \
            == layers_before
        assert store.list() == [good]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dev = tarfile.TarInfo("dev-null")
        dev.type, dev.devmajor, dev.devminor, dev.mode = tarfile.CHRTYPE, 1, 3, 0o666
        tar.addfile(dev)
        su = tarfile.TarInfo("su")
        su.size, su.mode, su.uid = 2, 0o4755, 0
        tar.addfile(su, io.BytesIO(b"#!"))
    layer = buf.getvalue()
    archive = tmp_path / "special.tar"
    _docker_archive(archive, [layer], ["example.com/special:1"])
    store.import_archive(archive)
    fs = store.layer_dir("sha256:" + hashlib.sha256(layer).hexdigest())
    st = os.lstat(fs / "dev-null")
    assert stat.S_ISCHR(st.st_mode)
    assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 3)
    assert stat.S_IMODE(os.lstat(fs / "su").st_mode) == 0o4755


def test_remove_collects_layers_unless_leased(tmp_path: Path, busybox_tar: Path) -> None:
    store = ImageStore(tmp_path / "images")
    [img] = store.import_archive(busybox_tar)
    extra = _tar_bytes([("only-here", b"1", 0o644)])
    archive = tmp_path / "two.tar"
    other_id = _docker_archive(archive, [extra], ["example.com/two:1"])
    store.import_archive(archive)
    [layer] = store.layer_dirs(img)
    dirs = store.acquire_lease("ctr1", img)
    assert dirs == [layer]
    assert store.remove("busybox") == img
    assert store.get(img.id) is None
    assert layer.is_dir()  # still leased by ctr1
    assert store.remove("busybox") is None  # idempotent
    store.release_lease("ctr1")
    assert not layer.parent.exists()
    assert [i.id for i in store.list()] == [other_id]
    with pytest.raises(NotFound, match="not found in the local image store"):
        store.require("busybox")
    with pytest.raises(InvalidArgument, match="empty"):
        store.require("  ")


def test_retag_moves_the_tag(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "images")
    layer = _tar_bytes([("v", b"1", 0o644)])
    a = _docker_archive(tmp_path / "a.tar", [layer], ["example.com/app:1"], {"Env": ["V=1"]})
    b = _docker_archive(tmp_path / "b.tar", [layer], ["example.com/app:1"], {"Env": ["V=2"]})
    store.import_archive(tmp_path / "a.tar")
    store.import_archive(tmp_path / "b.tar")
    assert store.get("example.com/app:1").id == b
    assert store.get(a).repo_tags == []


def test_concurrent_imports_from_two_processes(tmp_path: Path) -> None:
    archives = []
    for i in range(4):
        layer = _tar_bytes([(f"file{i}", str(i).encode() * 100000, 0o644)])
        p = tmp_path / f"img{i}.tar"
        _docker_archive(p, [layer], [f"example.com/c{i}:1"])
        archives.append(p)
    root = tmp_path / "root"
    procs = [
        subprocess.Popen([sys.executable, "-m", "pykubelet.cli.main", "image", "--root", str(root),
                          "import", str(p)])
        for p in archives
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    store = ImageStore(root / "images")
    assert sorted(t for i in store.list() for t in i.repo_tags) == [
        f"example.com/c{i}:1" for i in range(4)]


def test_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    root = str(tmp_path / "root")
    out = str(tmp_path / "bb.tar")
    r = runner.invoke(image_cli, ["--root", root, "build-busybox", out, "--name",
                                  "localhost/bb:1", "--cmd", "sleep 1"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(image_cli, ["--root", root, "import", out])
    assert r.exit_code == 0, r.output
    assert "localhost/bb:1" in r.output
    r = runner.invoke(image_cli, ["--root", root, "ls"])
    assert r.exit_code == 0
    assert "localhost/bb" in r.output
    r = runner.invoke(image_cli, ["--root", root, "ls", "-o", "json"])
    [doc] = json.loads(r.output)
    assert doc["config"]["cmd"] == ["sleep", "1"]
    r = runner.invoke(image_cli, ["--root", root, "pull", doc["id"]])
    assert r.exit_code == 0
    assert r.output.strip() == doc["id"]  # an ID: the store answers
    r = runner.invoke(image_cli, ["--root", root, "pull", "localhost:1/nope:1"])
    assert r.exit_code != 0  # a name: its registry (none listens on localhost:1)
    assert "localhost:1" in r.output
    r = runner.invoke(image_cli, ["--root", root, "rm", "localhost/bb:1"])
    assert r.exit_code == 0
    r = runner.invoke(image_cli, ["--root", root, "rm", "localhost/bb:1"])
    assert r.exit_code != 0
    assert "no such image" in r.output
    r = runner.invoke(image_cli, ["--root", root, "ls", "-q"])
    assert r.output == ""


def test_skopeo_oci_archive_names(tmp_path: Path, busybox_tar: Path) -> None:
    """skopeo's oci-archive: a ``repo:tag`` ref names the image, a bare tag names nothing."""
    store = ImageStore(tmp_path / "images")
    named = tmp_path / "named.tar"
    subprocess.run(["skopeo", "copy", "-q", f"oci-archive:{busybox_tar}",
                    f"oci-archive:{named}:example.com/team/app:2"], check=True, timeout=60)
    [img] = store.import_archive(named)
    assert img.repo_tags == ["example.com/team/app:2"]
    tag_only = tmp_path / "tag-only.tar"
    subprocess.run(["skopeo", "copy", "-q", f"oci-archive:{busybox_tar}",
                    f"oci-archive:{tag_only}:v9"], check=True, timeout=60)
    store2 = ImageStore(tmp_path / "images2")
    [anon] = store2.import_archive(tag_only)
    assert anon.repo_tags == []
    assert store2.get(anon.id) == anon
    [tagged] = store2.import_archive(tag_only, name="localhost/v9:1")
    assert tagged.repo_tags == ["localhost/v9:1"]
    with pytest.raises(InvalidArgument, match="name"):
        store2.import_archive(tag_only, name="Bad Name")


def _cli(*args: str) -> object:
    r = CliRunner().invoke(image_cli, list(args))
    return r


def test_cli_rm_untags_like_docker(tmp_path: Path) -> None:
    """``rm REF`` drops that reference; the image goes with its last one; an ID or
    ``--all-tags`` removes the image with every tag."""
    root = str(tmp_path / "root")
    out = str(tmp_path / "bb.tar")
    assert _cli("build-busybox", out, "--root", root, "--name", "localhost/bb:1").exit_code == 0
    for name in ("localhost/bb:2", "localhost/other:1"):
        r = _cli("import", "--root", root, out, "--name", name)
        assert r.exit_code == 0, r.output
    store = ImageStore(Path(root) / "images")
    [img] = store.list()
    assert sorted(img.repo_tags) == ["localhost/bb:1", "localhost/bb:2", "localhost/other:1"]
    r = _cli("rm", "--root", root, "localhost/bb:1")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == ["Untagged: localhost/bb:1"]
    [img] = store.list()
    assert sorted(img.repo_tags) == ["localhost/bb:2", "localhost/other:1"]
    r = _cli("rm", "--root", root, "localhost/bb:2")
    assert "Deleted" not in r.output
    [img] = store.list()
    assert img.repo_tags == ["localhost/other:1"]
    assert not any(d.startswith("localhost/bb@") for d in img.repo_digests)
    r = _cli("rm", "--root", root, "localhost/other:1")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1] == f"Deleted: {img.id}"
    assert store.list() == []
    assert not any((Path(root) / "images" / "layers").iterdir())
    # --all-tags, and an image ID, take every tag at once
    for how in (["--all-tags", "localhost/a:1"], [img.id.split(":")[1][:7]]):
        for name in ("localhost/a:1", "localhost/b:1"):
            assert _cli("import", "--root", root, out, "--name", name).exit_code == 0
        r = _cli("rm", "--root", root, *how)
        assert r.exit_code == 0, r.output
        assert f"Deleted: {img.id}" in r.output
        assert "Untagged: localhost/b:1" in r.output
        assert store.list() == []


def test_cli_short_ids_and_root_after_subcommand(tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    out = str(tmp_path / "bb.tar")
    build_busybox_image(out, name="localhost/bb:1")
    r = _cli("import", out, "--root", root)
    assert r.exit_code == 0, r.output
    store = ImageStore(Path(root) / "images")
    [img] = store.list()
    hexid = img.id.split(":")[1]
    for ref in (hexid[:4], hexid[:12], "sha256:" + hexid[:6], img.id):
        assert store.get(ref) == img
    r = _cli("ls", "--root", root, "-q")
    assert r.output.split() == [img.id]
    r = _cli("--root", str(tmp_path / "elsewhere"), "ls", "--root", root, "-q")
    assert r.output.split() == [img.id]  # the subcommand's --root wins
    r = _cli("pull", img.id, "--root", root)
    assert r.exit_code == 0, r.output
    assert r.output.strip() == img.id
    r = _cli("rm", "--root", root, "ffffffffff")
    assert r.exit_code != 0
    assert "no such image: ffffffffff" in r.output


def test_cli_ambiguous_id_prefix_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = ImageStore(root / "images")
    ids = []
    for i in range(17):  # 17 IDs over 16 hex digits: two share a first digit
        ids.append(_docker_archive(tmp_path / f"i{i}.tar", [_tar_bytes([("f", b"x", 0o644)])],
                                   [f"localhost/i{i}:1"], config_extra={"Env": [f"I={i}"]}))
        store.import_archive(tmp_path / f"i{i}.tar")
    counts = collections.Counter(i.split(":")[1][0] for i in ids)
    first, n = counts.most_common(1)[0]
    assert n >= 2
    with pytest.raises(InvalidArgument, match="ambiguous"):
        store.get(first)
    r = _cli("rm", "--root", str(root), first)
    assert r.exit_code != 0
    assert "ambiguous" in r.output
    assert len(store.list()) == 17


def test_cli_ls_creates_no_store(tmp_path: Path) -> None:
    root = tmp_path / "never"
    for args in (["ls"], ["ls", "-q"], ["ls", "-o", "json"]):
        r = _cli(*args, "--root", str(root))
        assert r.exit_code == 0, r.output
    assert _cli("rm", "--root", str(root), "busybox").exit_code != 0
    assert not root.exists()


def test_build_refuses_invalid_reference(tmp_path: Path) -> None:
    out = tmp_path / "bad.tar"
    r = _cli("build-busybox", str(out), "--name", "Bad/Name:1")
    assert r.exit_code != 0
    assert "--name" in r.output
    assert not out.exists()
    assert not list(tmp_path.iterdir())
    with pytest.raises(InvalidArgument, match="--name"):
        build_busybox_image(out, name="localhost/x:bad tag")


def test_cli_user_errors_are_one_line(tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    out = tmp_path / "bb.tar"
    build_busybox_image(out)
    cut = tmp_path / "cut.tar"
    cut.write_bytes(out.read_bytes()[: out.stat().st_size // 3])
    cases = [
        (["import", "--root", root, str(cut)], "truncated"),
        (["build-busybox", str(tmp_path / "missing" / "x.tar")], "does not exist"),
        (["build-busybox", str(tmp_path / "y.tar"), "--busybox", "/nope/busybox"], "/nope"),
    ]
    for args, words in cases:
        r = _cli(*args)
        assert r.exit_code not in (0, None), args
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
        assert words in r.output
        errors = [line for line in r.output.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1
        assert "Traceback" not in r.output
