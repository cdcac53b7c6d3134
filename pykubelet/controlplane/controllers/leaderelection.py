"""Leader election through ``coordination.k8s.io/v1`` Leases, as client-go's leaderelection
package runs it for kube-scheduler and kube-controller-manager (``--leader-elect``), so
that of several control planes over one etcd exactly one runs the scheduler loop and one
runs the controllers.

A candidate tries every ``retry_period`` to acquire the Lease: it may take it when the
Lease has no holder, or when the holder's record has not changed for ``lease_duration``
by the candidate's own clock (client-go's observedTime: clocks of different machines are
never compared). It writes with the resourceVersion it read, so of two candidates at most
one wins. The leader renews every ``retry_period``; if it has not renewed for
``renew_deadline`` it stops leading (its controllers are cancelled) before anyone else may
take over (``renew_deadline < lease_duration``), then competes again. A leader that stops
cleanly releases the Lease (client-go's ReleaseOnCancel) so the next one takes over at once.

``decide`` is the pure part: what to write, given the Lease as read, the identity and the
clocks; ``LeaderElector`` does the reads and writes through the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykubelet.api.machinery.timeutil import micro_time, now
from pykubelet.controlplane import errors
from pykubelet.controlplane.election import LeaderElection
from pykubelet.controlplane.registry.resources import LEASES
from pykubelet.controlplane.registry.store import Context

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

Controller = Callable[["ControlPlane"], Awaitable[Any]]

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-system"
SCHEDULER_LEASE = "kube-scheduler"
CONTROLLERS_LEASE = "kube-controller-manager"


@dataclass
class Observed:
    """What the candidate last saw of the Lease: its spec and when (monotonic) it changed."""

    spec: dict[str, Any]
    at: float


def decide(spec: dict[str, Any] | None, observed: Observed | None, me: str, mono: float,
           config: LeaderElection, wall: str) -> dict[str, Any] | None:
    """The Lease spec to write to acquire or renew, or None when another holds it.

    ``spec`` is the Lease's spec as read (None: no Lease), ``observed`` when this
    candidate first saw that spec, ``mono`` the candidate's monotonic clock and ``wall``
    the current time as an RFC 3339 string with microseconds (for the record).
    """
    duration = max(1, math.ceil(config.lease_duration))
    if spec is None:
        return {"holderIdentity": me, "leaseDurationSeconds": duration,
                "acquireTime": wall, "renewTime": wall, "leaseTransitions": 0}
    holder = spec.get("holderIdentity") or ""
    transitions = int(spec.get("leaseTransitions") or 0)
    if holder == me:
        return {**spec, "leaseDurationSeconds": duration, "renewTime": wall}
    if holder:
        held_for = float(spec.get("leaseDurationSeconds") or config.lease_duration)
        if observed is None or mono < observed.at + held_for:
            return None  # held, and not yet expired by our own clock
    return {"holderIdentity": me, "leaseDurationSeconds": duration, "acquireTime": wall,
            "renewTime": wall, "leaseTransitions": transitions + (1 if holder else 0)}


class LeaderElector:
    """Keeps trying to lead under one Lease; runs ``on_lead`` while leading."""

    def __init__(self, cp: ControlPlane, name: str, config: LeaderElection, identity: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cp = cp
        self.name = name
        self.config = config
        self.identity = identity
        self.clock = clock
        self.leading = False
        self._observed: Observed | None = None
        self._last_renew = 0.0

    def _read(self) -> tuple[dict[str, Any] | None, str]:
        """The Lease's spec and resourceVersion, from the watch cache."""
        entry = self.cp.registry.store(LEASES).lookup(LEASE_NAMESPACE, self.name)
        if entry is None:
            self._observed = None
            return None, ""
        obj = entry.obj()
        spec = dict(obj.get("spec") or {})
        if self._observed is None or self._observed.spec != spec:
            self._observed = Observed(spec, self.clock())
        return spec, str((obj.get("metadata") or {}).get("resourceVersion") or "")

    async def try_acquire_or_renew(self) -> bool:
        spec, rv = self._read()
        want = decide(spec, self._observed, self.identity, self.clock(), self.config,
                      micro_time(now()))
        if want is None:
            return False
        body: dict[str, Any] = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                "metadata": {"name": self.name, "namespace": LEASE_NAMESPACE},
                                "spec": want}
        store = self.cp.registry.store(LEASES)
        try:
            if spec is None:
                await store.create(Context(), LEASE_NAMESPACE, body)
            else:
                body["metadata"]["resourceVersion"] = rv
                await store.update(Context(), LEASE_NAMESPACE, self.name, body)
        except errors.StatusError as exc:
            log.debug("lease %s: %s", self.name, exc)
            return False
        self._observed = Observed(want, self.clock())
        return True

    async def release(self) -> None:
        """Give the Lease up (holder emptied), so another candidate takes it at once."""
        spec, rv = self._read()
        if spec is None or spec.get("holderIdentity") != self.identity:
            return
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": LEASE_NAMESPACE,
                             "resourceVersion": rv},
                "spec": {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                         "renewTime": micro_time(now())}}
        with contextlib.suppress(errors.StatusError):
            await self.cp.registry.store(LEASES).update(Context(), LEASE_NAMESPACE, self.name,
                                                        body)

    async def run(self, controllers: list[Controller]) -> None:
        """Forever: acquire, lead (run the controllers) until renewal fails, start again."""
        try:
            while True:
                while not await self.try_acquire_or_renew():
                    await asyncio.sleep(self.config.retry_period)
                log.info("%s: %s became the leader", self.name, self.identity)
                self.leading = True
                tasks = [asyncio.create_task(self.cp.guard(c), name=f"{self.name}:"
                                             f"{getattr(c, '__name__', 'controller')}")
                         for c in controllers]
                try:
                    await self._renew_until_lost()
                finally:
                    self.leading = False
                    for t in tasks:
                        t.cancel()
                    for t in tasks:
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await t
                log.warning("%s: %s lost the lease", self.name, self.identity)
        finally:
            if self.leading or self._observed is not None:
                await asyncio.shield(self.release())

    async def _renew_until_lost(self) -> None:
        last = self.clock()
        while True:
            await asyncio.sleep(self.config.retry_period)
            try:
                renewed = await asyncio.wait_for(self.try_acquire_or_renew(),
                                                 self.config.renew_deadline)
            except TimeoutError:
                renewed = False
            if renewed:
                last = self.clock()
            elif self.clock() - last >= self.config.renew_deadline:
                return


def leader_elected(name: str, controllers: list[Controller]) -> Controller:
    """One controller that runs ``controllers`` while this control plane holds Lease
    ``name`` (or runs them at once when the control plane has no leader election)."""

    async def run(cp: ControlPlane) -> None:
        config = cp.options.leader_election
        if config is None:
            tasks = [asyncio.create_task(cp.guard(c)) for c in controllers]
            try:
                await asyncio.gather(*tasks)
            finally:
                for t in tasks:
                    t.cancel()
            return
        elector = LeaderElector(cp, name, config, cp.identity)
        cp.electors[name] = elector
        await elector.run(controllers)

    run.__name__ = f"leader_elected_{name.replace('-', '_')}"
    return run
