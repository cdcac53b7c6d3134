"""``POST /api/v1/namespaces/NS/serviceaccounts/NAME/token``: a TokenRequest answered with
a signed JWT, as pkg/registry/core/serviceaccount/storage/token.go does.

The request's ``spec.expirationSeconds`` defaults to 3600 and may not be under 10 minutes
(nor over 2^32 s); ``spec.audiences`` default to the API server's (--api-audiences,
else the issuer); ``spec.boundObjectRef`` binds the token to a v1 Pod (running as this
service account), Secret or Node, whose UID goes into the token, so it dies with the
object. A pod-bound token asked for 3607 s, the ServiceAccount admission's projected
volume's, is issued for a year with ``warnafter`` at 3607 s
(--service-account-extend-token-expiration, on by default), while its
``status.expirationTimestamp`` says 3607 s: the kubelet refreshes it by that.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from pykubelet.api.machinery.field import invalid
from pykubelet.api.machinery.timeutil import rfc3339
from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.handlers.rest import read_body
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.apiserver.subresources import typed_body
from pykubelet.controlplane.registry.resources import NODES, PODS, SECRETS
from pykubelet.controlplane.registry.store import Context, GenericStore, Registry
from pykubelet.controlplane.serviceaccount import jwt
from pykubelet.controlplane.serviceaccount.jwt import Ref, SigningKey

if TYPE_CHECKING:
    from pykubelet.controlplane.apiserver.app import APIServer

Obj = dict[str, Any]

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"  # kubeadm's
DEFAULT_EXPIRATION_S = 3600  # SetDefaults_TokenRequestSpec
MIN_EXPIRATION_S = 600
MAX_EXPIRATION_S = 1 << 32
WARN_ONLY_EXPIRATION_S = 3607  # token.WarnOnlyBoundTokenExpirationSeconds
EXTENDED_EXPIRATION_S = 365 * 24 * 3600  # token.ExpirationExtensionSeconds
API_VERSION = "authentication.k8s.io/v1"


@dataclass
class Issuer:
    """What the API server signs tokens with (its --service-account-* flags)."""

    key: SigningKey
    issuer: str = DEFAULT_ISSUER
    audiences: tuple[str, ...] = ()  # --api-audiences; empty: the issuer
    extend_expiration: bool = True
    clock: Callable[[], float] = time.time

    @property
    def api_audiences(self) -> list[str]:
        return list(self.audiences) or [self.issuer]


def spec_errors(spec: Obj) -> list[Any]:
    """ValidateTokenRequest."""
    exp = spec.get("expirationSeconds", DEFAULT_EXPIRATION_S)
    if exp < MIN_EXPIRATION_S:
        return [invalid("spec.expirationSeconds", exp,
                        "may not specify a duration less than 10 minutes")]
    if exp > MAX_EXPIRATION_S:
        return [invalid("spec.expirationSeconds", exp,
                        "may not specify a duration larger than 2^32 seconds")]
    return []


def _uid(entry_obj: Obj) -> str:
    return str((entry_obj.get("metadata") or {}).get("uid", ""))


def bound_object(registry: Registry, namespace: str, sa_name: str, ref: Obj
                 ) -> tuple[Ref | None, Ref | None, Ref | None]:
    """(pod, secret, node) the token is bound to, from ``spec.boundObjectRef``."""
    kind, api_version, name = ref.get("kind", ""), ref.get("apiVersion", ""), ref.get("name", "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    pod = secret = node = None
    if group == "" and kind == "Pod":
        obj = registry.store(PODS).get(namespace, name).obj()
        if (obj.get("spec") or {}).get("serviceAccountName") != sa_name:
            raise errors.bad_request(f'cannot bind token for serviceaccount "{sa_name}" to pod '
                                     "running with different serviceaccount name.")
        pod = Ref(name, _uid(obj))
        node_name = (obj.get("spec") or {}).get("nodeName") or ""
        node_entry = registry.store(NODES).lookup("", node_name) if node_name else None
        if node_entry is not None:  # ServiceAccountTokenPodNodeInfo
            node = Ref(node_name, _uid(node_entry.obj()))
        uid = pod.uid
    elif group == "" and kind == "Node":
        node = Ref(name, _uid(registry.store(NODES).get("", name).obj()))
        uid = node.uid
    elif group == "" and kind == "Secret":
        secret = Ref(name, _uid(registry.store(SECRETS).get(namespace, name).obj()))
        uid = secret.uid
    else:
        gvk = f"{api_version}, Kind={kind}" if api_version else f"/, Kind={kind}"
        raise errors.bad_request(f'cannot bind token for serviceaccount "{sa_name}" to '
                                 f'object of kind "{gvk}"')
    if ref.get("uid") and ref["uid"] != uid:
        raise errors.conflict(
            kind, group, name,
            f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
            "record. The object might have been deleted and then recreated")
    return pod, secret, node


def node_restriction(registry: Registry, node: str, namespace: str, name: str,
                     ref: Obj | None) -> None:
    """NodeRestriction's admitServiceAccount: a node's token must be bound, by UID, to a
    pod bound to that node."""

    def forbidden(why: str) -> errors.StatusError:
        return errors.StatusError(403, errors.FORBIDDEN,
                                  f'serviceaccounts "{name}" is forbidden: {why}',
                                  {"name": name, "kind": "serviceaccounts"})

    ref = ref or {}
    if (ref.get("apiVersion"), ref.get("kind")) != ("v1", "Pod") or not ref.get("name"):
        raise forbidden("node requested token not bound to a pod")
    if not ref.get("uid"):
        raise forbidden("node requested token with a pod binding without a uid")
    pod = registry.store(PODS).get(namespace, ref["name"]).obj()
    if ref["uid"] != _uid(pod):
        raise forbidden(f"the UID in the bound object reference ({ref['uid']}) does not match "
                        "the UID in record. The object might have been deleted and then "
                        "recreated")
    if (pod.get("spec") or {}).get("nodeName") != node:
        raise forbidden("node requested token bound to a pod scheduled on a different node")


def issue(issuer: Issuer, registry: Registry, store: GenericStore, namespace: str, name: str,
          body: Obj, node: str | None = None) -> Obj:
    """The TokenRequest ``body`` answered: its spec defaulted, its status the token.
    ``node``: the node asking (its NodeRestriction rules apply), if a node asks."""
    meta = body.get("metadata") or {}
    if meta.get("name", name) not in ("", name):
        raise errors.bad_request("the name of the object does not match the name on the URL")
    sa = store.get(namespace, name).obj()
    spec = dict(body.get("spec") or {})
    spec.setdefault("expirationSeconds", DEFAULT_EXPIRATION_S)
    errs = spec_errors(spec)
    if errs:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", name,
                             [errors.cause(e) for e in errs])
    ref = spec.get("boundObjectRef")
    if node is not None:
        node_restriction(registry, node, namespace, name, ref)
    pod = secret = bound_node = None
    if ref:
        pod, secret, bound_node = bound_object(registry, namespace, name, ref)
    if not spec.get("audiences"):
        spec["audiences"] = issuer.api_audiences
    exp = int(spec["expirationSeconds"])
    warn_after = None
    now = issuer.clock()
    if (issuer.extend_expiration and pod is not None and exp == WARN_ONLY_EXPIRATION_S
            and set(spec["audiences"]) <= set(issuer.api_audiences)):
        warn_after, exp = int(now) + exp, EXTENDED_EXPIRATION_S
    claims = jwt.new_claims(issuer.issuer, namespace, Ref(name, _uid(sa)), spec["audiences"],
                            exp, now=now, pod=pod, secret=secret, node=bound_node,
                            warn_after=warn_after)
    token = jwt.sign(claims, issuer.key)
    expires = dt.datetime.fromtimestamp(int(now) + int(spec["expirationSeconds"]), dt.UTC)
    return {"kind": "TokenRequest", "apiVersion": API_VERSION,
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": rfc3339(expires)}}


def handler(issuer: Issuer) -> Callable[..., Any]:
    """The ``serviceaccounts/token`` subresource over ``issuer``."""

    async def token(server: APIServer, request: web.Request, info: RequestInfo,
                    store: GenericStore, ctx: Context) -> web.StreamResponse:
        body = typed_body(await read_body(request), "TokenRequest",
                          "io.k8s.api.authentication.v1.TokenRequest", API_VERSION)
        out = issue(issuer, server.registry, store, info.namespace, info.name, body,
                    ctx.user.node)
        return web.Response(body=orjson.dumps(out), status=201,
                            content_type="application/json")

    return token
