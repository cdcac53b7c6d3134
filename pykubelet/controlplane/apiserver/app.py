"""The API server's HTTP face (aiohttp): routes, authentication, authorization, content
negotiation and the verbs, over the registry.

Every error becomes a ``metav1.Status`` with upstream's code and reason in one middleware.
Objects are answered from the watch cache's served bytes, lists by joining them, so the
hot paths do no JSON encoding of stored objects at all.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml
from aiohttp import web

from pykubelet.api.machinery.field import go_quote
from pykubelet.api.machinery.validation import is_dns1123_subdomain
from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver import discovery, negotiation, protobuf, tables
from pykubelet.controlplane.apiserver.authz import authorize
from pykubelet.controlplane.apiserver.openapi import V2_CONTENT_TYPE, V2_PROTOBUF, OpenAPI
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_bool, parse_request_info
from pykubelet.controlplane.apiserver.watch import WatchStream
from pykubelet.controlplane.registry import podrefs
from pykubelet.controlplane.registry.admission import MIRROR_POD_ANNOTATION
from pykubelet.controlplane.registry.model import IGNORE, STRICT, WARN
from pykubelet.controlplane.registry.patch import APPLY_PATCH, PATCH_TYPES
from pykubelet.controlplane.registry.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pykubelet.controlplane.registry.store import (
    Attrs,
    Context,
    DeleteOptions,
    Entry,
    GenericStore,
    ListResult,
    Registry,
    User,
)
from pykubelet.controlplane.registry.strategy import Strategy

log = logging.getLogger(__name__)

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's request body limit
ADMIN = User("system:admin", ("system:masters", "system:authenticated"))
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/cacerts"})
IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"
IMPERSONATE_UID = "Impersonate-Uid"
IMPERSONATE_EXTRA = "impersonate-extra-"
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
INT_RE = re.compile(r"[+-]?[0-9]{1,25}")
# libyaml's parser when PyYAML has it: it refuses deep nesting at once, where the pure
# Python scanner spent 2 s on 100k "[" before recursing too deep
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SubresourceFn = Callable[["APIServer", web.Request, RequestInfo, GenericStore, Context],
                         Awaitable[web.StreamResponse]]


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> web.Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    resp = web.Response(body=data, status=status, content_type=JSON)
    if headers:
        resp.headers.update(headers)
    return resp


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


def status_response(err: errors.StatusError) -> web.Response:
    return json_response(err.status(), err.code, err.headers)


def wants_table(request: web.Request) -> str | None:
    """The Table apiVersion the client accepts first, if it asks for Tables."""
    for part in request.headers.get("Accept", "").split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            if "v=v1" in params:
                return "meta.k8s.io/v1"
            if "v=v1beta1" in params:
                return "meta.k8s.io/v1beta1"
    return None


@dataclass
class Identity:
    kind: str  # admin, node, join
    node: str = ""


@dataclass
class APIServer:
    registry: Registry
    identify: Callable[[str], tuple[str, str] | None]
    server_address: str = "127.0.0.1:6443"
    ca_pem: bytes = b""
    openapi: OpenAPI = field(default_factory=OpenAPI)
    bookmark_interval: float = 60.0
    subresources: dict[tuple[str, str], SubresourceFn] = field(default_factory=dict)
    # (node name, body, the request's source address) -> the node's credentials
    join_handler: Callable[[str, dict[str, Any], str], Awaitable[dict[str, Any]]] | None = None
    ready: Callable[[], bool] = lambda: True
    # upstream's [+]etcd readiness check: a quick read of the store, raising when it
    # cannot answer (an etcd member without quorum, a stopped SQLite writer)
    store_check: Callable[[], Awaitable[None]] | None = None
    # before a get or list without resourceVersion: wait until the watch cache holds the
    # store's current revision (upstream's consistent reads from the cache), so an API
    # server whose cache lags (a partition healed, another server wrote) answers as the
    # store would; None when this server's cache sees every write itself (SQLite)
    consistent_read: Callable[[], Awaitable[None]] | None = None
    node_proxy: Any = None  # pykubelet.controlplane.nodeproxy.NodeProxy
    decisions: Callable[[str, str], dict[str, Any] | None] | None = None
    # called for every request with its method, path with query, status code and seconds
    observers: list[Callable[[str, str, int, float], None]] = field(default_factory=list)
    metrics: Callable[[], bytes] | None = None  # the Prometheus text /metrics serves

    # ------------------------------------------------------------------ the app
    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._errors])
        r = app.router
        for path, fn in (("/version", self._version), ("/healthz", self._health),
                         ("/livez", self._health), ("/readyz", self._readyz),
                         ("/cacerts", self._cacerts)):
            r.add_get(path, fn)
            r.add_get(path + "/", fn)  # the Python client asks for /version/
        r.add_post("/bootstrap/node", self._bootstrap)
        r.add_get("/metrics", self._metrics)
        r.add_get("/openapi/v2", self._openapi_v2)
        r.add_get("/openapi/v3", self._openapi_v3_index)
        r.add_get("/openapi/v3/{path:.+}", self._openapi_v3)
        r.add_route("*", "/api", self._api_root)
        r.add_route("*", "/apis", self._apis_root)
        r.add_route("*", "/api/{tail:.*}", self._resource)
        r.add_route("*", "/apis/{tail:.*}", self._resource)
        return app

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        t0 = time.monotonic()
        code = 500
        try:
            resp = await handler(request)
            code = resp.status
            return resp
        except errors.StatusError as exc:
            code = exc.code
            return status_response(exc)
        except web.HTTPRequestEntityTooLarge:
            code = 413
            return status_response(errors.too_large(MAX_BODY))
        except web.HTTPException as exc:
            code = exc.status
            if exc.status == 404:
                return status_response(errors.path_not_found())
            if exc.status == 405:
                return status_response(errors.method_not_allowed_here())
            return status_response(errors.StatusError(exc.status, errors.BAD_REQUEST, exc.reason))
        except Exception as exc:
            log.exception("internal error serving %s %r", request.method, request.path)
            return status_response(errors.internal(str(exc)))
        finally:
            for obs in self.observers:
                obs(request.method, request.path_qs, code, time.monotonic() - t0)

    # ------------------------------------------------------------------ auth
    def authenticate(self, request: web.Request) -> Identity:
        """The caller of a bearer token (the scheme in any case, as upstream's bearer
        token authenticator), else 401."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise errors.unauthorized()
        who = self.identify(token.strip())
        if who is None:
            raise errors.unauthorized()
        return Identity(*who)

    def check_public(self, request: web.Request) -> None:
        """Public paths answer anyone, but a token that is sent must be good (upstream
        authenticates every request; only a request without credentials is anonymous)."""
        if "Authorization" in request.headers:
            self.authenticate(request)

    def user(self, request: web.Request) -> User:
        ident = self.authenticate(request)
        if ident.kind == "admin":
            user = ADMIN
        elif ident.kind == "node":
            user = User(f"system:node:{ident.node}", ("system:nodes", "system:authenticated"))
        else:
            user = User("system:bootstrap", ("system:bootstrappers", "system:authenticated"))
        return impersonate(request, user)

    # ------------------------------------------------------------------ plain endpoints
    async def _version(self, request: web.Request) -> web.Response:
        self.check_public(request)
        return json_response(discovery.version_info())

    async def _health(self, request: web.Request) -> web.Response:
        self.check_public(request)
        return web.Response(text="ok", content_type="text/plain")

    async def _readyz(self, request: web.Request) -> web.Response:
        """kube-apiserver's /readyz: every check, and 500 when one fails; the list is
        shown on failure or with ``?verbose`` (the reasons go to the log, not the body)."""
        self.check_public(request)
        checks = [("ping", True), ("etcd", await self._store_ok()),
                  ("informer-sync", self.ready())]
        ok = all(good for _, good in checks)
        if ok and "verbose" not in request.query:
            return web.Response(text="ok", content_type="text/plain")
        lines = [f"[+]{name} ok" if good else f"[-]{name} failed: reason withheld"
                 for name, good in checks]
        lines.append("readyz check passed" if ok else "readyz check failed")
        return web.Response(text="\n".join(lines) + "\n", status=200 if ok else 500,
                            content_type="text/plain")

    async def _store_ok(self) -> bool:
        if self.store_check is None:
            return True
        try:
            await self.store_check()
        except Exception as exc:  # unreachable, timed out, refused: not ready, whatever it is
            log.warning("readyz: store check failed: %s", exc or type(exc).__name__)
            return False
        return True

    async def _metrics(self, request: web.Request) -> web.Response:
        """Prometheus text for admins, as kube-apiserver's RBAC allows /metrics to
        system:masters (and monitoring): anyone else authenticated is refused."""
        user = self.user(request)
        if not user.is_admin:
            raise errors.StatusError(403, errors.FORBIDDEN,
                                  f'forbidden: User "{user.name}" cannot get path "/metrics"')
        if self.metrics is None:
            raise errors.path_not_found()
        # generated on a thread: a scrape never stalls the requests served on the loop
        body = await asyncio.to_thread(self.metrics)
        return web.Response(body=body, headers={"Content-Type": PROMETHEUS_CONTENT_TYPE})

    async def _cacerts(self, request: web.Request) -> web.Response:
        return web.Response(body=self.ca_pem, content_type="application/x-pem-file")

    async def _bootstrap(self, request: web.Request) -> web.Response:
        ident = self.authenticate(request)
        if ident.kind not in ("join", "admin") or self.join_handler is None:
            raise errors.StatusError(403, errors.FORBIDDEN, "only the join token may bootstrap")
        body = await self._body(request)
        node = body.get("nodeName") if isinstance(body, dict) else None
        if not isinstance(node, str) or not node:
            raise errors.bad_request("nodeName: Required value")
        invalid = is_dns1123_subdomain(node)
        if invalid:  # it becomes a Node's name, a user name and a certificate's
            raise errors.StatusError(422, errors.INVALID, f"nodeName: Invalid value: "
                                  f"{go_quote(node)}: {'; '.join(invalid)}")
        return json_response(await self.join_handler(node, body, request.remote or ""))

    async def _openapi_v2(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        return web.Response(body=V2_PROTOBUF, headers={"Content-Type": V2_CONTENT_TYPE})

    async def _openapi_v3_index(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        return json_response(self.openapi.index())

    async def _openapi_v3(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        doc = self.openapi.docs.get(request.match_info["path"])
        if doc is None:
            raise errors.path_not_found()
        return json_response(doc, headers={"Cache-Control": "public, immutable"})

    async def _api_root(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            return json_response(discovery.aggregated(core=True),
                                 headers={"Content-Type": discovery.AGGREGATED_V2})
        return json_response(discovery.api_versions(self.server_address))

    async def _apis_root(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            return json_response(discovery.aggregated(core=False),
                                 headers={"Content-Type": discovery.AGGREGATED_V2})
        return json_response(discovery.api_group_list())

    # ------------------------------------------------------------------ resources
    async def _resource(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        try:
            watch = bool(parse_bool(q.get("watch")))
        except ValueError:
            raise errors.bad_request(f"invalid watch parameter {q.get('watch')!r}") from None
        info = parse_request_info(request.method, request.path, watch)
        if request.path.rstrip("/") == "/api":
            return await self._api_root(request)
        if request.path.rstrip("/") == "/apis":
            return await self._apis_root(request)
        user = self.user(request)
        if not info.is_resource_request:
            return self._discovery(request, info)
        store = None
        if (info.group, info.version) in [(r.group, r.version) for r in _served()]:
            store = self.registry.by_resource(info.group, info.resource)
        if store is None or (info.namespace and not store.info.namespaced
                             and info.resource != "namespaces"):
            raise errors.path_not_found()
        namespace = info.namespace if store.info.namespaced else ""
        label_sel, field_sel = self._selectors(request, store)
        single = field_sel.exact("metadata.name") or ""
        if user.groups and "system:bootstrappers" in user.groups:
            raise errors.forbidden(user.name, info.verb, info.resource, info.group,
                                   info.namespace, info.name, info.subresource)
        authorize(user, info, single, self._referenced, field_sel.exact, self._pod_node)
        if info.subresource in ("", "status", "ephemeralcontainers"):  # logs, exec: streams
            negotiation.check_accept(request.headers.get("Accept"))
        if info.verb in ("get", "list", "watch"):
            check_list_options(request.query, info.verb)
        ctx = self._context(request, user)
        ctx.subresource = info.subresource
        if info.subresource:
            sub = store.info.subresource(info.subresource)
            fn = self.subresources.get((store.info.resource, info.subresource))
            wrapped = store.strategy.subresource_strategy(info.subresource)
            if sub is None or (fn is None and wrapped is None):
                raise errors.path_not_found()
            if info.verb not in sub.verbs:
                raise errors.method_not_allowed(info.verb, sub.kind)
            if fn is not None:
                return await fn(self, request, info, store, ctx)
            assert wrapped is not None
            return await self._store_subresource(request, info, store, ctx, namespace, wrapped)
        if (info.verb == "create") == bool(info.name) and info.verb in (
                "create", "update", "patch"):
            raise errors.method_not_allowed_here()  # no such route: POST names, PUT does not
        if info.verb not in store.info.verbs:
            raise errors.method_not_allowed(info.verb, store.info.kind)
        if info.verb in ("list", "watch") and store.info.namespaced and not info.namespace:
            ns_filter: str | None = None
        else:
            ns_filter = namespace if store.info.namespaced else None

        def predicate(a: Attrs) -> bool:
            return bool(label_sel.matches(a.labels) and field_sel.matches(a.fields))

        if (info.verb in ("get", "list") and self.consistent_read is not None
                and not request.query.get("resourceVersion")
                and not request.query.get("continue")):
            await self.consistent_read()
        if info.verb == "get":
            return self._object(request, store, store.get(namespace, info.name))
        if info.verb == "list":
            return self._list(request, store, ns_filter, predicate, field_sel)
        if info.verb == "watch":
            return await self._watch(request, store, ns_filter, predicate, info)
        if info.verb == "create":
            body = await self._body(request, ctx=ctx)
            result = await store.create(ctx, namespace, body)
            return self._written(request, store, result, 201, ctx)
        if info.verb == "update":
            body = await self._body(request, ctx=ctx)
            existed = store.lookup(namespace, info.name) is not None
            result = await store.update(ctx, namespace, info.name, body)
            return self._written(request, store, result, 200 if existed else 201, ctx)
        if info.verb == "patch":
            ctype = request.content_type
            if ctype == APPLY_PATCH or ctype not in PATCH_TYPES:
                raise errors.unsupported_media_type(ctype)
            body = await self._body(request, patch=True)
            result = await store.patch(ctx, namespace, info.name, ctype, body)
            return self._written(request, store, result, 200, ctx)
        if info.verb == "delete":
            options = await self._delete_options(request)
            ctx.dry_run = ctx.dry_run or options.dry_run
            obj, gone = await store.delete(ctx, namespace, info.name, options)
            if store.strategy.return_deleted_object or not gone:
                return self._written(request, store, obj, 200, ctx)
            meta = (obj.obj() if isinstance(obj, Entry) else obj).get("metadata") or {}
            return json_response(errors.success(store.info.resource, info.name,
                                                meta.get("uid", ""), store.info.group))
        if info.verb == "deletecollection":
            options = await self._delete_options(request)
            ctx.dry_run = ctx.dry_run or options.dry_run
            deleted = await store.delete_collection(ctx, ns_filter, predicate, options)
            items = [d.data if isinstance(d, Entry) else orjson.dumps(d) for d in deleted]
            return json_response(self._list_bytes(store, items, store.revision))
        raise errors.method_not_allowed(info.verb, store.info.kind)

    def _discovery(self, request: web.Request, info: RequestInfo) -> web.Response:
        if info.version:
            body = discovery.resource_list(info.group, info.version)
        else:
            group = request.path.strip("/").split("/")[1] if info.api_prefix == "apis" else ""
            body = discovery.api_group(group)
        if body is None:
            raise errors.path_not_found()
        return json_response(body)

    def _pod_node(self, namespace: str, name: str) -> str | None:
        """The node a pod is bound to (None for no such pod)."""
        pods = self.registry.by_resource("", "pods")
        entry = pods.lookup(namespace, name) if pods is not None else None
        return entry.attrs.fields.get("spec.nodeName") if entry is not None else None

    def _referenced(self, node: str, resource: str, namespace: str, name: str) -> bool:
        """Does a pod bound to ``node`` use this configmap or secret? Mirror pods are no
        relationship (the node made them itself), as in the Node authorizer's graph."""
        pods = self.registry.by_resource("", "pods")
        assert pods is not None
        for entry in pods.select(namespace, None, ("spec.nodeName", node)):
            pod = entry.obj()
            if MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
                continue
            if name in podrefs.references(pod, resource):
                return True
        return False

    def _selectors(self, request: web.Request, store: GenericStore) -> tuple[Any, Any]:
        try:
            label_sel = parse_label_selector(request.query.get("labelSelector"))
            field_sel = parse_field_selector(request.query.get("fieldSelector"))
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from None
        allowed = set(store.strategy.field_names())
        for term in field_sel.terms:
            if term.field not in allowed:
                raise errors.bad_request(f"field label not supported: {term.field}")
        return label_sel, field_sel

    def _context(self, request: web.Request, user: User) -> Context:
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
        return Context(user=user, dry_run=bool(dry_run), field_validation=fv)

    async def _body(self, request: web.Request, patch: bool = False,
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
                return yaml.load(raw, Loader=YAML_LOADER)
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"error converting YAML to JSON: {exc}") from None
            except RecursionError:  # 100k nested "[": PyYAML's composer recurses
                raise errors.bad_request("error converting YAML to JSON: yaml: exceeded max "
                                         "depth") from None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            what = "error decoding patch" if patch else "couldn't get version/kind"
            raise errors.bad_request(f"{what}; json parse error: {exc}") from None

    async def _delete_options(self, request: web.Request) -> DeleteOptions:
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
        if "propagationPolicy" in q:
            options.propagation_policy = q["propagationPolicy"]
            options.validate()
        if q.get("dryRun") == "All":
            options.dry_run = True
        return options

    # ------------------------------------------------------------------ responses
    def _warnings(self, resp: web.StreamResponse, ctx: Context) -> None:
        for w in ctx.warnings:
            resp.headers.add("Warning", '299 - "' + w.replace('"', '\\"') + '"')

    def _written(self, request: web.Request, store: GenericStore, result: Entry | dict[str, Any],
                 code: int, ctx: Context) -> web.Response:
        resp = self._object(request, store, result, code)
        self._warnings(resp, ctx)
        return resp

    def _object(self, request: web.Request, store: GenericStore,
                obj: Entry | dict[str, Any], code: int = 200) -> web.Response:
        table_version = wants_table(request)
        if table_version is not None and isinstance(obj, Entry):
            include = request.query.get("includeObject", "Metadata")
            t = tables.table(store.info.kind, [obj], obj.rev, include)
            t["apiVersion"] = table_version
            return json_response(t, code)
        if isinstance(obj, Entry):
            return json_response(obj.data, code)
        return json_response(obj, code)

    def _list_bytes(self, store: GenericStore, items: list[bytes], rev: int,
                    cont: str = "", remaining: int | None = None) -> bytes:
        meta = b'"resourceVersion":"%d"' % rev
        if cont:
            meta += b',"continue":"%s"' % cont.encode()
        if remaining is not None:
            meta += b',"remainingItemCount":%d' % remaining
        return b'{"kind":"%s","apiVersion":"%s","metadata":{%s},"items":[%s]}' % (
            store.info.list_kind.encode(), store.info.group_version.encode(), meta,
            b",".join(items))

    def _list(self, request: web.Request, store: GenericStore, namespace: str | None,
              predicate: Callable[[Attrs], bool], field_sel: Any) -> web.Response:
        q = request.query
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise errors.bad_request(f"invalid limit {q.get('limit')!r}") from None
        rv = q.get("resourceVersion", "")
        if rv and rv != "0":
            try:
                want = int(rv)
            except ValueError:
                raise errors.bad_request(f"invalid resource version {rv!r}") from None
            if want > store.revision:
                raise errors.timeout(f"Too large resource version: {want}, current: "
                                     f"{store.revision}")
        index = None
        for fld in store.strategy.indexed_fields:
            value = field_sel.exact(fld)
            if value is not None:
                index = (fld, value)
        result: ListResult = store.list_objects(namespace, predicate, index, limit,
                                                q.get("continue", ""))
        table_version = wants_table(request)
        if table_version is not None:
            t = tables.table(store.info.kind, result.entries, result.revision,
                             q.get("includeObject", "Metadata"),
                             continue_token=result.continue_token, remaining=result.remaining)
            t["apiVersion"] = table_version
            return json_response(t)
        return json_response(self._list_bytes(store, [e.data for e in result.entries],
                                               result.revision, result.continue_token,
                                               result.remaining))

    async def _watch(self, request: web.Request, store: GenericStore, namespace: str | None,
                     predicate: Callable[[Attrs], bool], info: RequestInfo
                     ) -> web.StreamResponse:
        q = request.query
        if info.name:  # the legacy /watch/.../name form
            name = info.name
            inner = predicate
            predicate = lambda a: a.name == name and inner(a)  # noqa: E731
        timeout = (float(int64_param(q["timeoutSeconds"], "timeoutSeconds"))
                   if q.get("timeoutSeconds") else None)
        try:
            bookmarks = bool(parse_bool(q.get("allowWatchBookmarks")))
        except ValueError:
            raise errors.bad_request("invalid allowWatchBookmarks") from None
        table_version = wants_table(request)
        table = (table_version, q.get("includeObject", "Metadata")) if table_version else None
        stream = WatchStream(store, namespace, predicate, q.get("resourceVersion", ""), timeout,
                             bookmarks, self.bookmark_interval, table)
        return await stream.serve(request)

    async def _store_subresource(self, request: web.Request, info: RequestInfo,
                                 store: GenericStore, ctx: Context, namespace: str,
                                 strategy: Strategy) -> web.StreamResponse:
        """A subresource that reads the whole object and writes it through a wrapped
        strategy (pods/status, pods/ephemeralcontainers, nodes/status, ...)."""
        if info.verb == "get":
            return self._object(request, store, store.get(namespace, info.name))
        if info.verb == "update":
            body = await self._body(request, ctx=ctx)
            result = await store.update(ctx, namespace, info.name, body, strategy)
            return self._written(request, store, result, 200, ctx)
        ctype = request.content_type
        if ctype == APPLY_PATCH or ctype not in PATCH_TYPES:
            raise errors.unsupported_media_type(ctype)
        body = await self._body(request, patch=True)
        result = await store.patch(ctx, namespace, info.name, ctype, body, strategy)
        return self._written(request, store, result, 200, ctx)


def impersonate(request: web.Request, user: User) -> User:
    """The user ``user`` acts as (upstream's WithImpersonation filter): the
    ``Impersonate-User`` with the ``Impersonate-Group``s (and ``system:authenticated``),
    for the admin only; anyone else asking is refused (403) before anything is done."""
    h = request.headers
    name = h.get(IMPERSONATE_USER)
    groups = h.getall(IMPERSONATE_GROUP, [])
    uid = h.get(IMPERSONATE_UID)
    extra = [k for k in h if k.lower().startswith(IMPERSONATE_EXTRA)]
    if name is None and not groups and uid is None and not extra:
        return user
    if name is None:
        asked = [*(f"group {g!r}" for g in groups), *(["uid"] if uid is not None else []),
                 *(f"extra {k[len(IMPERSONATE_EXTRA):]!r}" for k in extra)]
        raise errors.internal(f"requested [{', '.join(asked)}] without impersonating a user")
    if not user.is_admin:
        raise errors.forbidden(user.name, "impersonate", "users", "", "", name)
    if name != "system:anonymous" and "system:authenticated" not in groups:
        groups.append("system:authenticated")
    return User(name, tuple(groups))


def _served() -> list[Any]:
    from pykubelet.controlplane.registry.resources import ALL

    return list(ALL)
