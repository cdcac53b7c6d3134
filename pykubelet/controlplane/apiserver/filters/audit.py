"""The audit filter (kube-apiserver's WithAudit, endpoints/filters/audit.go): every
request the policy records is written at each stage it reaches and the policy does not
omit: RequestReceived before the handler runs, ResponseStarted when a long-running
request (a watch, logs, exec, attach, port-forward, proxy) sends its headers,
ResponseComplete when it ends, Panic instead when the handler failed; each line with the
same ``auditID``, which the response also carries in ``Audit-Id``. The user is who
authenticated (the policy is evaluated for them), ``impersonatedUser`` whom they acted
as. Request and response bodies only at the Request and RequestResponse levels."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.audit import events
from pykubelet.controlplane.apiserver.audit.backend import LogBackend
from pykubelet.controlplane.apiserver.audit.policy import (
    NONE,
    REQUEST,
    REQUEST_RESPONSE,
    Policy,
)
from pykubelet.controlplane.apiserver.handlers.rest import read_body
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_request_info
from pykubelet.controlplane.registry.store import User

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# the user who authenticated (before impersonation), None when no one did
Requestor = Callable[[web.Request], User | None]

AUDIT_KEY = web.RequestKey("pykube.audit", object)  # an _Audit, or the Audit-Id alone
# the user a request acted as (set by the app's filters)
ACTING_USER_KEY = web.RequestKey("pykube.user", User)
PANIC_KEY = web.RequestKey("pykube.panic", str)  # the handler failed (the error middleware)
LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})


class _Audit:
    """One audited request: its event and the stages still to write."""

    def __init__(self, event: dict[str, Any], level: str, omit: frozenset[str],
                 long_running: bool, user: User | None) -> None:
        self.event, self.level, self.omit = event, level, omit
        self.long_running, self.user = long_running, user
        self.started = False


class AuditFilter:
    """The middleware over the backend and policy."""

    def __init__(self, backend: LogBackend, policy: Policy, requestor: Requestor) -> None:
        self.backend, self.policy, self.requestor = backend, policy, requestor

    def _write(self, audit: _Audit, stage: str, event: dict[str, Any] | None = None) -> None:
        if stage in audit.omit:
            return
        try:
            self.backend.process(events.at_stage(event or audit.event, stage,
                                                 dt.datetime.now(dt.UTC)))
        except OSError as exc:  # as upstream's blocking log backend: logged, request goes on
            log.error("Error in audit plugin 'log' affecting 1 audit events: %s", exc)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        received = dt.datetime.now(dt.UTC)
        watch = request.query.get("watch", "").lower() in ("1", "true")
        info = parse_request_info(request.method, request.path, watch)
        user = self.requestor(request)
        level, omit = self.policy.level_and_stages(user, info)
        audit_id = str(uuid.uuid4())
        if level == NONE:
            request[AUDIT_KEY] = audit_id  # still answered with an Audit-Id
            return await handler(request)
        long_running = info.verb in LONG_RUNNING_VERBS or (
            info.subresource in LONG_RUNNING_SUBRESOURCES)
        audit = _Audit(events.new_event(
            audit_id, level, info, request.path_qs, user, [request.remote or ""],
            request.headers.get("User-Agent", ""), received), level, omit, long_running, user)
        request[AUDIT_KEY] = audit
        self._write(audit, "RequestReceived")
        try:
            resp = await handler(request)
        except asyncio.CancelledError:  # the client left (a watch closed): still complete
            self._acting_user(request, audit)
            if audit.started:
                audit.event["responseStatus"] = {"metadata": {}, "code": 200}
            self._write(audit, "ResponseComplete")
            raise
        self._acting_user(request, audit)
        if level in (REQUEST, REQUEST_RESPONSE):
            await self._request_object(request, audit, info)
        body = _json_body(resp)
        audit.event["responseStatus"] = events.response_status(resp.status, body)
        if level == REQUEST_RESPONSE and body is not None and resp.status < 300:
            audit.event["responseObject"] = body
        if request.get(PANIC_KEY):
            audit.event["responseStatus"] = {
                "metadata": {}, "status": "Failure", "reason": "InternalError",
                "message": f"APIServer panic'd: {request[PANIC_KEY]}", "code": 500}
            self._write(audit, "Panic")
        else:
            self._write(audit, "ResponseComplete")
        return resp

    def _acting_user(self, request: web.Request, audit: _Audit) -> None:
        acted = request.get(ACTING_USER_KEY)
        if acted is not None and audit.user is not None and acted != audit.user:
            audit.event["impersonatedUser"] = events.user_info(acted)

    async def _request_object(self, request: web.Request, audit: _Audit,
                              info: RequestInfo) -> None:
        """The request's body as the handlers read it (JSON, YAML, or protobuf as
        kubectl's generators send it; a patch as sent), when it had one that reads."""
        if request.method not in ("POST", "PUT", "PATCH") or not request.body_exists:
            return
        try:
            audit.event["requestObject"] = await read_body(request,
                                                           patch=request.method == "PATCH")
        except (errors.StatusError, web.HTTPException, ValueError):
            return  # too large or unreadable: no object, as upstream for what it cannot decode

    async def on_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        """Audit-Id on every answer; ResponseStarted for long-running requests."""
        audit = request.get(AUDIT_KEY)
        if audit is None:
            return
        if not isinstance(audit, _Audit):
            response.headers["Audit-Id"] = str(audit)
            return
        response.headers["Audit-Id"] = audit.event["auditID"]
        if audit.long_running and not audit.started:
            audit.started = True
            self._acting_user(request, audit)
            started = {**audit.event, "responseStatus": {"metadata": {}, "code": response.status}}
            self._write(audit, "ResponseStarted", started)


def _json_body(resp: web.StreamResponse) -> Any:
    """The JSON body of a plain response, else None (streams, tables are JSON too)."""
    if not isinstance(resp, web.Response) or not isinstance(resp.body, bytes | bytearray):
        return None
    if not (resp.content_type or "").endswith("json"):
        return None
    try:
        return orjson.loads(resp.body)
    except orjson.JSONDecodeError:
        return None
