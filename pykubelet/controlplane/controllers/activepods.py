"""What the workload controllers say of a pod (pkg/controller/controller_utils.go and
podutil): active or not, ready, available after minReadySeconds, its controller, and
upstream's ranking of the pods to delete first when scaling down (ActivePodsWithRanks:
the least valuable pods, unscheduled, pending, unready, cheap to delete, doubled up on a
node, ready for a short time, restarting, young, go first)."""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pykubelet.api.machinery.timeutil import parse_time_or_none

Obj = dict[str, Any]

POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def is_active(pod: Obj) -> bool:
    """controller.IsPodActive: not Succeeded/Failed, not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def ready_condition(pod: Obj) -> Obj | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c  # type: ignore[no-any-return]
    return None


def is_ready(pod: Obj) -> bool:
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def ready_since(pod: Obj) -> dt.datetime | None:
    cond = ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time_or_none(cond.get("lastTransitionTime"))


def is_available(pod: Obj, min_ready_seconds: int, now: dt.datetime) -> bool:
    """podutil.IsPodAvailable: ready, and for at least minReadySeconds."""
    if not is_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    since = ready_since(pod)
    return since is not None and since + dt.timedelta(seconds=min_ready_seconds) < now


def _deletion_cost(pod: Obj) -> int:
    text = (meta(pod).get("annotations") or {}).get(POD_DELETION_COST)
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 0


def _max_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((s.get("restartCount", 0) for s in statuses), default=0)


def _log_rank_diff(t1: dt.datetime, t2: dt.datetime, now: dt.datetime) -> int:
    """logarithmicRankDiff: compare ages on a log2 scale (of nanoseconds), as upstream."""
    def rank(t: dt.datetime) -> int:
        d = (now - t).total_seconds() * 1e9
        return int(math.log2(d)) if d > 0 else -1
    return rank(t1) - rank(t2)


def _after_or_zero(t1: dt.datetime | None, t2: dt.datetime | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _time_less(t1: dt.datetime | None, t2: dt.datetime | None, uid1: str, uid2: str,
               now: dt.datetime | None) -> bool:
    """The LogarithmicScaleDown comparison of two (different) times: newer first."""
    if now is None or t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _log_rank_diff(t1, t2, now)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


def less(a: Obj, b: Obj, rank_a: int, rank_b: int, now: dt.datetime | None) -> bool:
    """ActivePodsWithRanks.Less: is ``a`` to be deleted before ``b``?"""
    node_a, node_b = (a.get("spec") or {}).get("nodeName", ""), (
        b.get("spec") or {}).get("nodeName", "")
    if bool(node_a) != bool(node_b):
        return not node_a
    pa = _PHASE_ORDINAL.get((a.get("status") or {}).get("phase", ""), 0)
    pb = _PHASE_ORDINAL.get((b.get("status") or {}).get("phase", ""), 0)
    if pa != pb:
        return pa < pb
    if is_ready(a) != is_ready(b):
        return not is_ready(a)
    ca, cb = _deletion_cost(a), _deletion_cost(b)
    if ca != cb:
        return ca < cb
    if rank_a != rank_b:
        return rank_a > rank_b
    if is_ready(a) and is_ready(b):
        ta, tb = ready_since(a), ready_since(b)
        if ta != tb:
            return _time_less(ta, tb, meta(a).get("uid", ""), meta(b).get("uid", ""), now)
    ra, rb = _max_restarts(a), _max_restarts(b)
    if ra != rb:
        return ra > rb
    ta = parse_time_or_none(meta(a).get("creationTimestamp"))
    tb = parse_time_or_none(meta(b).get("creationTimestamp"))
    if ta != tb:
        return _time_less(ta, tb, meta(a).get("uid", ""), meta(b).get("uid", ""), now)
    return False


def ranks_by_related_pods_on_node(pods: Sequence[Obj], related: Sequence[Obj]
                                  ) -> list[int]:
    """getPodsRankedByRelatedPodsOnSameNode: each pod's rank is how many active related
    pods share its node."""
    on_node: dict[str, int] = {}
    for p in related:
        if is_active(p):
            node = (p.get("spec") or {}).get("nodeName", "")
            on_node[node] = on_node.get(node, 0) + 1
    return [on_node.get((p.get("spec") or {}).get("nodeName", ""), 0) for p in pods]


def pods_to_delete(pods: Sequence[Obj], related: Sequence[Obj], diff: int,
                   now: dt.datetime | None) -> list[Obj]:
    """getPodsToDelete: the ``diff`` least valuable pods (all of them when diff covers them)."""
    if diff >= len(pods):
        return list(pods)
    ranks = ranks_by_related_pods_on_node(pods, related)
    ranked = list(zip(pods, ranks, strict=True))

    def cmp(x: tuple[Obj, int], y: tuple[Obj, int]) -> int:
        if less(x[0], y[0], x[1], y[1], now):
            return -1
        if less(y[0], x[0], y[1], x[1], now):
            return 1
        return 0

    ranked.sort(key=functools.cmp_to_key(cmp))
    return [p for p, _ in ranked[:diff]]


SPEC_SELECTOR = "spec-selector"


def spec_selector(entry: Any) -> Any:
    """An object's ``spec.selector`` (a Service's label map, a workload's LabelSelector; {}
    when it has none) read from its cache entry once and kept on it, as upstream's listers
    hold decoded objects and its ServiceSelectorCache each Service's selector: a pod's event
    is matched against every Service or owner of its namespace."""
    def read() -> Any:
        return (entry.obj().get("spec") or {}).get("selector") or {}

    return entry.derived(SPEC_SELECTOR, read)


def labels_match(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (as JSON) matching ``labels``; None or empty matches nothing
    here (a workload's selector is never empty once validated)."""
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator"), e.get("values") or []
        have = key in labels
        if (op == "In" and not (have and labels[key] in values)) or (
                op == "NotIn" and have and labels[key] in values) or (
                op == "Exists" and not have) or (op == "DoesNotExist" and have):
            return False
    return True
