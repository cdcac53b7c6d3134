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
import threading
import time
from collections.abc import Mapping
from typing import Any

from pykubelet.proxy import iptables_rules
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
    endpoints_map,
    service_ports,
    slice_service,
)

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
ServiceKey = tuple[str, str]


def _key(obj: Obj) -> ServiceKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


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


class Proxier:
    """Keeps this node's KUBE-* rules in step with the Services and EndpointSlices seen."""

    def __init__(self, iptables: Iptables, node_name: str = "", options: Options | None = None,
                 metrics: ProxyMetrics | None = None,
                 conntrack: ConntrackCleaner | None = None) -> None:
        self.iptables = iptables
        self.conntrack = conntrack
        self.node_name = node_name
        self.options = options or Options()
        self.metrics = metrics
        self._mu = threading.Lock()
        self._services: dict[ServiceKey, Obj] = {}
        self._slices: dict[ServiceKey, dict[str, Obj]] = {}  # service -> slice name -> slice
        self._svc_ports: dict[ServiceKey, list[ServicePortInfo]] = {}
        self._endpoints: dict[ServiceKey, dict[ServicePortName, list[EndpointInfo]]] = {}
        self._changed: set[ServiceKey] = set()
        self._need_full = True
        self._services_synced = False
        self._slices_synced = False
        self._active_chains: set[str] = set()
        self._top_level: TopLevel = {}  # the top-level chains' rules as last restored
        self._last_error = ""
        self.last_rules: RuleSet | None = None

    # -- change tracking (informer handlers: quick, no I/O) --

    def on_service(self, old: Obj | None, new: Obj | None) -> None:
        """OnServiceAdd/Update/Delete: ``old`` None for an add, ``new`` None for a delete."""
        obj = new if new is not None else old
        if obj is None:
            return
        key = _key(obj)
        with self._mu:
            if new is None:
                self._services.pop(key, None)
                self._svc_ports.pop(key, None)
            else:
                self._services[key] = new
                self._svc_ports[key] = service_ports(new)
            self._changed.add(key)

    def on_endpoint_slice(self, old: Obj | None, new: Obj | None) -> None:
        """OnEndpointSliceAdd/Update/Delete: the owning service's endpoints are rebuilt."""
        obj = new if new is not None else old
        if obj is None:
            return
        svc = slice_service(obj)
        if svc is None:
            return
        name = _key(obj)[1]
        with self._mu:
            slices = self._slices.setdefault(svc, {})
            if new is None:
                slices.pop(name, None)
            else:
                slices[name] = new
            if not slices:
                self._slices.pop(svc, None)
                self._endpoints.pop(svc, None)
            else:
                self._endpoints[svc] = endpoints_map(slices.values(), self.node_name)
            self._changed.add(svc)

    def set_services(self, services: list[Obj]) -> None:
        """OnServiceSynced with the full list (a relist replaces what was known)."""
        with self._mu:
            gone = set(self._services) - {_key(s) for s in services}
        for key in gone:
            self.on_service({"metadata": {"namespace": key[0], "name": key[1]}}, None)
        for s in services:
            self.on_service(None, s)
        with self._mu:
            self._services_synced = True

    def set_endpoint_slices(self, slices: list[Obj]) -> None:
        """OnEndpointSlicesSynced with the full list."""
        with self._mu:
            self._slices.clear()
            old = set(self._endpoints)
            self._endpoints.clear()
            self._changed |= old
        for es in slices:
            self.on_endpoint_slice(None, es)
        with self._mu:
            self._slices_synced = True

    @property
    def initialized(self) -> bool:
        return self._services_synced and self._slices_synced

    def force_full_sync(self) -> None:
        with self._mu:
            self._need_full = True

    def pending(self) -> bool:
        """Whether a sync would write anything new."""
        with self._mu:
            return self._need_full or bool(self._changed)

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
        start = time.monotonic()
        with self._mu:
            partial = not self._need_full
            changed = set(self._changed)
            self._changed.clear()
            services = {p.name: p for ports in self._svc_ports.values() for p in ports}
            endpoints = {n: eps for by_port in self._endpoints.values()
                         for n, eps in by_port.items()}
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
                with self._mu:
                    self._need_full = True  # the changes are consumed: only a full sync is safe
                    self._changed |= changed
        log.debug("SyncProxyRules complete in %.3fs (partial=%s, ok=%s)", elapsed, partial, ok)
        return ok

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
        with self._mu:
            self._need_full = False
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
