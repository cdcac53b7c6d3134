"""The agent's image GC against the real runtime: unused images go, used ones stay."""

from __future__ import annotations

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.cri.cri_client import CRIClient
from pykubelet.kubelet.images.image_gc_manager import ImageGCManager
from pykubelet.runtime.image_build import build_busybox_image

pytestmark = [pytest.mark.root, pytest.mark.runc]


def test_gc_removes_unused_images_over_cri(cri) -> None:  # type: ignore[no-untyped-def]
    other = cri.base / "other.tar"
    build_busybox_image(other, name="localhost/gc-other:1", cmd=["true"])
    from pykubelet.runtime.images import ImageStore

    ImageStore(cri.root / "images").import_archive(other)
    pod_id, pod_cfg = cri.run_pod("rtgc")
    cri.start_container(pod_id, pod_cfg, "app", ["sleep", "1000"])
    client = CRIClient(f"unix://{cri.sock}")
    try:
        before = {i.repo_tags[0] for i in client.list_images()}
        assert before == {"docker.io/library/busybox:latest", "localhost/gc-other:1"}
        # thresholds of 0%: the disk is always "full", everything unused may go
        gc = ImageGCManager(client, high=0, low=0, min_age=0)
        assert gc.garbage_collect() > 0
        after = {i.repo_tags[0] for i in client.list_images()}
        assert after == {"docker.io/library/busybox:latest"}  # a container uses it
        fs = client.image_fs_info()
        assert fs[0].fs_id.mountpoint
    finally:
        client.close()
    assert cri.images.ImageStatus(pb.ImageStatusRequest(
        image=pb.ImageSpec(image="localhost/gc-other:1")), timeout=10).image.id == ""
