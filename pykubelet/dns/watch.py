"""The cluster zone kept from watches: informers on Services and EndpointSlices (any API
that serves them, through the REST client), the zone rebuilt from their stores after a
change and swapped into the Answerer, as CoreDNS's kubernetes plugin answers from its
informers' indexes and never calls the API per query.

Changes are coalesced: one rebuild at most every ``period`` seconds, taking whatever
arrived meanwhile (a rollout's burst of slice updates costs one rebuild). Nothing is
answered from a half-synced view: the first zone is built once both informers listed.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pykubelet.client.informer import Informer
from pykubelet.client.rest import Resource
from pykubelet.dns.records import build_zone
from pykubelet.dns.server import Answerer

log = logging.getLogger(__name__)

SERVICES = Resource("", "v1", "services")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices")
REBUILD_PERIOD_S = 0.05


class ZoneKeeper:
    """Feeds ``answerer`` the zone of ``domain`` from informers over ``client``."""

    def __init__(self, client: Any, answerer: Answerer, domain: str = "cluster.local",
                 period: float = REBUILD_PERIOD_S) -> None:
        self.answerer, self.domain, self.period = answerer, domain, period
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._built = threading.Event()
        self._settled = threading.Event()  # the first zone built, or a stop asked for
        self.rebuilds = 0

        def changed(*_: Any) -> None:
            self._dirty.set()

        kw: dict[str, Any] = {"on_add": changed, "on_update": changed, "on_delete": changed,
                              "on_sync": changed}
        self.services = Informer(client, SERVICES, name="dns-services", **kw)
        self.slices = Informer(client, ENDPOINT_SLICES, name="dns-endpointslices", **kw)
        self._thread = threading.Thread(target=self._run, name="dns-zone", daemon=True)

    def start(self) -> None:
        self.services.start()
        self.slices.start()
        self._thread.start()

    def wait_synced(self, timeout: float) -> bool:
        """Whether the first zone was built within ``timeout`` seconds; False at once when
        stopped meanwhile (a control plane stopping while its DNS waits for the API)."""
        self._settled.wait(timeout)
        return self._built.is_set()

    def interrupt(self) -> None:
        """Ask the keeper to end, without waiting: a wait_synced returns at once (callable
        from an event loop; stop() still follows to join the threads)."""
        self._stop.set()
        self._settled.set()
        self._dirty.set()

    def stop(self) -> None:
        self.interrupt()
        self.services.stop()
        self.slices.stop()
        self._thread.join(5)

    def rebuild(self) -> None:
        zone = build_zone(self.services.items(), self.slices.items(), self.domain)
        self.answerer.set_zone(zone)
        self.rebuilds += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait()
            if self._stop.is_set():
                return
            self._stop.wait(self.period)  # coalesce a burst
            self._dirty.clear()
            if not (self.services.has_synced and self.slices.has_synced):
                continue
            try:
                self.rebuild()
                self._built.set()
                self._settled.set()
            except Exception:  # a bad object must not stop DNS: keep the last zone
                log.exception("cluster DNS: rebuilding the zone failed; keeping the last one")
