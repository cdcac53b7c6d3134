"""How every handler answers (kube-apiserver's endpoints/handlers/responsewriters): JSON
bodies as given (bytes already served by the watch cache pass through unencoded),
Status errors with their code, and the request's warnings as ``Warning`` headers."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.negotiation import JSON


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> web.Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    resp = web.Response(body=data, status=status, content_type=JSON)
    if headers:
        resp.headers.update(headers)
    return resp


def status_response(err: errors.StatusError) -> web.Response:
    return json_response(err.status(), err.code, err.headers)


def add_warnings(resp: web.StreamResponse, warnings: list[str]) -> None:
    """A ``299`` Warning header per warning, as upstream's warning recorder writes them."""
    for w in warnings:
        resp.headers.add("Warning", '299 - "' + w.replace('"', '\\"') + '"')
