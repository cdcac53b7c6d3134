"""The iptables proxier: Services and EndpointSlices in, one ``iptables-restore`` per sync.

kube-proxy's Proxier (pkg/proxy/iptables/proxier.go) in three parts: change tracking (the
informers' handlers record which services changed and keep the per-port maps current),
``sync`` (syncProxyRules: build the rules, apply them in one restore, partially when only
some services changed since the last good sync), and ``cleanup`` (CleanupLeftovers, on a
clean stop, and at start where a previous run left rules behind).

Partial syncs: after a successful sync only the services named by events since then have
their chains rewritten, and the top-level chains only when their rules changed (upstream
rewrites them on every sync). Stale chains are known from the
last good sync, so a partial sync needs no iptables-save (upstream saves on every sync
outside large clusters); a full sync (the first, after a failure, on request) does save,
to find leftovers of earlier runs and the jump rules from the built-in chains.

A failed restore changes nothing (the nat table goes first and is refused whole), so the
last good rules keep serving; the failure is logged once per distinct error and the next
sync is a full one. A run with nothing to write (the runner's periodic one) only looks for
kube-proxy's canary chain, which every full sync declares: gone, the tables were flushed
under us (firewalld, an admin's ``iptables -F``), and a full sync puts everything back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pykubelet.proxy import iptables_rules
from pykubelet.proxy.changes import ServiceKey
from pykubelet.proxy.conntrack import ConntrackCleaner
from pykubelet.proxy.iptables_restore import Iptables, RestoreError, chains_of, extract_lines
from pykubelet.proxy.iptables_rules import (
    FILTER_CHAINS,
    JUMP_RULES,
    KUBE_PROXY_CANARY,
    NAT_CHAINS,
    JumpRule,
    Options,
    RuleSet,
    TopLevel,
    chain_line,
    is_service_chain,
    omit_unchanged_top_level,
)
from pykubelet.proxy.metrics import ProxyMetrics
from pykubelet.proxy.serviceport import (
    EndpointInfo,
    ServicePortInfo,
    ServicePortName,
)
from pykubelet.proxy.sync_runner import SyncRunner

log = logging.getLogger(__name__)

def missing_jumps(saved: Mapping[str, str]) -> list[JumpRule]:
    """The jump rules not found in the built-in chains of ``saved`` (table -> save text)."""
    out = []
    for j in JUMP_RULES:
        text = saved.get(j.table, "")
        want = " ".join(j.args())
        if not any(ln.startswith(f"-A {j.src} ") and ln.endswith(want)
                   for ln in text.splitlines()):
            out.append(j)
    return out


class Proxier(SyncRunner):
    """Keeps this node's KUBE-* rules in step with the Services and EndpointSlices seen."""

    def __init__(self, iptables: Iptables, node_name: str = "", options: Options | None = None,
                 metrics: ProxyMetrics | None = None,
                 conntrack: ConntrackCleaner | None = None) -> None:
        self.iptables = iptables
        self.conntrack = conntrack
        self.options = options or Options()
        self.metrics = metrics
        SyncRunner.__init__(self, node_name)
        self._active_chains: set[str] = set()
        self._top_level: TopLevel = {}  # the top-level chains' rules as last restored
        self._last_error = ""
        self.last_rules: RuleSet | None = None

    # -- syncProxyRules --

    def sync(self) -> bool:
        """Write the rules (partially when possible); True when the restore succeeded."""
        if not self.initialized:
            log.debug("Not syncing iptables until Services and Endpoints have been received")
            return False
        with self._mu:
            idle = not self._need_full and not self._changed
        if idle:  # a periodic run: only the canary says whether the tables were flushed
            if self.iptables.chain_exists("nat", KUBE_PROXY_CANARY) and \
                    self.iptables.chain_exists("filter", KUBE_PROXY_CANARY):
                return True
            log.info("iptables canary %s is gone (tables flushed?): a full sync",
                     KUBE_PROXY_CANARY)
            self.force_full_sync()
        return self.sync_changes()

    def _write(self, services: dict[ServicePortName, ServicePortInfo],
               endpoints: dict[ServicePortName, list[EndpointInfo]],
               changed: set[ServiceKey] | None) -> RuleSet:
        jumps: list[JumpRule] = []
        existing = self._active_chains
        if changed is None:
            try:
                saved = {t: self.iptables.save(t) for t in ("nat", "filter")}
            except RestoreError as e:
                self._log_failure(f"Failed to execute iptables-save: {e}")
                if self.metrics:
                    self.metrics.restore_failures.inc()
                raise
            existing = existing | chains_of(saved["nat"])
            jumps = missing_jumps(saved)
        rules = iptables_rules.build(services, endpoints, self.options, changed=changed,
                                     existing_chains=existing, jumps=jumps,
                                     canary=changed is None)
        text, top_level = omit_unchanged_top_level(
            rules.text, self._top_level if changed is not None else {})
        try:
            self.iptables.restore(text)
        except RestoreError as e:
            where = f"\n{extract_lines(text, e.line)}" if e.line else ""
            self._log_failure(f"Failed to execute iptables-restore: {e}", where)
            if self.metrics:
                self.metrics.restore_failures.inc()
                if changed is not None:
                    self.metrics.partial_restore_failures.inc()
            raise
        self._last_error = ""
        self.sync_succeeded()
        self._active_chains = rules.active_nat_chains
        self._top_level = top_level
        self.last_rules = rules
        if self.metrics:
            m = self.metrics
            m.rules_total.labels("filter").set(rules.filter_rules)
            m.rules_last_sync.labels("filter").set(rules.filter_rules)
            m.rules_total.labels("nat").set(rules.nat_rules)
            m.rules_last_sync.labels("nat").set(rules.nat_rules_written)
            m.no_local_endpoints.labels("internal").set(rules.no_local_internal)
            m.no_local_endpoints.labels("external").set(rules.no_local_external)
            m.last_sync.set_to_current_time()
        return rules

    def _log_failure(self, message: str, context: str = "") -> None:
        """Once per distinct failure: a retry failing the same way (even with other input
        lines around the error) says nothing new."""
        if message != self._last_error:
            log.error("%s; the last good rules stay in place%s", message, context)
            self._last_error = message

    # -- CleanupLeftovers --

    def cleanup(self) -> bool:
        """Remove every jump rule and chain this proxier makes; True if all went well.
        Safe to call when nothing is there (a clean host, or a second stop)."""
        ok = True
        for j in JUMP_RULES:
            # one tool run per jump, as DeleteRule; "not found" is fine
            args = ["-t", j.table, "-D", j.src, *[a.strip('"') for a in j.args()]]
            ok = self._run_quiet(args) and ok
        try:
            saved = {t: self.iptables.save(t) for t in ("nat", "filter")}
        except RestoreError as e:
            log.error("cleanup: %s", e)
            return False
        nat = chains_of(saved["nat"])
        filt = chains_of(saved["filter"])
        ours = (*NAT_CHAINS, KUBE_PROXY_CANARY)
        nat_del = [c for c in ours if c in nat] + sorted(c for c in nat if is_service_chain(c))
        filt_del = [c for c in (*FILTER_CHAINS, KUBE_PROXY_CANARY) if c in filt]
        text = ""
        if nat_del:
            text += "\n".join(["*nat", *map(chain_line, nat_del),
                               *(f"-X {c}" for c in nat_del), "COMMIT", ""])
        if filt_del:
            text += "\n".join(["*filter", *map(chain_line, filt_del),
                               *(f"-X {c}" for c in filt_del), "COMMIT", ""])
        if text:
            try:
                self.iptables.restore(text)
            except RestoreError as e:
                log.error("cleanup: failed to execute iptables-restore: %s", e)
                if self.metrics:
                    self.metrics.restore_failures.inc()
                ok = False
        with self._mu:
            self._active_chains = set()
            self._top_level = {}
            self._need_full = True
        return ok

    def _run_quiet(self, args: list[str]) -> bool:
        """One rule deletion; a rule or chain already gone is success."""
        proc = self.iptables.run(*args)
        if proc.returncode == 0 or any(m in proc.stderr for m in _NOT_FOUND):
            return True
        log.error("cleanup: %s: %s", " ".join(args), proc.stderr.strip())
        return False


#: utiliptables' iptablesNotFoundStrings: what either variant says when the rule or chain to
#: delete is not there (legacy: "Couldn't load target" when a jump's target chain is gone)
_NOT_FOUND = ("No chain/target/match by that name", "Couldn't load target",
              "does a matching rule exist", "does not exist")
