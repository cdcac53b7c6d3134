"""Image garbage collection by disk thresholds, as kubelet's image_gc_manager.

Every 5 minutes: when the image filesystem is at least ``imageGCHighThresholdPercent``
full, free ``capacity * (100 - low) / 100 - available`` bytes (down to
``imageGCLowThresholdPercent``) by removing images no container uses, least recently used
first (then oldest detected), never one first seen less than ``imageMinimumGCAge`` (2m)
ago. Use is tracked here: an image is "used" while a container (any state) names it.
The decision (``images_to_free``) is pure; the manager gathers and acts over CRI.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from pykubelet.kubelet.cri.runtime_service import CRICallError, RuntimeAndImageService

log = logging.getLogger(__name__)

GC_PERIOD_S = 300.0
MIN_AGE_S = 120.0
DEFAULT_HIGH = 85
DEFAULT_LOW = 80


@dataclass
class ImageRecord:
    id: str
    size: int
    first_detected: float
    last_used: float = 0.0


@dataclass(frozen=True)
class FsStats:
    capacity: int
    available: int


def amount_to_free(fs: FsStats, high: int, low: int) -> int:
    """Bytes to free now (0 below the high threshold); kubelet's arithmetic."""
    if fs.capacity <= 0:
        return 0
    usage = 100 - fs.available * 100 // fs.capacity
    if usage < high:
        return 0
    return max(fs.capacity * (100 - low) // 100 - fs.available, 0)


def images_to_free(records: list[ImageRecord], in_use: set[str], amount: int, now: float,
                   min_age: float = MIN_AGE_S) -> list[ImageRecord]:
    """Unused images, least recently used first, until ``amount`` bytes would be freed."""
    out: list[ImageRecord] = []
    freed = 0
    for rec in sorted(records, key=lambda r: (r.last_used, r.first_detected)):
        if freed >= amount:
            break
        if rec.id in in_use or now - rec.first_detected < min_age:
            continue
        out.append(rec)
        freed += rec.size
    return out


def statvfs(path: str) -> FsStats:
    st = os.statvfs(path)
    return FsStats(st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize)


class ImageGCManager:
    def __init__(self, cri: RuntimeAndImageService, high: int = DEFAULT_HIGH,
                 low: int = DEFAULT_LOW, min_age: float = MIN_AGE_S,
                 clock: Callable[[], float] = time.time,
                 fs_stats: Callable[[str], FsStats] = statvfs) -> None:
        self.cri = cri
        self.high = high
        self.low = low
        self.min_age = min_age
        self.clock = clock
        self.fs_stats = fs_stats
        self.records: dict[str, ImageRecord] = {}
        self._last_run = 0.0

    def detect(self, now: float) -> set[str]:
        """Refresh the records; returns the IDs of images containers use."""
        images = self.cri.list_images()
        by_ref: dict[str, str] = {}
        for img in images:
            rec = self.records.get(img.id)
            if rec is None:
                rec = self.records[img.id] = ImageRecord(img.id, img.size, now)
            rec.size = img.size
            for ref in (img.id, *img.repo_tags, *img.repo_digests):
                by_ref[ref] = img.id
        for gone in set(self.records) - {i.id for i in images}:
            del self.records[gone]
        in_use = set()
        for c in self.cri.list_containers():
            for ref in (c.image_ref, c.image_id, c.image.image):
                if ref in by_ref:
                    in_use.add(by_ref[ref])
        for image_id in in_use:
            self.records[image_id].last_used = now
        return in_use

    def maybe_collect(self, period: float = GC_PERIOD_S) -> int:
        now = self.clock()
        if now - self._last_run < period:
            return 0
        self._last_run = now
        return self.garbage_collect()

    def garbage_collect(self) -> int:
        """One GC pass; returns the bytes freed."""
        now = self.clock()
        in_use = self.detect(now)
        fs_list = self.cri.image_fs_info()
        if not fs_list:
            return 0
        try:
            fs = self.fs_stats(fs_list[0].fs_id.mountpoint)
        except OSError as exc:  # a runtime whose image filesystem this host cannot see
            log.warning("image GC: %s: %s", fs_list[0].fs_id.mountpoint, exc)
            return 0
        amount = amount_to_free(fs, self.high, self.low)
        if amount <= 0:
            return 0
        freed = 0
        for rec in images_to_free(list(self.records.values()), in_use, amount, now,
                                  self.min_age):
            try:
                self.cri.remove_image(rec.id)
            except CRICallError as exc:
                log.warning("image GC: remove %s: %s", rec.id[:19], exc)
                continue
            log.info("image GC: removed %s (%d bytes)", rec.id[:19], rec.size)
            self.records.pop(rec.id, None)
            freed += rec.size
        if freed < amount:
            log.warning("image GC: wanted to free %d bytes, freed %d", amount, freed)
        return freed
