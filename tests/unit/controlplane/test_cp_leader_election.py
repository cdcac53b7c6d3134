"""Leader election's rule (client-go's tryAcquireOrRenew), as a pure function."""

from __future__ import annotations

from pykubelet.controlplane.controllers.leaderelection import Observed, decide
from pykubelet.controlplane.election import LeaderElection

CFG = LeaderElection(lease_duration=15, renew_deadline=10, retry_period=2)
T = "2026-01-01T00:00:00.000000Z"


def test_no_lease_is_taken() -> None:
    got = decide(None, None, "a", 100.0, CFG, T)
    assert got == {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": T,
                   "renewTime": T, "leaseTransitions": 0}


def test_the_holder_renews_keeping_its_acquire_time() -> None:
    spec = {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": "t0",
            "renewTime": "t0", "leaseTransitions": 3}
    got = decide(spec, Observed(spec, 0.0), "a", 500.0, CFG, T)
    assert got is not None
    assert (got["acquireTime"], got["renewTime"], got["leaseTransitions"]) == ("t0", T, 3)


def test_a_held_lease_is_taken_only_after_it_stood_still_for_its_duration() -> None:
    spec = {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": "t0",
            "renewTime": "t0", "leaseTransitions": 1}
    seen = Observed(spec, 100.0)  # by our own clock: the record was last seen changing then
    assert decide(spec, seen, "b", 114.9, CFG, T) is None
    got = decide(spec, seen, "b", 115.0, CFG, T)
    assert got is not None
    assert (got["holderIdentity"], got["acquireTime"], got["leaseTransitions"]) == ("b", T, 2)
    # never having seen it change, we cannot know how old it is: wait a full duration
    assert decide(spec, None, "b", 1e9, CFG, T) is None


def test_a_released_lease_is_taken_at_once() -> None:
    spec = {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 4}
    got = decide(spec, Observed(spec, 100.0), "b", 100.0, CFG, T)
    assert got is not None
    assert (got["holderIdentity"], got["leaseTransitions"]) == ("b", 4)
