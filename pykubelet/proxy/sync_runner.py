"""What both proxiers' syncProxyRules do around writing their rules (the iptables one with
iptables-restore, the nftables one with one ``nft -f`` transaction): take the changes since
the last sync, write them (all, or only the changed services' on a partial sync), clean
stale UDP conntrack entries after a good write, time the sync into the metrics, and after
a failed one ask for a full sync next (the changes taken are consumed)."""

from __future__ import annotations

import logging
import time

from pykubelet.proxy.changes import ChangeTracker, ServiceKey
from pykubelet.proxy.conntrack import ConntrackCleaner
from pykubelet.proxy.iptables_restore import RestoreError
from pykubelet.proxy.metrics import ProxyMetrics
from pykubelet.proxy.serviceport import EndpointInfo, ServicePortInfo, ServicePortName

log = logging.getLogger(__name__)


class SyncRunner(ChangeTracker):
    """A proxier: a ChangeTracker whose ``_write`` turns the changes into kernel rules."""

    conntrack: ConntrackCleaner | None
    metrics: ProxyMetrics | None

    def _write(self, services: dict[ServicePortName, ServicePortInfo],
               endpoints: dict[ServicePortName, list[EndpointInfo]],
               changed: set[ServiceKey] | None) -> object:
        """Write the rules (``changed`` None: all of them); RestoreError when refused,
        logged by the writer (the kernel keeps the last good rules)."""
        raise NotImplementedError

    def sync_changes(self) -> bool:
        """One sync of what changed; True when the rules were written."""
        start = time.monotonic()
        partial, changed, services, endpoints = self.take_changes()
        ok = False
        try:
            self._write(services, endpoints, changed if partial else None)
            ok = True
            if self.conntrack is not None:  # finish housekeeping, as upstream after a sync
                try:
                    self.conntrack.clean(services, endpoints)
                except Exception as exc:
                    log.warning("stale UDP conntrack entries not cleaned: %s", exc)
        except RestoreError:
            pass  # logged (once) by _write; the kernel still has the last good rules
        finally:
            elapsed = time.monotonic() - start
            if self.metrics:
                self.metrics.sync_duration.observe(elapsed)
                (self.metrics.partial_sync_duration if partial
                 else self.metrics.full_sync_duration).observe(elapsed)
            if not ok:
                self.sync_failed(changed)  # the changes are consumed: a full sync next
        log.debug("SyncProxyRules complete in %.3fs (partial=%s, ok=%s)", elapsed, partial, ok)
        return ok
