"""Pulls from a real registry (Debian's docker-registry on loopback), with and without
auth, of images pushed with skopeo from archives built here."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import pty
import re
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from registry_support import Registry

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.errors import NotFound, PermissionDenied, Unavailable
from pykubelet.runtime.image_build import build_busybox_image
from pykubelet.runtime.image_pull import Credentials, PullOptions, pull_image
from pykubelet.runtime.images import ImageStore, LayerProgress

pytestmark = pytest.mark.root  # the store unpacks as root (owners, device nodes)
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def busybox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rtreg") / "busybox.tar"
    build_busybox_image(out, name="localhost/busybox:1")
    return out


@pytest.fixture
def registry(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Registry]:
    reg = Registry(tmp_path / "registry", auth=getattr(request, "param", ""), log_level="info")
    reg.start()
    yield reg
    reg.stop()


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def multi_arch_archive(path: Path, busybox: Path) -> str:
    """An OCI layout whose index has the busybox manifest for linux/amd64 and another,
    marked by its Cmd, for linux/arm64 (same layer). Returns the amd64 config digest."""
    with tarfile.open(busybox) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    index = json.loads(files["index.json"])
    desc = index["manifests"][0]
    manifest = json.loads(files["blobs/sha256/" + desc["digest"][7:]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"][7:]])
    config["architecture"] = "arm64"
    config["config"]["Cmd"] = ["arm64-variant"]
    cdig, cdata = _blob(json.dumps(config).encode())
    m2 = dict(manifest, config={**manifest["config"], "digest": cdig, "size": len(cdata)})
    mdig, mdata = _blob(json.dumps(m2).encode())
    files["blobs/sha256/" + cdig[7:]] = cdata
    files["blobs/sha256/" + mdig[7:]] = mdata
    # index.json names one image: an image index with one manifest per platform
    nested = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
              "manifests": [
                  {**desc, "annotations": {}},
                  {"mediaType": desc["mediaType"], "digest": mdig, "size": len(mdata),
                   "platform": {"os": "linux", "architecture": "arm64"}}]}
    ndig, ndata = _blob(json.dumps(nested).encode())
    files["blobs/sha256/" + ndig[7:]] = ndata
    index["manifests"] = [{"mediaType": nested["mediaType"], "digest": ndig,
                           "size": len(ndata)}]
    files["index.json"] = json.dumps(index).encode()
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return manifest["config"]["digest"]


def layered_archive(path: Path, busybox: Path, extra_layers: int, seed: int) -> None:
    """busybox plus ``extra_layers`` gzip layers of one file each (a multi-layer image)."""
    with tarfile.open(busybox) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    index = json.loads(files["index.json"])
    desc = index["manifests"][0]
    manifest = json.loads(files["blobs/sha256/" + desc["digest"][7:]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"][7:]])
    for i in range(extra_layers):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as lt:
            data = hashlib.sha256(f"{seed}-{i}".encode()).digest() * 8192
            info = tarfile.TarInfo(f"data/layer{i}.bin")
            info.size = len(data)
            lt.addfile(info, io.BytesIO(data))
        raw = buf.getvalue()
        gz = gzip.compress(raw, mtime=0)
        ldig, _ = _blob(gz)
        files["blobs/sha256/" + ldig[7:]] = gz
        manifest["layers"].append({"mediaType": manifest["layers"][0]["mediaType"],
                                   "digest": ldig, "size": len(gz)})
        config["rootfs"]["diff_ids"].append(_blob(raw)[0])
    cdig, cdata = _blob(json.dumps(config).encode())
    files["blobs/sha256/" + cdig[7:]] = cdata
    manifest["config"] = {**manifest["config"], "digest": cdig, "size": len(cdata)}
    mdig, mdata = _blob(json.dumps(manifest).encode())
    files["blobs/sha256/" + mdig[7:]] = mdata
    index["manifests"] = [{**desc, "digest": mdig, "size": len(mdata), "annotations": {}}]
    files["index.json"] = json.dumps(index).encode()
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_anonymous_pull_by_tag_and_digest_layers_once(registry: Registry, busybox: Path,
                                                      tmp_path: Path) -> None:
    registry.push(busybox, "team/bb:1")
    registry.push(busybox, "team/bb:2", fmt="docker-v2s2")  # Docker schema 2 manifest
    store = ImageStore(tmp_path / "images")
    events: list[LayerProgress] = []
    img = pull_image(store, f"{registry.host}/team/bb:1", progress=events.append)
    assert img.repo_tags == [f"{registry.host}/team/bb:1"]
    [digest_ref] = img.repo_digests
    assert digest_ref.startswith(f"{registry.host}/team/bb@sha256:")
    assert [e for e in events if e.finished and not e.skipped]
    assert (store.layer_dirs(img)[0] / "bin" / "busybox").is_file()
    # the same layers under the docker schema 2 manifest: nothing downloaded again
    events.clear()
    img2 = pull_image(store, f"{registry.host}/team/bb:2", progress=events.append)
    assert img2.id == img.id
    assert events
    assert all(e.skipped for e in events)
    assert set(img2.repo_tags) == {f"{registry.host}/team/bb:1", f"{registry.host}/team/bb:2"}
    # by digest: no tag added
    store2 = ImageStore(tmp_path / "images2")
    by_digest = pull_image(store2, digest_ref)
    assert by_digest.id == img.id
    assert by_digest.repo_tags == []
    with pytest.raises(NotFound, match="not found"):
        pull_image(store, f"{registry.host}/team/nosuch:1")
    # plain HTTP only for insecure registries (loopback by default): told otherwise, the
    # pull speaks TLS to this plain-HTTP registry and fails
    with pytest.raises(Unavailable):
        pull_image(ImageStore(tmp_path / "tls"), f"{registry.host}/team/bb:1",
                   options=PullOptions(insecure_registries=()))
    assert pull_image(ImageStore(tmp_path / "named"),
                      f"localhost:{registry.port}/team/bb:1").id == img.id


def test_index_picks_the_node_platform(registry: Registry, busybox: Path,
                                       tmp_path: Path) -> None:
    archive = tmp_path / "multi.tar"
    amd64_config = multi_arch_archive(archive, busybox)
    subprocess.run(["skopeo", "copy", "-q", "--all", "--dest-tls-verify=false",
                    f"oci-archive:{archive}", f"docker://{registry.host}/team/multi:1"],
                   check=True, timeout=120, capture_output=True)
    store = ImageStore(tmp_path / "images")
    img = pull_image(store, f"{registry.host}/team/multi:1",
                     options=PullOptions(architecture="amd64"))
    assert img.id == amd64_config
    arm = pull_image(ImageStore(tmp_path / "arm"), f"{registry.host}/team/multi:1",
                     options=PullOptions(architecture="arm64"))
    assert arm.config.cmd == ["arm64-variant"]
    with pytest.raises(NotFound, match="no manifest for linux/riscv64"):
        pull_image(store, f"{registry.host}/team/multi:1",
                   options=PullOptions(architecture="riscv64"))


@pytest.mark.parametrize("registry", ["htpasswd"], indirect=True)
def test_basic_auth(registry: Registry, busybox: Path, tmp_path: Path) -> None:
    registry.push(busybox, "team/bb:1", creds="alice:s3cret")
    store = ImageStore(tmp_path / "images")
    ref = f"{registry.host}/team/bb:1"
    with pytest.raises(PermissionDenied, match="credentials"):
        pull_image(store, ref)
    with pytest.raises(PermissionDenied):
        pull_image(store, ref, Credentials("alice", "wrong"))
    assert pull_image(store, ref, Credentials("alice", "s3cret")).repo_tags == [ref]


@pytest.mark.parametrize("registry", ["token"], indirect=True)
def test_bearer_token_dance(registry: Registry, busybox: Path, tmp_path: Path) -> None:
    registry.push(busybox, "team/bb:1", creds="alice:s3cret")
    registry.push(busybox, "public/bb:1", creds="alice:s3cret")
    ts = registry.token_server
    assert ts is not None
    store = ImageStore(tmp_path / "images")
    ts.requests.clear()
    img = pull_image(store, f"{registry.host}/team/bb:1", Credentials("alice", "s3cret"))
    assert img.repo_tags == [f"{registry.host}/team/bb:1"]
    assert ts.requests == [{"user": "alice", "scope": "repository:team/bb:pull",
                            "service": "pyk-test-registry"}]
    # anonymous tokens reach public/* only
    assert pull_image(ImageStore(tmp_path / "anon"), f"{registry.host}/public/bb:1").id == img.id
    with pytest.raises(PermissionDenied):
        pull_image(ImageStore(tmp_path / "anon2"), f"{registry.host}/team/bb:1")
    with pytest.raises(PermissionDenied, match="token server refused"):
        pull_image(ImageStore(tmp_path / "bad"), f"{registry.host}/team/bb:1",
                   Credentials("alice", "wrong"))


@pytest.mark.parametrize("registry", ["htpasswd"], indirect=True)
def test_cri_pull_with_auth_config_and_one_download_for_many(
        registry: Registry, busybox: Path, tmp_path: Path, cri) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "layered.tar"
    layered_archive(archive, busybox, extra_layers=3, seed=1)
    registry.push(archive, "team/layered:1", creds="alice:s3cret")
    ref = f"{registry.host}/team/layered:1"
    auth = pb.AuthConfig(auth="YWxpY2U6czNjcmV0")  # base64 alice:s3cret, as kubelet sends
    with pytest.raises(grpc.RpcError) as info:
        cri.images.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=ref)), timeout=60)
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    results: list[str] = []

    def pull() -> None:
        results.append(cri.images.PullImage(pb.PullImageRequest(
            image=pb.ImageSpec(image=ref), auth=auth), timeout=120).image_ref)

    threads = [threading.Thread(target=pull) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert len(results) == 6
    assert len(set(results)) == 1
    # every blob of the image went over the wire once, whatever the number of pulls
    log = (registry.base / "registry.log").read_text()
    blob_gets = re.findall(r'msg="response completed" .*http.request.method=GET '
                           r'http.request.remoteaddr=\S+ '
                           r'http.request.uri="/v2/team/layered/blobs/(sha256:\w+)"', log)
    # the config and the 3 new layers, once each; the busybox layer was already unpacked
    # (the runtime imported the same busybox), so it was not downloaded at all
    assert len(blob_gets) == 4
    assert len(set(blob_gets)) == 4
    st = cri.images.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image=ref)),
                                timeout=30)
    assert st.image.id == results[0]
    # and a container runs from it
    pod_id, pod_cfg = cri.run_pod("rtreg")
    cc = cri.container_config("app", ["sh", "-c", "cat /data/layer2.bin | wc -c"])
    cc.image.image = ref
    cid = cri.runtime.CreateContainer(pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=cc, sandbox_config=pod_cfg), timeout=60).container_id
    cri.runtime.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
    assert cri.wait_exited(cid).exit_code == 0


def test_cli_pull_progress_on_a_terminal(registry: Registry, busybox: Path,
                                         tmp_path: Path) -> None:
    registry.push(busybox, "team/bb:1")
    root = tmp_path / "root"
    cmd = [sys.executable, "-m", "pykubelet.cli.main", "image", "pull",
           f"{registry.host}/team/bb:1", "--root", str(root)]
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI with a terminal as its stderr
        os.chdir(REPO)
        os.execv(cmd[0], cmd)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    text = out.decode(errors="replace")
    assert "\x1b[F" in text or "\x1b[2K" in text  # redrawn in place
    assert "100%" in text
    assert "done" in text
    [img] = ImageStore(root / "images").list()
    assert img.id in text
    plain = subprocess.run([*cmd[:-2], "--root", str(tmp_path / "root2")],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert plain.returncode == 0, plain.stderr
    assert "\x1b" not in plain.stderr
    assert "done" in plain.stderr
    assert plain.stdout.strip() == img.id
