#!/usr/bin/env python3
"""Registry pull benchmark: pykubelet's runtime against containerd 1.6, same image, one run.

    sudo .venv/bin/python bench/pull_bench.py [-n 5] [--layers 4] [--layer-mib 16]

A multi-layer image (the offline busybox plus ``--layers`` gzip layers of incompressible
data) is pushed with skopeo to Debian's docker-registry on 127.0.0.1; then, run by run and
interleaved, a cold CRI PullImage of it is timed on

- ours: ``pykubelet runtime`` on a fresh temp root (127.0.0.1 is an insecure registry by
  default), and
- containerd 1.6.20 (Debian's, the peer's binary and CRI settings: overlayfs, its default
  3 concurrent downloads) as a private daemon on its own fresh temp root, state and socket,
  told to use plain HTTP for the registry (``registry.mirrors."127.0.0.1:PORT"``), so the
  shared peer daemon is left alone.

Each pull starts from an empty store (the daemon is started on a new root for each run) and
ends when PullImage answers: downloaded, verified and unpacked. Prints JSON and the median
ratio ours / containerd (target <= 1.0).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "integration" / "runtime"))

from registry_support import Registry  # noqa: E402

from pykubelet._proto.runtime.v1 import api_pb2 as pb  # noqa: E402
from pykubelet._proto.runtime.v1 import api_pb2_grpc as pb_grpc  # noqa: E402
from pykubelet.runtime.image_build import build_busybox_image  # noqa: E402

CONTAINERD = "/usr/bin/containerd"
PYKUBELET = REPO / ".venv" / "bin" / "pykubelet"


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def layered_image(out: Path, base: Path, layers: int, layer_mib: int) -> int:
    """busybox + ``layers`` layers of random bytes (gzip, as registries serve)."""
    with tarfile.open(base) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    index = json.loads(files["index.json"])
    desc = index["manifests"][0]
    manifest = json.loads(files["blobs/sha256/" + desc["digest"][7:]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"][7:]])
    for i in range(layers):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as lt:
            for j in range(4):  # a few files per layer
                data = os.urandom(layer_mib * (1 << 20) // 4)
                info = tarfile.TarInfo(f"data/l{i}/f{j}.bin")
                info.size = len(data)
                lt.addfile(info, io.BytesIO(data))
        raw = buf.getvalue()
        gz = gzip.compress(raw, compresslevel=1, mtime=0)
        digest, _ = _blob(gz)
        files["blobs/sha256/" + digest[7:]] = gz
        manifest["layers"].append({"mediaType": manifest["layers"][0]["mediaType"],
                                   "digest": digest, "size": len(gz)})
        config["rootfs"]["diff_ids"].append(_blob(raw)[0])
    cdig, cdata = _blob(json.dumps(config).encode())
    files["blobs/sha256/" + cdig[7:]] = cdata
    manifest["config"] = {**manifest["config"], "digest": cdig, "size": len(cdata)}
    mdig, mdata = _blob(json.dumps(manifest).encode())
    files["blobs/sha256/" + mdig[7:]] = mdata
    index["manifests"] = [{**desc, "digest": mdig, "size": len(mdata), "annotations": {}}]
    files["index.json"] = json.dumps(index).encode()
    with tarfile.open(out, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return sum(int(la["size"]) for la in manifest["layers"])


def containerd_config(base: Path, registry: str) -> Path:
    cfg = f"""version = 2
root = "{base}/root"
state = "{base}/state"
oom_score = 0
[grpc]
  address = "{base}/state/containerd.sock"
[ttrpc]
  address = "{base}/state/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    disable_apparmor = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    restrict_oom_score_adj = true
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "{base}/net.d"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."{registry}"]
      endpoint = ["http://{registry}"]
"""
    path = base / "config.toml"
    path.write_text(cfg)
    return path


class Daemon:
    def __init__(self, argv: list[str], sock: str, log: Path) -> None:
        self.sock = sock
        with open(log, "ab") as f:
            self.proc = subprocess.Popen(argv, stdout=f, stderr=f, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        self.channel = grpc.insecure_channel(f"unix://{sock}")
        self.images = pb_grpc.ImageServiceStub(self.channel)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.images.ListImages(pb.ListImagesRequest(), timeout=1)
                return
            except grpc.RpcError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{argv[0]} did not start: "
                                       f"{log.read_text()[-2000:]}") from None
                time.sleep(0.05)

    def pull(self, ref: str) -> float:
        t0 = time.perf_counter()
        self.images.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=ref)), timeout=600)
        return time.perf_counter() - t0

    def stop(self) -> None:
        self.channel.close()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def _umount_under(path: Path) -> None:
    with open("/proc/self/mountinfo") as f:
        mps = [line.split()[4] for line in f if line.split()[4].startswith(str(path))]
    for mp in sorted(mps, key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], capture_output=True)


def run_ours(base: Path, ref: str) -> float:
    base.mkdir(parents=True)
    (base / "net.d").mkdir()
    d = Daemon([str(PYKUBELET), "runtime", "--root", str(base / "root"), "--listen",
                f"unix://{base}/cri.sock", "--cni-conf-dir", str(base / "net.d"),
                "--netns-prefix", "pullb-", "--log-level", "warning"],
               str(base / "cri.sock"), base / "runtime.log")
    try:
        return d.pull(ref)
    finally:
        d.stop()
        _umount_under(base)
        shutil.rmtree(base, ignore_errors=True)


def run_containerd(base: Path, ref: str, registry: str) -> float:
    (base / "net.d").mkdir(parents=True)
    (base / "state").mkdir()
    cfg = containerd_config(base, registry)
    d = Daemon([CONTAINERD, "--config", str(cfg)], str(base / "state" / "containerd.sock"),
               base / "containerd.log")
    try:
        return d.pull(ref)
    finally:
        d.stop()
        _umount_under(base)
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--layer-mib", type=int, default=16)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("pull_bench: run as root (the runtimes unpack as root)")
    tmp = Path(tempfile.mkdtemp(prefix="pullbench-"))
    registry = Registry(tmp / "registry")
    try:
        base = tmp / "busybox.tar"
        build_busybox_image(base, name="localhost/busybox:1")
        image = tmp / "layered.tar"
        size = layered_image(image, base, args.layers, args.layer_mib)
        registry.start()
        registry.push(image, "bench/layered:1")
        ref = f"{registry.host}/bench/layered:1"
        ours: list[float] = []
        theirs: list[float] = []
        for i in range(args.n + 1):  # run 0 warms caches on both sides
            o = run_ours(tmp / f"ours{i}", ref)
            c = run_containerd(tmp / f"ctrd{i}", ref, registry.host)
            if i:
                ours.append(o)
                theirs.append(c)
            print(f"run {i}: ours {o * 1000:.0f} ms, containerd {c * 1000:.0f} ms",
                  file=sys.stderr)
        mo, mc = statistics.median(ours), statistics.median(theirs)
        print(json.dumps({
            "image": {"layers": args.layers + 1,
                      "compressed_bytes": size},
            "ours_ms": [round(x * 1000, 1) for x in ours],
            "containerd_ms": [round(x * 1000, 1) for x in theirs],
            "median_ms": {"ours": round(mo * 1000, 1), "containerd": round(mc * 1000, 1)},
            "ratio_ours_over_containerd": round(mo / mc, 3),
        }, indent=1))
    finally:
        registry.stop()
        _umount_under(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
