"""A Job's ``podFailurePolicy`` (pkg/controller/job/pod_failure_policy.go), pure: the first
rule a failed pod matches decides. ``onExitCodes`` looks at the terminated containers (app
containers, then init containers; exit code 0 never matches) of the named container or any;
``onPodConditions`` at the pod's conditions by type and status (status defaults to True).
Actions: ``FailJob`` ends the Job (the message names the container or condition and the
rule), ``Ignore`` keeps the failure out of the count, ``Count`` counts it as usual;
``FailIndex`` needs backoffLimitPerIndex, which is not served, so such a rule matches
nothing, as upstream with that feature off."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

REASON_POD_FAILURE_POLICY = "PodFailurePolicy"  # batch.JobReasonPodFailurePolicy
FAIL_JOB, IGNORE, COUNT = "FailJob", "Ignore", "Count"


def match_pod_failure_policy(policy: Obj | None, pod: Obj
                             ) -> tuple[str | None, bool, str | None]:
    """matchPodFailurePolicy: (the Job's failure message for a FailJob match, whether the
    failure counts, the action matched)."""
    if not policy:
        return None, True, None
    meta = pod.get("metadata") or {}
    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            container = _match_exit_codes(pod, rule["onExitCodes"])
            if container is None:
                continue
            code = container["state"]["terminated"]["exitCode"]
            message = (f"Container {container.get('name')} for pod {where} failed with exit "
                       f"code {code} matching {action} rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            cond = _match_conditions(pod, rule["onPodConditions"])
            if cond is None:
                continue
            message = (f"Pod {where} has condition {cond.get('type')} matching {action} rule "
                       f"at index {index}")
        else:
            continue
        if action == IGNORE:
            return None, False, IGNORE
        if action == COUNT:
            return None, True, COUNT
        if action == FAIL_JOB:
            return message, True, FAIL_JOB
    return None, True, None


def _match_exit_codes(pod: Obj, req: Obj) -> Obj | None:
    status = pod.get("status") or {}
    for statuses in (status.get("containerStatuses"), status.get("initContainerStatuses")):
        for cs in statuses or []:
            term = (cs.get("state") or {}).get("terminated")
            if term is None:
                continue  # still terminating: no exit code yet
            if req.get("containerName") not in (None, cs.get("name")):
                continue
            code = term.get("exitCode", 0)
            if code != 0 and _operator_matches(code, req):
                return dict(cs)
    return None


def _operator_matches(code: int, req: Obj) -> bool:
    values = req.get("values") or []
    if req.get("operator") == "In":
        return code in values
    if req.get("operator") == "NotIn":
        return code not in values
    return False


def _match_conditions(pod: Obj, patterns: list[Obj]) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        for pattern in patterns:
            if cond.get("type") == pattern.get("type") and cond.get("status") == (
                    pattern.get("status") or "True"):
                return dict(cond)
    return None
