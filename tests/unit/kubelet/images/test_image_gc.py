"""Image GC by disk thresholds (kubelet's image_gc_manager): when to free, how much, what."""

from __future__ import annotations

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.config import API_VERSION, KIND, KubeletConfigError, decode_config
from pykubelet.kubelet.images.image_gc_manager import (
    FsStats,
    ImageGCManager,
    ImageRecord,
    amount_to_free,
    images_to_free,
)

HEAD = {"apiVersion": API_VERSION, "kind": KIND}
GB = 1 << 30


def test_amount_to_free_follows_the_thresholds() -> None:
    assert amount_to_free(FsStats(100 * GB, 20 * GB), high=85, low=80) == 0  # 80% < 85%
    assert amount_to_free(FsStats(100 * GB, 10 * GB), high=85, low=80) == 10 * GB  # to 80%
    assert amount_to_free(FsStats(100 * GB, 15 * GB), high=85, low=80) == 5 * GB
    assert amount_to_free(FsStats(0, 0), high=85, low=80) == 0


def test_unused_images_least_recently_used_first_and_never_too_young() -> None:
    recs = [ImageRecord("a", 3, first_detected=0, last_used=50),
            ImageRecord("b", 5, first_detected=0, last_used=10),
            ImageRecord("c", 7, first_detected=0, last_used=20),
            ImageRecord("young", 100, first_detected=990, last_used=0),
            ImageRecord("used", 100, first_detected=0, last_used=0)]
    pick = images_to_free(recs, {"used"}, amount=6, now=1000, min_age=120)
    assert [r.id for r in pick] == ["b", "c"]
    assert images_to_free(recs, {"used"}, amount=0, now=1000) == []


class FakeCRI:
    def __init__(self) -> None:
        self.images = {f"sha256:{c * 64}": 10 * GB for c in "abc"}
        self.used = "sha256:" + "a" * 64
        self.removed: list[str] = []

    def list_images(self) -> list[pb.Image]:
        return [pb.Image(id=i, size=s, repo_tags=[f"r/{i[7]}:1"]) for i, s in
                self.images.items()]

    def list_containers(self) -> list[pb.Container]:
        return [pb.Container(id="c1", image=pb.ImageSpec(image="r/a:1"), image_ref="r/a:1")]

    def image_fs_info(self) -> list[pb.FilesystemUsage]:
        return [pb.FilesystemUsage(fs_id=pb.FilesystemIdentifier(mountpoint="/images"))]

    def remove_image(self, image: str) -> None:
        self.removed.append(image)
        del self.images[image]


def test_manager_frees_down_to_the_low_threshold_sparing_images_in_use() -> None:
    cri = FakeCRI()
    now = [1000.0]
    disk = {"available": 8 * GB}
    gc = ImageGCManager(cri, high=85, low=70, min_age=120, clock=lambda: now[0],  # type: ignore[arg-type]
                        fs_stats=lambda path: FsStats(100 * GB, disk["available"]))
    assert gc.garbage_collect() == 0  # images first seen now: too young
    now[0] += 300
    freed = gc.garbage_collect()  # 92% used: free 30 - 8 = 22 GB -> all unused images
    assert freed == 20 * GB
    assert sorted(cri.removed) == ["sha256:" + "b" * 64, "sha256:" + "c" * 64]
    assert "sha256:" + "a" * 64 in cri.images  # in use
    disk["available"] = 50 * GB
    assert gc.maybe_collect(period=0) == 0  # below the threshold: nothing


def test_thresholds_in_the_config() -> None:
    cfg = decode_config(
        {**HEAD, "imageGCHighThresholdPercent": 90, "imageGCLowThresholdPercent": 50})
    assert (cfg.imageGCHighThresholdPercent, cfg.imageGCLowThresholdPercent) == (90, 50)
    with pytest.raises(KubeletConfigError,
                       match="imageGCHighThresholdPercent: expected an integer"):
        decode_config({**HEAD, "imageGCHighThresholdPercent": 101})
    with pytest.raises(KubeletConfigError, match="must not be above imageGCHighThresholdPercent"):
        decode_config({**HEAD, "imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60})
