"""What every verb handler shares (kube-apiserver's handlers/rest.go and its RequestScope):
the request's options (dryRun, fieldValidation), its body in the media type it names, the
query parameters' checks, and the answer as an object, a Table or a list.

Objects are answered from the watch cache's served bytes, lists by joining them, so the
hot paths do no JSON encoding of stored objects at all.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import yaml
from aiohttp import web

from pykubelet.api.machinery import yamlalias
from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver import negotiation, protobuf, tables
from pykubelet.controlplane.apiserver.negotiation import JSON, PROTOBUF, wants_table
from pykubelet.controlplane.apiserver.requestinfo import parse_bool
from pykubelet.controlplane.apiserver.responses import add_warnings, json_response
from pykubelet.controlplane.registry import managedfields
from pykubelet.controlplane.registry.model import IGNORE, STRICT, WARN
from pykubelet.controlplane.registry.patch import APPLY_PATCH
from pykubelet.controlplane.registry.store import (
    Context,
    DeleteOptions,
    Entry,
    GenericStore,
    User,
)

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request body limit
INT_RE = re.compile(r"[+-]?[0-9]{1,25}")
# libyaml's parser when PyYAML has it: it refuses deep nesting at once, where the pure
# Python scanner spent 2 s on 100k "[" before recursing too deep
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def int64_param(text: str, name: str) -> int:
    """A query parameter Go's strconv.ParseInt(text, 10, 64) reads; anything else is 400."""
    if not INT_RE.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        shown = text if len(text) <= 64 else text[:64] + "..."
        raise errors.bad_request(f'{name}: invalid value "{shown}": must be a 64-bit integer')
    return int(text)


def check_list_options(q: Any, verb: str) -> None:
    """The resourceVersion a get, list or watch names is a uint64 (ParseResourceVersion:
    400), and resourceVersionMatch as ValidateListOptions allows it (422)."""
    rv = q.get("resourceVersion", "")
    if rv and (not rv.isascii() or not rv.isdigit() or int(rv) >= 2**64):
        shown = rv if len(rv) <= 64 else rv[:64] + "..."
        raise errors.bad_request(f'resourceVersion: Invalid value: "{shown}": '
                                 f'strconv.ParseUint: parsing "{shown}": invalid syntax')
    match = q.get("resourceVersionMatch", "")
    if not match or verb == "get":
        return
    problems = []
    if verb == "watch":
        if q.get("sendInitialEvents") is None:
            problems.append("resourceVersionMatch: Forbidden: resourceVersionMatch is "
                            "forbidden for watch unless sendInitialEvents is provided")
    else:
        if not rv:
            problems.append("resourceVersionMatch: Forbidden: resourceVersionMatch is "
                            "forbidden unless resourceVersion is provided")
        if q.get("continue"):
            problems.append("resourceVersionMatch: Forbidden: resourceVersionMatch is "
                            "forbidden when continue is provided")
    if match not in ("Exact", "NotOlderThan"):
        shown = match if len(match) <= 64 else match[:64] + "..."
        problems.append(f'resourceVersionMatch: Unsupported value: "{shown}": supported '
                        'values: "Exact", "NotOlderThan", ""')
    elif match == "Exact" and rv == "0":
        problems.append('resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is '
                        'forbidden for resourceVersion "0"')
    if problems:
        raise errors.invalid("ListOptions", "meta.k8s.io", "",
                             [errors.cause(p) for p in problems])


def request_context(request: web.Request, user: User) -> Context:
    """The request's options for the registry: who asks, dryRun, fieldValidation."""
    q = request.query
    dry_run = q.getall("dryRun", [])
    for d in dry_run:
        if d != "All":
            raise errors.bad_request(f'dryRun: Unsupported value: "{d}": supported values: '
                                     '"All"')
    fv = q.get("fieldValidation") or WARN
    if fv not in (STRICT, WARN, IGNORE):
        raise errors.bad_request(f'fieldValidation: Unsupported value: "{fv}": supported '
                                 'values: "Ignore", "Strict", "Warn"')
    manager = q.get("fieldManager", "")
    force = q.get("force")
    if request.method in ("POST", "PUT", "PATCH"):
        managedfields.check_options(request.method, manager, force,
                                    request.content_type == APPLY_PATCH)
    return Context(user=user, dry_run=bool(dry_run), field_validation=fv,
                   field_manager=managedfields.manager_or_user_agent(
                       manager, request.headers.get("User-Agent", "")),
                   force=_force(force))


def _force(value: str | None) -> bool:
    """The force parameter as Go's ParseBool reads it (the Python client sends True)."""
    try:
        return bool(parse_bool(value))
    except ValueError:
        raise errors.bad_request(f'force: invalid value "{str(value)[:64]}": must be a '
                                 "boolean") from None


async def read_body(request: web.Request, patch: bool = False,
                    ctx: Context | None = None) -> Any:
    """The request's body in the media type it names (415 for one the server does
    not read); with ``ctx``, a JSON object's duplicate fields follow fieldValidation
    (Strict: 400, Warn: a warning each, the last value kept)."""
    ctype = JSON if patch else negotiation.body_type(request.headers.get("Content-Type"))
    raw = await request.read()
    if len(raw) > MAX_BODY:
        raise errors.too_large(MAX_BODY)
    if not raw:
        raise errors.bad_request("the body of the request is empty")
    if ctype == JSON and ctx is not None and ctx.field_validation != IGNORE:
        twice = negotiation.duplicate_fields(raw)
        if twice and ctx.field_validation == STRICT:
            raise errors.bad_request("strict decoding error: " + ", ".join(
                f'duplicate field "{p[:256]}"' for p in twice[:20]))
        ctx.warnings.extend(f'duplicate field "{p[:256]}"' for p in twice[:20])
    if ctype == PROTOBUF:
        try:
            return protobuf.decode_object(raw)
        except protobuf.UnsupportedKind as exc:
            raise errors.StatusError(415, errors.UNSUPPORTED_MEDIA_TYPE, str(exc)) from None
        except (protobuf.ProtobufError, KeyError, ValueError) as exc:
            # upstream's transformDecodeError: a body that does not decode is a 400
            raise errors.bad_request(str(exc)[:256]) from None
    if ctype == negotiation.YAML:
        try:
            return yamlalias.load(raw, YAML_LOADER)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error converting YAML to JSON: {exc}") from None
        except RecursionError:  # 100k nested "[": PyYAML's composer recurses
            raise errors.bad_request("error converting YAML to JSON: yaml: exceeded max "
                                     "depth") from None
    if patch and request.content_type == APPLY_PATCH:
        return _apply_body(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        what = "error decoding patch" if patch else "couldn't get version/kind"
        raise errors.bad_request(f"{what}; json parse error: {exc}") from None


def _apply_body(raw: bytes) -> Any:
    """An apply patch: YAML, of which JSON (what kubectl sends) is a subset."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return yaml.load(raw, Loader=YAML_LOADER)
    except (yaml.YAMLError, RecursionError) as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from None


async def delete_options(request: web.Request) -> DeleteOptions:
    """DeleteOptions from the body, with the query's gracePeriodSeconds,
    orphanDependents, propagationPolicy and dryRun over it."""
    raw = await request.read()
    body: Any = None
    if raw:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"invalid DeleteOptions: {exc}") from None
    options = DeleteOptions.from_dict(body)
    q = request.query
    if "gracePeriodSeconds" in q:
        options.grace_period_seconds = int64_param(q["gracePeriodSeconds"],
                                                   "gracePeriodSeconds")
    if "orphanDependents" in q:
        options.orphan_dependents = q["orphanDependents"] == "true"
    if "propagationPolicy" in q:
        options.propagation_policy = q["propagationPolicy"]
        options.validate()
    if q.get("dryRun") == "All":
        options.dry_run = True
    return options


def object_response(request: web.Request, store: GenericStore,
                    obj: Entry | dict[str, Any], code: int = 200) -> web.Response:
    """One object, or its one-row Table when the client asks for Tables."""
    table_version = wants_table(request.headers.get("Accept", ""))
    if table_version is not None and isinstance(obj, Entry):
        include = request.query.get("includeObject", "Metadata")
        t = tables.table(store.info.kind, [obj], obj.rev, include,
                         printer=getattr(store.strategy, "printer", None))
        t["apiVersion"] = table_version
        return json_response(t, code)
    if isinstance(obj, Entry):
        return json_response(obj.data, code)
    return json_response(obj, code)


def written(request: web.Request, store: GenericStore, result: Entry | dict[str, Any],
            code: int, ctx: Context) -> web.Response:
    """A write's answer: the object as stored, with the request's warnings."""
    resp = object_response(request, store, result, code)
    add_warnings(resp, ctx.warnings)
    return resp


def list_bytes(store: GenericStore, items: list[bytes], rev: int, cont: str = "",
               remaining: int | None = None) -> bytes:
    """A list's JSON joined from its items' served bytes."""
    meta = b'"resourceVersion":"%d"' % rev
    if cont:
        meta += b',"continue":"%s"' % cont.encode()
    if remaining is not None:
        meta += b',"remainingItemCount":%d' % remaining
    return b'{"kind":"%s","apiVersion":"%s","metadata":{%s},"items":[%s]}' % (
        store.info.list_kind.encode(), store.info.group_version.encode(), meta,
        b",".join(items))
