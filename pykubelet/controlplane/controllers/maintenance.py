"""Housekeeping of the store: events expire after an hour (kube-apiserver's --event-ttl,
an etcd lease upstream) and old revisions are compacted every five minutes, keeping the
most recent ones so watches can resume (kube-apiserver compacts on that period; kine
keeps the newest thousand revisions)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import TYPE_CHECKING

from pykubelet.api.machinery.timeutil import now, parse_time
from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.events import EVENT_TTL_S
from pykubelet.controlplane.registry.resources import EVENTS
from pykubelet.controlplane.registry.store import Context, DeleteOptions

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

log = logging.getLogger(__name__)

EVENT_SWEEP_S = 60.0
COMPACT_PERIOD_S = 300.0
KEEP_REVISIONS = 10_000


async def run_event_expiry(cp: ControlPlane) -> None:
    events = cp.registry.store(EVENTS)
    while True:
        await asyncio.sleep(EVENT_SWEEP_S)
        cutoff = now() - dt.timedelta(seconds=EVENT_TTL_S)
        for entry in list(events.select(None, None)):
            ev = entry.obj()
            last = ev.get("lastTimestamp") or ev.get("eventTime") or (
                ev.get("metadata") or {}).get("creationTimestamp")
            try:
                expired = last is not None and parse_time(last) < cutoff
            except ValueError:
                expired = False
            if expired:
                try:
                    await events.delete(Context(), entry.attrs.namespace, entry.attrs.name,
                                        DeleteOptions())
                except errors.StatusError:
                    pass


async def run_compaction(cp: ControlPlane) -> None:
    while True:
        await asyncio.sleep(COMPACT_PERIOD_S)
        target = cp.storage.current_revision() - KEEP_REVISIONS
        if target > cp.storage.compacted_revision():
            await cp.storage.compact(target)
            await cp.storage.checkpoint()
            log.info("store compacted up to revision %d", target)
