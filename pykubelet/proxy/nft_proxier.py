"""The nftables proxier: Services and EndpointSlices in, one ``nft -f`` transaction per sync.

kube-proxy's ``--proxy-mode nftables`` (pkg/proxy/nftables/proxier.go) over the same
change tracking as the iptables proxier (:mod:`.changes`); the rules are
:mod:`.nftables_rules`' and go to the kernel through :mod:`.nft`.

Why a second proxier: on an iptables-nft host (Debian 12's default) the iptables proxier's
full sync of 1,000 services x 10 endpoints costs ~8-14 s of iptables-nft-restore's own user
time; ``nft -f`` writes the same services (verdict maps instead of a rule per service)
in ~1 s, and an endpoint change rewrites only that service's chains and map elements.

Sync kinds, as upstream: the first sync of a proxier deletes whatever table an earlier run
left and writes everything, in one transaction; a later full sync (after a failure, a
relist, or the table gone under us) lists our chains and sets (``nft list chains``: quick)
and writes everything again, flushing what is no longer wanted; a partial sync writes the
changed services' chains and the map elements that differ, with no listing at all (the
chains are known from the last good sync). Stale service chains are flushed at once and
deleted by a later sync at least a second on. A refused transaction changes nothing; it is
logged once per distinct error and the next sync is a full one.
"""

from __future__ import annotations

import logging
import time

from pykubelet.proxy.conntrack import ConntrackCleaner
from pykubelet.proxy.iptables_restore import RestoreError, extract_lines
from pykubelet.proxy.iptables_rules import Options
from pykubelet.proxy.metrics import ProxyMetrics
from pykubelet.proxy.nft import Nft
from pykubelet.proxy.nftables_rules import (
    FAMILY,
    TABLE,
    NftOptions,
    NftRuleSet,
    ServiceKey,
    ServiceState,
    build,
)
from pykubelet.proxy.serviceport import EndpointInfo, ServicePortInfo, ServicePortName
from pykubelet.proxy.sync_runner import SyncRunner

log = logging.getLogger(__name__)

#: how long a stale chain waits between its flush and its deletion (upstream: 1 s)
STALE_CHAIN_DELAY = 1.0


class NftProxier(SyncRunner):
    """Keeps this node's ``ip kube-proxy`` table in step with the Services and slices seen."""

    def __init__(self, nft: Nft, node_name: str = "", options: Options | None = None,
                 nft_options: NftOptions | None = None,
                 metrics: ProxyMetrics | None = None,
                 conntrack: ConntrackCleaner | None = None) -> None:
        SyncRunner.__init__(self, node_name)
        self.nft = nft
        self.options = options or Options()
        self.nft_options = nft_options or NftOptions()
        self.metrics = metrics
        self.conntrack = conntrack
        self._first = True  # the next full sync starts by deleting the table
        self._state: dict[ServiceKey, ServiceState] = {}  # as the last good sync left it
        self._stale: dict[str, float] = {}  # flushed chain -> when
        self._last_error = ""
        self.last_rules: NftRuleSet | None = None

    def sync(self) -> bool:
        """Write the rules (partially when possible); True when the transaction applied."""
        if not self.initialized:
            log.debug("Not syncing nftables until Services and Endpoints have been received")
            return False
        self._delete_stale_chains()
        if not self.pending():  # a periodic run: only check that the table is still there
            if self._first or self.nft.table_exists():
                return True
            log.info("nftables table %s %s is gone: a full sync", FAMILY, TABLE)
            self.force_full_sync()
        return self.sync_changes()

    def _write(self, services: dict[ServicePortName, ServicePortInfo],
               endpoints: dict[ServicePortName, list[EndpointInfo]],
               changed: set[tuple[str, str]] | None) -> NftRuleSet:
        chains: set[str] = set()
        sets: set[str] = set()
        if changed is None and not self._first:
            try:
                chains, sets = self.nft.chains(), self.nft.sets()
            except RestoreError as e:
                self._fail(f"Failed to list nftables chains: {e}")
                raise
        rules = build(services, endpoints, self.options, self.nft_options, changed=changed,
                      previous=self._state, existing_chains=chains,
                      existing_affinity_sets=sets,
                      delete_table_first=changed is None and self._first)
        try:
            self.nft.run(rules.text)
        except RestoreError as e:
            where = f"\n{extract_lines(rules.text, e.line)}" if e.line else ""
            self._fail(f"nftables sync failed: {e}", where)
            self._stale.clear()  # not flushed after all: recomputed by the next full sync
            raise
        self._last_error = ""
        self.sync_succeeded()
        self._first = False
        now = time.monotonic()
        for chain in rules.flushed_stale:
            self._stale.setdefault(chain, now)
        for chain in rules.active_chains:
            self._stale.pop(chain, None)
        self._state = rules.state
        self.last_rules = rules
        if self.metrics:
            m = self.metrics
            m.no_local_endpoints.labels("internal").set(rules.no_local_internal)
            m.no_local_endpoints.labels("external").set(rules.no_local_external)
            m.last_sync.set_to_current_time()
        return rules

    def _delete_stale_chains(self) -> None:
        """Chains flushed by an earlier sync at least STALE_CHAIN_DELAY ago: delete them."""
        due = [c for c, t in self._stale.items() if time.monotonic() - t >= STALE_CHAIN_DELAY]
        if not due:
            return
        for chain in due:
            del self._stale[chain]
        # add before delete: a chain (or the table) already gone is no error
        text = f"add table {FAMILY} {TABLE}\n" + "".join(
            f"add chain {FAMILY} {TABLE} {c}\ndelete chain {FAMILY} {TABLE} {c}\n" for c in due)
        try:
            self.nft.run(text)
        except RestoreError as e:
            # still there: the next full sync lists it again, flushes it and retries
            log.error("Unable to delete stale chains; will retry later: %s", e)
            self.force_full_sync()

    def _fail(self, message: str, context: str = "") -> None:
        if message != self._last_error:
            log.error("%s; the last good rules stay in place%s", message, context)
            self._last_error = message
        if self.metrics:
            self.metrics.restore_failures.inc()

    def cleanup(self) -> bool:
        """CleanupLeftovers: delete the table; True if it is gone (or was never there)."""
        try:
            self.nft.delete_table()
        except RestoreError as e:
            log.error("cleanup: %s", e)
            return False
        finally:
            with self._mu:
                self._need_full = True
            self._first = True
            self._state = {}
            self._stale.clear()
        return True
