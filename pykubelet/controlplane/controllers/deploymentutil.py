"""The Deployment controller's pure rules (pkg/controller/deployment/util and the math of
rolling.go, recreate.go, progress.go, sync.go): fenceposts of maxSurge/maxUnavailable
(intstr rounding: surge up, unavailable down), how far the new ReplicaSet may grow and
the old ones shrink, the pod-template-hash, revisions, status and conditions. Objects are
the API's dicts; nothing here does I/O, so each rule is a table test."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import math
from typing import Any

from pykubelet.api.machinery.timeutil import parse_time_or_none, rfc3339

Obj = dict[str, Any]

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# annotations a Deployment does not copy to its ReplicaSets (skipCopyAnnotation)
_SKIP_COPY = {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
              ROLLBACK_TO}

# condition types and reasons (pkg/controller/deployment/util)
AVAILABLE, PROGRESSING, REPLICA_FAILURE = "Available", "Progressing", "ReplicaFailure"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
RS_UPDATED = "ReplicaSetUpdated"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED, RESUMED = "DeploymentPaused", "DeploymentResumed"

_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's alphabet


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def replicas(obj: Obj) -> int:
    return int(spec(obj).get("replicas", 0))


# ---------------------------------------------------------------------------- fenceposts


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    pct = int(value.rstrip("%"))
    exact = pct * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def resolve_fenceposts(max_surge: int | str | None, max_unavailable: int | str | None,
                       desired: int) -> tuple[int, int]:
    """ResolveFenceposts: surge rounds up, unavailable down; never both zero."""
    surge = scaled_value(max_surge, desired, True)
    unavailable = scaled_value(max_unavailable, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _rolling(d: Obj) -> Obj | None:
    strategy = spec(d).get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    return strategy.get("rollingUpdate") or {}


def max_unavailable(d: Obj) -> int:
    ru = _rolling(d)
    if ru is None or replicas(d) == 0:
        return 0
    _, unavailable = resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"),
                                        replicas(d))
    return min(unavailable, replicas(d))


def max_surge(d: Obj) -> int:
    ru = _rolling(d)
    if ru is None:
        return 0
    surge, _ = resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), replicas(d))
    return surge


def total_spec(rss: list[Obj]) -> int:
    return sum(replicas(rs) for rs in rss)


def total_available(rss: list[Obj]) -> int:
    return sum(status(rs).get("availableReplicas", 0) for rs in rss)


def new_rs_new_replicas(d: Obj, all_rss: list[Obj], new_rs: Obj) -> int:
    """NewRSNewReplicas: as far as maxSurge lets the new ReplicaSet grow."""
    if _rolling(d) is None:
        return replicas(d)
    current = total_spec(all_rss)
    max_total = replicas(d) + max_surge(d)
    if current >= max_total:
        return replicas(new_rs)
    up = min(max_total - current, replicas(d) - replicas(new_rs))
    return replicas(new_rs) + up


def old_scale_down(d: Obj, all_rss: list[Obj], old_rss: list[Obj], new_rs: Obj
                   ) -> list[tuple[Obj, int]]:
    """reconcileOldReplicaSets: the old ReplicaSets' new sizes (unhealthy replicas first,
    then by age), keeping at least replicas - maxUnavailable available."""
    old_count = total_spec(old_rss)
    if old_count == 0:
        return []
    min_available = replicas(d) - max_unavailable(d)
    new_unavailable = replicas(new_rs) - status(new_rs).get("availableReplicas", 0)
    max_scaled_down = total_spec(all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return []
    sizes = {id(rs): replicas(rs) for rs in old_rss}
    ordered = sorted(old_rss, key=_created_key)
    cleaned = 0
    for rs in ordered:  # cleanupUnhealthyReplicas
        if cleaned >= max_scaled_down:
            break
        if sizes[id(rs)] == 0:
            continue
        unhealthy = sizes[id(rs)] - status(rs).get("availableReplicas", 0)
        if unhealthy <= 0:
            continue
        down = min(max_scaled_down - cleaned, unhealthy)
        sizes[id(rs)] -= down
        cleaned += down
    # scaleDownOldReplicaSetsForRollingUpdate
    available = total_available([*old_rss, new_rs])
    if available > min_available:
        to_scale = available - min_available
        done = 0
        for rs in ordered:
            if done >= to_scale:
                break
            if sizes[id(rs)] == 0:
                continue
            down = min(sizes[id(rs)], to_scale - done)
            sizes[id(rs)] -= down
            done += down
    return [(rs, sizes[id(rs)]) for rs in ordered if sizes[id(rs)] != replicas(rs)]


def _created_key(rs: Obj) -> tuple[str, str]:
    return (meta(rs).get("creationTimestamp", ""), meta(rs).get("name", ""))


# ---------------------------------------------------------------------------- templates


def template_hash(template: Obj, collision_count: int | None) -> str:
    """ComputeHash: a stable 32-bit hash of the template (and the collision count) as
    rand.SafeEncodeString(fmt.Sprint(hash)) writes it: each decimal digit's byte mapped
    into the alphabet, so 1 to 10 of 4-9, b, c, d, f, as a real cluster's look. (Upstream
    hashes Go's printed struct; ours hashes the canonical JSON, so the values differ from a
    real cluster's, the shape does not.)"""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    if collision_count is not None:
        text += f"/{collision_count}"
    value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(value))


def _without_hash(template: Obj) -> Obj:
    t = copy.deepcopy(template)
    labels = (t.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(POD_TEMPLATE_HASH, None)
        if not labels:
            t["metadata"].pop("labels")
    if "metadata" in t and not t["metadata"]:
        t.pop("metadata")
    return t


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    """EqualIgnoreHash: the same template but for the pod-template-hash label."""
    return _without_hash(a) == _without_hash(b)


def find_new_rs(d: Obj, rss: list[Obj]) -> Obj | None:
    """FindNewReplicaSet: the oldest ReplicaSet whose template is the Deployment's."""
    template = spec(d).get("template") or {}
    for rs in sorted(rss, key=_created_key):
        if equal_ignore_hash(spec(rs).get("template") or {}, template):
            return rs
    return None


def revision(rs: Obj) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def max_revision(rss: list[Obj]) -> int:
    return max((revision(rs) for rs in rss), default=0)


def copied_annotations(d: Obj) -> dict[str, str]:
    return {k: v for k, v in (meta(d).get("annotations") or {}).items() if k not in _SKIP_COPY}


def new_rs_body(d: Obj, old_rss: list[Obj], hash_: str, size: int, owner: Obj) -> Obj:
    """The new ReplicaSet of getNewReplicaSet: the template with pod-template-hash in its
    labels and selector, named <deployment>-<hash>, the next revision, owned by it."""
    template = copy.deepcopy(spec(d).get("template") or {})
    template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH] = hash_
    selector = copy.deepcopy(spec(d).get("selector") or {})
    selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = hash_
    annotations = copied_annotations(d)
    annotations.update({REVISION: str(max_revision(old_rss) + 1),
                        DESIRED_REPLICAS: str(replicas(d)),
                        MAX_REPLICAS: str(replicas(d) + max_surge(d))})
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{meta(d).get('name', '')}-{hash_}",
                         "namespace": meta(d).get("namespace", ""),
                         "labels": dict(template["metadata"]["labels"]),
                         "annotations": annotations, "ownerReferences": [owner]},
            "spec": {"replicas": size, "minReadySeconds": spec(d).get("minReadySeconds", 0),
                     "selector": selector, "template": template}}


# ---------------------------------------------------------------------------- status


def new_condition(type_: str, status_: str, reason: str, message: str, now: dt.datetime
                  ) -> Obj:
    t = rfc3339(now)
    return {"type": type_, "status": status_, "lastUpdateTime": t, "lastTransitionTime": t,
            "reason": reason, "message": message}


def get_condition(st: Obj, type_: str) -> Obj | None:
    return next((c for c in st.get("conditions") or [] if c.get("type") == type_), None)


def set_condition(st: Obj, cond: Obj) -> None:
    """SetDeploymentCondition: same status and reason is no change; the same status
    keeps its lastTransitionTime."""
    current = get_condition(st, cond["type"])
    if current is not None and current.get("status") == cond["status"] and current.get(
            "reason") == cond["reason"]:
        return
    if current is not None and current.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(st, cond["type"])
    st.setdefault("conditions", []).append(cond)


def remove_condition(st: Obj, type_: str) -> None:
    conds = [c for c in st.get("conditions") or [] if c.get("type") != type_]
    if conds:
        st["conditions"] = conds
    else:
        st.pop("conditions", None)


def calculate_status(all_rss: list[Obj], new_rs: Obj | None, d: Obj, now: dt.datetime
                     ) -> Obj:
    """calculateStatus: counts over the ReplicaSets and the Available condition."""
    available = total_available(all_rss)
    unavailable = max(0, total_spec(all_rss) - available)
    st: Obj = {"observedGeneration": meta(d).get("generation", 0),
               "replicas": sum(status(rs).get("replicas", 0) for rs in all_rss),
               "updatedReplicas": status(new_rs).get("replicas", 0) if new_rs else 0,
               "readyReplicas": sum(status(rs).get("readyReplicas", 0) for rs in all_rss),
               "availableReplicas": available, "unavailableReplicas": unavailable}
    if "collisionCount" in status(d):
        st["collisionCount"] = status(d)["collisionCount"]
    for c in status(d).get("conditions") or []:
        st.setdefault("conditions", []).append(copy.deepcopy(c))
    if available >= replicas(d) - max_unavailable(d):
        set_condition(st, new_condition(AVAILABLE, "True", MIN_AVAILABLE,
                                        "Deployment has minimum availability.", now))
    else:
        set_condition(st, new_condition(AVAILABLE, "False", MIN_UNAVAILABLE,
                                        "Deployment does not have minimum availability.",
                                        now))
    return {k: v for k, v in st.items() if v or k in ("observedGeneration",)}


def complete(d: Obj, st: Obj) -> bool:
    """DeploymentComplete."""
    want = replicas(d)
    return bool(st.get("updatedReplicas", 0) == want and st.get("replicas", 0) == want
            and st.get("availableReplicas", 0) == want
            and st.get("observedGeneration", 0) >= meta(d).get("generation", 0))


def progressing(d: Obj, st: Obj) -> bool:
    """DeploymentProgressing: more updated, ready or available pods, or fewer old ones."""
    old = status(d)
    old_old = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old = st.get("replicas", 0) - st.get("updatedReplicas", 0)
    return bool(st.get("updatedReplicas", 0) > old.get("updatedReplicas", 0)
                or new_old < old_old
            or st.get("readyReplicas", 0) > old.get("readyReplicas", 0)
            or st.get("availableReplicas", 0) > old.get("availableReplicas", 0))


def timed_out(d: Obj, st: Obj, now: dt.datetime) -> bool:
    """DeploymentTimedOut: no progress for progressDeadlineSeconds."""
    deadline = spec(d).get("progressDeadlineSeconds")
    cond = get_condition(st, PROGRESSING)
    if deadline is None or cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    since = parse_time_or_none(cond.get("lastUpdateTime"))
    return since is not None and since + dt.timedelta(seconds=deadline) < now


def rollout_status(d: Obj, all_rss: list[Obj], new_rs: Obj | None, now: dt.datetime) -> Obj:
    """syncRolloutStatus: the status with Progressing as progress.go decides it."""
    st = calculate_status(all_rss, new_rs, d, now)
    deadline = spec(d).get("progressDeadlineSeconds")
    if deadline is None:
        remove_condition(st, PROGRESSING)
    current = get_condition(status(d), PROGRESSING)
    done = (st.get("replicas", 0) == st.get("updatedReplicas", 0) and current is not None
            and current.get("reason") == NEW_RS_AVAILABLE)
    name = meta(d).get("name", "")
    what = f'ReplicaSet "{meta(new_rs).get("name", "")}"' if new_rs else f'Deployment "{name}"'
    if deadline is not None and not done:
        if complete(d, st):
            set_condition(st, new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE,
                                            f"{what} has successfully progressed.", now))
        elif progressing(d, st):
            cond = new_condition(PROGRESSING, "True", RS_UPDATED, f"{what} is progressing.",
                                 now)
            if current is not None:
                if current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(st, PROGRESSING)
            st.setdefault("conditions", []).append(cond)
        elif timed_out(d, st, now):
            set_condition(st, new_condition(PROGRESSING, "False", TIMED_OUT,
                                            f"{what} has timed out progressing.", now))
    failure = next((c for rs in ([new_rs] if new_rs else []) + [
        r for r in all_rss if r is not new_rs]
        for c in status(rs).get("conditions") or [] if c.get("type") == REPLICA_FAILURE),
        None)
    if failure is not None:
        set_condition(st, new_condition(REPLICA_FAILURE, failure.get("status", "True"),
                                        failure.get("reason", ""),
                                        failure.get("message", ""), now))
    else:
        remove_condition(st, REPLICA_FAILURE)
    return st


def paused_conditions(d: Obj, now: dt.datetime) -> Obj | None:
    """checkPausedConditions: the status with Progressing Unknown while paused (and
    DeploymentResumed after), or None when nothing changes."""
    if spec(d).get("progressDeadlineSeconds") is None:
        return None
    cond = get_condition(status(d), PROGRESSING)
    if cond is not None and cond.get("reason") == TIMED_OUT:
        return None
    paused_now = cond is not None and cond.get("reason") == PAUSED
    st = copy.deepcopy(status(d))
    if spec(d).get("paused") and not paused_now:
        set_condition(st, new_condition(PROGRESSING, "Unknown", PAUSED,
                                        "Deployment is paused", now))
    elif not spec(d).get("paused") and paused_now:
        set_condition(st, new_condition(PROGRESSING, "Unknown", RESUMED,
                                        "Deployment is resumed", now))
    else:
        return None
    return st


def history_to_delete(d: Obj, old_rss: list[Obj]) -> list[Obj]:
    """cleanupDeployment: of the live old ReplicaSets beyond revisionHistoryLimit (the
    lowest revisions), the ones scaled to zero and settled."""
    limit = spec(d).get("revisionHistoryLimit")
    if limit is None:
        return []
    alive = [rs for rs in old_rss if not meta(rs).get("deletionTimestamp")]
    diff = len(alive) - limit
    if diff <= 0:
        return []
    oldest = sorted(alive, key=lambda rs: (revision(rs), _created_key(rs)))[:diff]
    return [rs for rs in oldest if replicas(rs) == 0 and status(rs).get("replicas", 0) == 0
            and meta(rs).get("generation", 0) <= status(rs).get("observedGeneration", 0)]


# ---------------------------------------------------------------------------- scaling


def _round_half_away(x: float) -> int:
    """integer.RoundToInt32 (math.Round: halves away from zero)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _fraction(rs: Obj, d: Obj) -> int:
    """getReplicaSetFraction: the ReplicaSet's share of the new size, by the size the
    Deployment had when it was last scaled (max-replicas annotation)."""
    if replicas(d) == 0:
        return -replicas(rs)
    deployment_max = replicas(d) + max_surge(d)
    try:
        annotated = int((meta(rs).get("annotations") or {})[MAX_REPLICAS])
    except (KeyError, ValueError):
        annotated = status(d).get("replicas", 0)
    if annotated == 0:
        return 0
    return _round_half_away(replicas(rs) * deployment_max / annotated) - replicas(rs)


def _proportion(rs: Obj, d: Obj, to_add: int, added: int) -> int:
    """GetProportion."""
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def saturated(d: Obj, rs: Obj | None) -> bool:
    """IsSaturated: the new ReplicaSet has every replica, all available."""
    if rs is None:
        return False
    desired = (meta(rs).get("annotations") or {}).get(DESIRED_REPLICAS)
    return (replicas(rs) == replicas(d) and desired == str(replicas(d))
            and status(rs).get("availableReplicas", 0) == replicas(d))


def scale_plan(d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> list[tuple[Obj, int]]:
    """sync.go's scale(): the sizes for a scaling event or a paused Deployment. One
    active (or else the newest) ReplicaSet takes the whole count (returned even when it
    has it); a saturated new one
    sends the old ones to zero; otherwise (RollingUpdate) each active ReplicaSet changes
    by its proportion, the leftover going to the largest."""
    every = ([new_rs] if new_rs is not None else []) + old_rss
    active = [rs for rs in every if replicas(rs) > 0]
    if len(active) <= 1:
        target = active[0] if active else (max(every, key=_created_key) if every else None)
        # the same size is still returned: its replica annotations may need the new count
        return [] if target is None else [(target, replicas(d))]
    if saturated(d, new_rs):
        return [(rs, 0) for rs in old_rss if replicas(rs) > 0]
    if _rolling(d) is None:
        return []
    allowed = replicas(d) + max_surge(d) if replicas(d) > 0 else 0
    to_add = allowed - total_spec(active)
    if to_add == 0:
        return []
    if to_add > 0:  # ReplicaSetsBySizeNewer
        ordered = sorted(active, key=lambda rs: (replicas(rs), _created_key(rs)), reverse=True)
    else:  # ReplicaSetsBySizeOlder
        ordered = sorted(active, key=lambda rs: (-replicas(rs), _created_key(rs)))
    sizes: list[int] = []
    added = 0
    for rs in ordered:
        p = _proportion(rs, d, to_add, added)
        sizes.append(replicas(rs) + p)
        added += p
    sizes[0] = max(0, sizes[0] + to_add - added)
    return [(rs, n) for rs, n in zip(ordered, sizes, strict=True) if n != replicas(rs)]
