"""The API server's HTTP face (aiohttp): the routes, the error middleware, the
non-resource endpoints (version, health, readiness, metrics, OpenAPI, discovery, the node
join) and, for resource requests, the walk kube-apiserver's handler chain takes: request
info, the filters (:mod:`.filters`: authentication, impersonation, authorization),
content negotiation, then one verb handler (:mod:`.handlers`) or a subresource.

Every error becomes a ``metav1.Status`` with upstream's code and reason in one middleware.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from pykubelet.api.machinery.field import go_quote
from pykubelet.api.machinery.validation import is_dns1123_subdomain
from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver import discovery, negotiation
from pykubelet.controlplane.apiserver.filters.audit import (
    ACTING_USER_KEY,
    PANIC_KEY,
    AuditFilter,
)
from pykubelet.controlplane.apiserver.filters.authentication import (
    Identify,
    Identity,
    TokenUsers,
    authenticate,
    check_public,
    identity_user,
    user_of,
)
from pykubelet.controlplane.apiserver.filters.authorization import authorize, decide
from pykubelet.controlplane.apiserver.filters.rbac import RBACAuthorizer
from pykubelet.controlplane.apiserver.filters.timeout import (
    DEFAULT_REQUEST_TIMEOUT,
    is_long_running,
    request_deadline,
    within_deadline,
)
from pykubelet.controlplane.apiserver.filters.x509 import X509Authenticator
from pykubelet.controlplane.apiserver.handlers import reviews
from pykubelet.controlplane.apiserver.handlers.create import create_resource
from pykubelet.controlplane.apiserver.handlers.delete import delete_collection, delete_resource
from pykubelet.controlplane.apiserver.handlers.get import get_resource, list_resource
from pykubelet.controlplane.apiserver.handlers.patch import patch_resource
from pykubelet.controlplane.apiserver.handlers.rest import (
    MAX_BODY,
    check_list_options,
    read_body,
    request_context,
)
from pykubelet.controlplane.apiserver.handlers.update import update_resource
from pykubelet.controlplane.apiserver.handlers.watch import serve_watch
from pykubelet.controlplane.apiserver.openapi import V2_CONTENT_TYPE, V2_PROTOBUF, OpenAPI
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_bool, parse_request_info
from pykubelet.controlplane.apiserver.responses import json_response, status_response
from pykubelet.controlplane.metricsserver import objects as metrics_objects
from pykubelet.controlplane.registry import podrefs
from pykubelet.controlplane.registry.admission import MIRROR_POD_ANNOTATION
from pykubelet.controlplane.registry.resources import ALL
from pykubelet.controlplane.registry.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pykubelet.controlplane.registry.store import Attrs, Context, GenericStore, Registry, User
from pykubelet.controlplane.registry.strategy import Strategy

log = logging.getLogger(__name__)

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# the group/versions served, for telling a resource request from a path nothing serves
SERVED_GROUP_VERSIONS = frozenset((r.group, r.version) for r in ALL)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SubresourceFn = Callable[["APIServer", web.Request, RequestInfo, GenericStore, Context],
                         Awaitable[web.StreamResponse]]

__all__ = ["APIServer", "Identity", "SubresourceFn"]


@dataclass
class APIServer:
    registry: Registry
    identify: Identify
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
    # users of static bearer tokens (--token-auth-file), beside the admin and node tokens
    token_users: TokenUsers = lambda _token: None
    rbac: RBACAuthorizer | None = None  # made over the registry when not given
    # the CRDs and custom resources served (apiextensions.serving.CustomResources)
    custom: Any = None
    # metrics.k8s.io (pykubelet.controlplane.metricsserver.api.MetricsAPI), when served
    metrics_api: Any = None
    # users of client certificates the cluster CA signed (None: certificates are no one)
    client_certs: X509Authenticator | None = None
    audit: AuditFilter | None = None  # the audit log (None: off, kube-apiserver's default)
    # kube-apiserver's --request-timeout: the most a request that is not long-running may
    # take before its 504 (filters.timeout)
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT

    def __post_init__(self) -> None:
        if self.rbac is None:
            self.rbac = RBACAuthorizer(self.registry)

    # ------------------------------------------------------------------ the app
    def app(self) -> web.Application:
        middlewares = [self._errors]
        if self.audit is not None:  # outermost: it sees the answer the errors became
            middlewares.insert(0, self.audit.middleware)
        app = web.Application(client_max_size=MAX_BODY, middlewares=middlewares)
        if self.audit is not None:
            app.on_response_prepare.append(self.audit.on_prepare)
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
            request[PANIC_KEY] = str(exc) or type(exc).__name__  # the audit's Panic stage
            return status_response(errors.internal(str(exc)))
        finally:
            for obs in self.observers:
                obs(request.method, request.path_qs, code, time.monotonic() - t0)

    # ------------------------------------------------------------------ the filters
    def authenticate(self, request: web.Request) -> Identity:
        return authenticate(self.identify, request, self.token_users, self.client_certs)

    def check_public(self, request: web.Request) -> None:
        check_public(self.identify, request, self.token_users)

    def user(self, request: web.Request) -> User:
        user = user_of(self.identify, request, self.token_users, self.client_certs,
                       self.decide)
        if self.audit is not None:
            request[ACTING_USER_KEY] = user
        return user

    def requestor(self, request: web.Request) -> User | None:
        """Who authenticated (before impersonation), None for no one: the audit's user."""
        try:
            return identity_user(self.authenticate(request))
        except errors.StatusError:
            return None

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
        body = await read_body(request)
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
            return json_response(discovery.aggregated(core=True, extra=self._extra()),
                                 headers={"Content-Type": discovery.AGGREGATED_V2})
        return json_response(discovery.api_versions(self.server_address))

    async def _apis_root(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            body = discovery.aggregated(core=False, extra=self._extra())
            if self.metrics_api is not None:
                body["items"].append(metrics_objects.aggregated_group())
            return json_response(body, headers={"Content-Type": discovery.AGGREGATED_V2})
        groups = discovery.api_group_list(self._extra())
        if self.metrics_api is not None:
            groups["groups"].append(metrics_objects.api_group_entry())
        return json_response(groups)

    def _extra(self) -> list[Any]:
        """The resources served besides the built-in ones (CRDs, custom resources)."""
        return self.custom.resources() if self.custom is not None else []

    # ------------------------------------------------------------------ resources
    async def _resource(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        try:
            watch = bool(parse_bool(q.get("watch")))
        except ValueError:
            raise errors.bad_request(f"invalid watch parameter {q.get('watch')!r}") from None
        info = parse_request_info(request.method, request.path, watch)
        if not info.is_resource_request or is_long_running(info):
            return await self._serve_resource(request, info)
        seconds = request_deadline(q, self.request_timeout)
        return await within_deadline(self._serve_resource(request, info), seconds, info.verb)

    async def _serve_resource(self, request: web.Request, info: RequestInfo
                              ) -> web.StreamResponse:
        if request.path.rstrip("/") == "/api":
            return await self._api_root(request)
        if request.path.rstrip("/") == "/apis":
            return await self._apis_root(request)
        user = self.user(request)
        if not info.is_resource_request:
            return self._discovery(request, info)
        if info.group == metrics_objects.GROUP and self.metrics_api is not None:
            return await self._metrics_resource(request, info, user)
        if (info.group, info.resource) in reviews.REVIEWS and info.version == "v1":
            return await self._review(request, info, user)
        store = None
        builtin = (info.group, info.version) in SERVED_GROUP_VERSIONS
        if builtin:
            store = self.registry.by_resource(info.group, info.resource)
        elif self.custom is not None:
            store = self.custom.store(info.group, info.version, info.resource)
        if store is None or (info.namespace and not store.info.namespaced
                             and info.resource != "namespaces"):
            raise errors.path_not_found()
        namespace = info.namespace if store.info.namespaced else ""
        label_sel, field_sel = self._selectors(request, store)
        single = field_sel.exact("metadata.name") or ""
        if user.groups and "system:bootstrappers" in user.groups:
            raise errors.forbidden(user.name, info.verb, info.resource, info.group,
                                   info.namespace, info.name, info.subresource)
        assert self.rbac is not None
        authorize(user, info, single, self._referenced, field_sel.exact, self._pod_node,
                  self.rbac.authorize)
        if info.subresource in ("", "status", "ephemeralcontainers"):  # logs, exec: streams
            negotiation.check_accept(request.headers.get("Accept"))
        if info.verb in ("get", "list", "watch"):
            check_list_options(request.query, info.verb)
        ctx = request_context(request, user)
        ctx.subresource = info.subresource
        if info.subresource:
            sub = store.info.subresource(info.subresource)
            fn = self.subresources.get((store.info.resource, info.subresource)) if builtin else (
                self.custom.subresources.get(info.subresource))
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
            return get_resource(request, store, namespace, info.name)
        if info.verb == "list":
            return list_resource(request, store, ns_filter, predicate, field_sel)
        if info.verb == "watch":
            return await serve_watch(request, store, ns_filter, predicate, info,
                                     self.bookmark_interval)
        if info.verb == "create":
            return await create_resource(request, store, ctx, namespace)
        if info.verb == "update":
            return await update_resource(request, store, ctx, namespace, info.name)
        if info.verb == "patch":
            return await patch_resource(request, store, ctx, namespace, info.name)
        if info.verb == "delete":
            return await delete_resource(request, store, ctx, namespace, info.name)
        if info.verb == "deletecollection":
            return await delete_collection(request, store, ctx, ns_filter, predicate)
        raise errors.method_not_allowed(info.verb, store.info.kind)

    def decide(self, user: User, info: RequestInfo) -> tuple[bool, str]:
        """The authorizers' decision on a request that is not being made (reviews)."""
        assert self.rbac is not None
        return decide(user, info, "", self._referenced, pod_node=self._pod_node,
                      rbac=self.rbac.authorize)

    async def _review(self, request: web.Request, info: RequestInfo, user: User
                      ) -> web.Response:
        """The access reviews: POST only, the caller allowed to create them."""
        kind = reviews.REVIEWS[(info.group, info.resource)]
        if info.verb != "create" or info.name or info.subresource or info.namespace:
            raise errors.method_not_allowed(info.verb, kind)
        assert self.rbac is not None
        authorize(user, info, "", self._referenced, pod_node=self._pod_node,
                  rbac=self.rbac.authorize)
        body = await read_body(request)
        if not isinstance(body, dict):
            raise errors.bad_request(f"expected a {kind} object")
        if info.resource == "selfsubjectaccessreviews":
            return reviews.self_subject_access_review(user, body, self.decide)
        if info.resource == "subjectaccessreviews":
            return reviews.subject_access_review(body, self.decide)
        if info.resource == "selfsubjectrulesreviews":
            return reviews.self_subject_rules_review(user, body, self.rbac.resolver)
        return reviews.self_subject_review(user, body)

    async def _metrics_resource(self, request: web.Request, info: RequestInfo, user: User
                                ) -> web.Response:
        """metrics.k8s.io, served here as the aggregated metrics-server would serve it."""
        found = metrics_objects.RESOURCES.get(info.resource)
        if (info.version != metrics_objects.VERSION or found is None or info.subresource
                or (info.namespace and not found[1])):
            raise errors.path_not_found()
        try:
            label_sel = parse_label_selector(request.query.get("labelSelector"))
            field_sel = parse_field_selector(request.query.get("fieldSelector"))
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from None
        assert self.rbac is not None
        authorize(user, info, field_sel.exact("metadata.name") or "", self._referenced,
                  field_sel.exact, self._pod_node, self.rbac.authorize)
        if info.verb not in ("get", "list"):
            raise errors.method_not_allowed(info.verb, found[0])

        def predicate(a: Attrs) -> bool:
            fields = {"metadata.name": a.name, "metadata.namespace": a.namespace}
            return bool(label_sel.matches(a.labels) and field_sel.matches(fields))

        return json_response(await self.metrics_api.serve(
            info.verb, info.resource, info.namespace, info.name, predicate))

    def _discovery(self, request: web.Request, info: RequestInfo) -> web.Response:
        if info.version:
            body = discovery.resource_list(info.group, info.version, self._extra())
            if info.group == metrics_objects.GROUP and self.metrics_api is not None:
                body = metrics_objects.resource_list()
        else:
            group = request.path.strip("/").split("/")[1] if info.api_prefix == "apis" else ""
            body = discovery.api_group(group, self._extra())
            if group == metrics_objects.GROUP and self.metrics_api is not None:
                body = metrics_objects.api_group()
        if body is None:
            raise errors.path_not_found()
        return json_response(body)

    def _pod_node(self, namespace: str, name: str) -> str | None:
        """The node a pod is bound to (None for no such pod)."""
        pods = self.registry.by_resource("", "pods")
        entry = pods.lookup(namespace, name) if pods is not None else None
        return entry.attrs.fields.get("spec.nodeName") if entry is not None else None

    def _referenced(self, node: str, resource: str, namespace: str, name: str) -> bool:
        """Does a pod bound to ``node`` use this object (a configmap, secret, claim or
        service account: podrefs.references)? Mirror pods are no relationship (the node
        made them itself), as in the Node authorizer's graph."""
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

    async def _store_subresource(self, request: web.Request, info: RequestInfo,
                                 store: GenericStore, ctx: Context, namespace: str,
                                 strategy: Strategy) -> web.StreamResponse:
        """A subresource that reads the whole object and writes it through a wrapped
        strategy (pods/status, pods/ephemeralcontainers, nodes/status, ...)."""
        if info.verb == "get":
            return get_resource(request, store, namespace, info.name)
        if info.verb == "update":
            return await update_resource(request, store, ctx, namespace, info.name, strategy)
        return await patch_resource(request, store, ctx, namespace, info.name, strategy)
