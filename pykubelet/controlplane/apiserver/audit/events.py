"""audit.k8s.io/v1 Event objects as kube-apiserver writes them (apis/audit/v1/types.go,
audit/request.go): who (user, impersonatedUser, sourceIPs, userAgent), what (verb,
requestURI, objectRef), when (requestReceivedTimestamp, stageTimestamp), the stage, the
response's status (the Status's bounded fields for a Status body, else the code) and,
by level, the request and response objects."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pykubelet.api.machinery import timeutil
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.store import User

Obj = dict[str, Any]
API_VERSION = "audit.k8s.io/v1"


def timestamp(t: dt.datetime) -> str:
    """metav1.MicroTime's RFC 3339 with microseconds."""
    return timeutil.micro_time(t)


def user_info(user: User | None) -> Obj:
    if user is None:
        return {}
    out: Obj = {"username": user.name}
    if user.groups:
        out["groups"] = list(user.groups)
    return out


def object_ref(info: RequestInfo) -> Obj | None:
    """The ObjectReference of a resource request (empty fields left out)."""
    if not info.is_resource_request:
        return None
    ref: Obj = {"resource": info.resource}
    for key, value in (("namespace", info.namespace), ("name", info.name),
                       ("apiGroup", info.group), ("apiVersion", info.version),
                       ("subresource", info.subresource)):
        if value:
            ref[key] = value
    return ref


def new_event(audit_id: str, level: str, info: RequestInfo, uri: str, user: User | None,
              source_ips: list[str], user_agent: str, received: dt.datetime) -> Obj:
    """NewEventFromRequest: the event before any stage."""
    ev: Obj = {"kind": "Event", "apiVersion": API_VERSION, "level": level,
               "auditID": audit_id, "stage": "", "requestURI": uri, "verb": info.verb,
               "user": user_info(user), "sourceIPs": source_ips}
    if user_agent:
        ev["userAgent"] = user_agent
    ref = object_ref(info)
    if ref is not None:
        ev["objectRef"] = ref
    ev["requestReceivedTimestamp"] = timestamp(received)
    return ev


def response_status(code: int, body: Any) -> Obj:
    """The Status's bounded fields when the response is a Status, else its code."""
    status: Obj = {"metadata": {}}
    if isinstance(body, dict) and body.get("kind") == "Status":
        for key in ("status", "message", "reason", "details"):
            if body.get(key):
                status[key] = body[key]
    status["code"] = code
    return status


def at_stage(ev: Obj, stage: str, now: dt.datetime) -> Obj:
    """A copy of ``ev`` at ``stage`` (each stage is its own line)."""
    return {**ev, "stage": stage, "stageTimestamp": timestamp(now)}
