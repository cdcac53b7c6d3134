"""The Deployment controller's rules as tables (pkg/controller/deployment/util,
rolling.go, progress.go): intstr rounding of maxSurge/maxUnavailable, how far the new
ReplicaSet grows and the old ones shrink, the status and its conditions, the revision
history cleanup, the new ReplicaSet's shape."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from pykubelet.api.machinery.timeutil import rfc3339
from pykubelet.controlplane.controllers import deploymentutil as du

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def deploy(replicas: int = 10, surge: Any = "25%", unavailable: Any = "25%",
           status: dict[str, Any] | None = None, generation: int = 1,
           deadline: int | None = 600, limit: int | None = 10,
           kind: str = "RollingUpdate") -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": kind}
    if kind == "RollingUpdate":
        strategy["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    spec: dict[str, Any] = {"replicas": replicas, "strategy": strategy,
                            "selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "c",
                                                                  "image": "i"}]}}}
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    if limit is not None:
        spec["revisionHistoryLimit"] = limit
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "d-uid",
                         "generation": generation, "annotations": {"a": "b"}},
            "spec": spec, "status": status or {}}


def rs(name: str, size: int, available: int | None = None, created: int = 0,
       revision: int = 1, observed: int = 1, actual: int | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "generation": 1,
                         "creationTimestamp": rfc3339(NOW + dt.timedelta(seconds=created)),
                         "annotations": {du.REVISION: str(revision)}},
            "spec": {"replicas": size},
            "status": {"replicas": size if actual is None else actual,
                       "availableReplicas": size if available is None else available,
                       "readyReplicas": size if available is None else available,
                       "observedGeneration": observed}}


@pytest.mark.parametrize(("surge", "unavailable", "desired", "want"), [
    ("25%", "25%", 10, (3, 2)),   # surge rounds up, unavailable down
    ("25%", "25%", 1, (1, 0)),
    ("0%", "0%", 4, (0, 1)),      # never both zero
    (0, 0, 4, (0, 1)),
    (2, "50%", 3, (2, 1)),
    ("100%", 0, 5, (5, 0)),
    ("34%", "34%", 3, (2, 1)),
])
def test_resolve_fenceposts(surge: Any, unavailable: Any, desired: int,
                            want: tuple[int, int]) -> None:
    assert du.resolve_fenceposts(surge, unavailable, desired) == want


def test_max_unavailable_is_capped_and_zero_for_recreate() -> None:
    assert du.max_unavailable(deploy(2, 0, 5)) == 2
    assert du.max_unavailable(deploy(0)) == 0
    assert du.max_unavailable(deploy(kind="Recreate")) == 0
    assert du.max_surge(deploy(kind="Recreate")) == 0


@pytest.mark.parametrize(("new", "old", "want"), [
    (0, 10, 3),    # surge 3 over 10
    (3, 10, 3),    # at the surge limit: no growth
    (3, 7, 6),
    (8, 2, 10),    # never past the desired count
    (0, 0, 10),
])
def test_new_rs_new_replicas(new: int, old: int, want: int) -> None:
    d = deploy(10)
    new_rs, old_rs = rs("new", new, created=10), rs("old", old)
    assert du.new_rs_new_replicas(d, [old_rs, new_rs], new_rs) == want


def test_recreate_new_rs_takes_all_at_once() -> None:
    d = deploy(4, kind="Recreate")
    assert du.new_rs_new_replicas(d, [rs("new", 0)], rs("new", 0)) == 4


@pytest.mark.parametrize(("old", "new", "new_available", "want"), [
    # 10 desired, maxUnavailable 2: min 8 available; all old available
    ([10], 3, 0, [("old0", 8)]),  # 13 - 8 - 3 unavailable new: 2 may go
    ([10], 3, 3, [("old0", 5)]),  # 13 available > 8: 5 may go
    ([5], 10, 10, [("old0", 0)]),
    ([0], 10, 10, []),
])
def test_old_scale_down(old: list[int], new: int, new_available: int,
                        want: list[tuple[str, int]]) -> None:
    d = deploy(10)
    olds = [rs(f"old{i}", n, created=i) for i, n in enumerate(old)]
    new_rs = rs("new", new, available=new_available, created=100)
    got = du.old_scale_down(d, [*olds, new_rs], [o for o in olds if o["spec"]["replicas"]],
                            new_rs)
    assert [(r["metadata"]["name"], n) for r, n in got] == want


def test_old_scale_down_unhealthy_first_oldest_first() -> None:
    d = deploy(4, surge=0, unavailable=1)
    older = rs("older", 2, available=0, created=0)
    newer = rs("newer", 2, available=2, created=5)
    new_rs = rs("new", 0, created=10)
    got = du.old_scale_down(d, [older, newer, new_rs], [older, newer], new_rs)
    # min available 3; 4 - 3 - 0 = 1 may go: the unhealthy (older) one loses it first
    assert [(r["metadata"]["name"], n) for r, n in got] == [("older", 1)]


def test_status_and_conditions() -> None:
    d = deploy(3, generation=2)
    new = rs("web-abc", 3)
    st = du.rollout_status(d, [new], new, NOW)
    assert {k: st[k] for k in ("observedGeneration", "replicas", "updatedReplicas",
                               "readyReplicas", "availableReplicas")} == {
        "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
        "availableReplicas": 3}
    conds = {c["type"]: c for c in st["conditions"]}
    assert (conds["Available"]["status"], conds["Available"]["reason"],
            conds["Available"]["message"]) == ("True", "MinimumReplicasAvailable",
                                                "Deployment has minimum availability.")
    assert (conds["Progressing"]["status"], conds["Progressing"]["reason"],
            conds["Progressing"]["message"]) == (
        "True", "NewReplicaSetAvailable", 'ReplicaSet "web-abc" has successfully progressed.')


def test_progressing_then_timed_out() -> None:
    old_status = {"replicas": 3, "updatedReplicas": 0, "availableReplicas": 3}
    d = deploy(3, status=old_status)
    new = rs("web-new", 1, available=0, actual=1, created=5)
    old = rs("web-old", 3)
    st = du.rollout_status(d, [old, new], new, NOW)
    cond = du.get_condition(st, du.PROGRESSING)
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "ReplicaSetUpdated", 'ReplicaSet "web-new" is progressing.')
    stuck = deploy(3, status=st)
    later = NOW + dt.timedelta(seconds=601)
    st2 = du.rollout_status(stuck, [old, new], new, later)
    cond = du.get_condition(st2, du.PROGRESSING)
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-new" has timed out progressing.')
    avail = du.get_condition(st2, du.AVAILABLE)
    assert avail is not None
    assert avail["status"] == "True"  # 3 available >= 3 - 0
    # below minimum availability
    st3 = du.rollout_status(deploy(4, surge=1, unavailable=0), [rs("x", 4, available=2)],
                            None, NOW)
    avail = du.get_condition(st3, du.AVAILABLE)
    assert avail is not None
    assert (avail["status"], avail["reason"]) == ("False", "MinimumReplicasUnavailable")


def test_paused_conditions() -> None:
    d = deploy(3)
    d["spec"]["paused"] = True
    st = du.paused_conditions(d, NOW)
    assert st is not None
    cond = du.get_condition(st, du.PROGRESSING)
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "Unknown", "DeploymentPaused", "Deployment is paused")
    d["status"] = st
    assert du.paused_conditions(d, NOW) is None
    d["spec"]["paused"] = False
    st = du.paused_conditions(d, NOW)
    assert st is not None
    cond = du.get_condition(st, du.PROGRESSING)
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("DeploymentResumed", "Deployment is resumed")


def test_history_cleanup_keeps_the_newest_revisions() -> None:
    olds = [rs(f"r{i}", 0, revision=i) for i in range(1, 6)]
    olds.append(rs("busy", 2, revision=0))
    got = du.history_to_delete(deploy(limit=2), olds)
    # 6 live old sets, limit 2: the 4 lowest revisions are candidates; "busy" has pods
    assert [r["metadata"]["name"] for r in got] == ["r1", "r2", "r3"]
    assert du.history_to_delete(deploy(limit=None), olds) == []


def test_new_rs_body() -> None:
    d = deploy(4, surge=1)
    body = du.new_rs_body(d, [rs("a", 0, revision=4)], "abc123", 2,
                          {"kind": "Deployment", "name": "web"})
    assert body["metadata"]["name"] == "web-abc123"
    assert body["metadata"]["labels"] == {"app": "web", "pod-template-hash": "abc123"}
    assert body["spec"]["selector"] == {"matchLabels": {"app": "web",
                                                        "pod-template-hash": "abc123"}}
    assert body["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == "abc123"
    assert body["metadata"]["annotations"] == {
        "a": "b", du.REVISION: "5", du.DESIRED_REPLICAS: "4", du.MAX_REPLICAS: "5"}
    t1 = du.template_hash(d["spec"]["template"], None)
    assert t1 == du.template_hash(d["spec"]["template"], None)
    assert t1 != du.template_hash(d["spec"]["template"], 1)
    assert set(t1) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert du.equal_ignore_hash(body["spec"]["template"], d["spec"]["template"])


def test_template_hash_has_upstreams_shape() -> None:
    """ComputeHash is rand.SafeEncodeString(fmt.Sprint(uint32)): the decimal digits of a
    32-bit hash, each mapped into the alphabet, so 1 to 10 characters of 4-9, b, c, d, f
    (as nginx-66b6c48dd5); it was a 10-digit base-27 number whose top digits were always 0,
    so every hash ended in "bb"."""
    digit = dict(zip("0123456789", "456789bcdf", strict=True))
    hashes = [du.template_hash({"spec": {"containers": [{"name": "c", "image": f"i{n}"}]}},
                               None) for n in range(40)]
    for h in hashes:
        assert 1 <= len(h) <= 10, h
        assert set(h) <= set(digit.values()), h
        number = int("".join(next(d for d, c in digit.items() if c == ch) for ch in h))
        assert number < 2**32
    assert len({h[-2:] for h in hashes}) > 5  # no fixed tail


def _plan(d: dict[str, Any], new: dict[str, Any] | None, old: list[dict[str, Any]]
          ) -> list[tuple[str, int]]:
    return [(r["metadata"]["name"], n) for r, n in du.scale_plan(d, new, old)]


def test_scale_plan_one_active_or_the_newest_takes_all() -> None:
    assert _plan(deploy(5), rs("new", 3, created=10), [rs("old", 0)]) == [("new", 5)]
    assert _plan(deploy(5), None, [rs("a", 0, created=1), rs("b", 0, created=2)]) == [("b", 5)]
    assert _plan(deploy(5), None, []) == []


def test_scale_plan_saturated_new_sends_the_old_to_zero() -> None:
    new = rs("new", 5, created=10)
    new["metadata"]["annotations"][du.DESIRED_REPLICAS] = "5"
    assert _plan(deploy(5), new, [rs("old", 2), rs("older", 0)]) == [("old", 0)]


def test_scale_plan_proportional() -> None:
    # 10 desired (surge 3) mid-rollout, scaled to 20 (surge 5): 25 allowed, 13 in sets
    d = deploy(20)
    new = rs("new", 5, available=0, created=10)
    old = rs("old", 8, created=0)
    for r in (new, old):
        r["metadata"]["annotations"][du.MAX_REPLICAS] = "13"
    got = dict(_plan(d, new, [old]))
    # old: round(8 * 25 / 13) = 15, new: round(5 * 25 / 13) = 10: 25 in all
    assert got == {"old": 15, "new": 10}
    # down to 0: every active set to 0
    assert dict(_plan(deploy(0), new, [old])) == {"old": 0, "new": 0}
