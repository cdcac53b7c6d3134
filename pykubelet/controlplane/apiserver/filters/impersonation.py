"""Impersonation (kube-apiserver's WithImpersonation filter,
staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go): a caller may act as
another user with the ``Impersonate-*`` headers when the authorizers allow it the
``impersonate`` verb on each thing it asks for (the user, a service account, each group,
each extra value, the uid), checked in that order before anything is done; the first one
refused is a 403 in upstream's words."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.requestinfo import RequestInfo
from pykubelet.controlplane.registry.store import User

IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"
IMPERSONATE_UID = "Impersonate-Uid"
IMPERSONATE_EXTRA = "impersonate-extra-"
SA_PREFIX = "system:serviceaccount:"
ANONYMOUS = "system:anonymous"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
AUTHN_GROUP = "authentication.k8s.io"

# (user, what it asks for) -> (allowed, reason): the same authorizers as every request
Authorize = Callable[[User, RequestInfo], tuple[bool, str]]


def admin_only(user: User, info: RequestInfo) -> tuple[bool, str]:
    return user.is_admin, ""


def _asks(resource: str, name: str, group: str = "", namespace: str = "",
          subresource: str = "") -> RequestInfo:
    """The attributes of one impersonation request (ResourceRequest, verb impersonate)."""
    return RequestInfo(True, "", verb="impersonate", group=group, namespace=namespace,
                       resource=resource, subresource=subresource, name=name)


def _service_account(name: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account's user name, else None (SplitUsername)."""
    if not name.startswith(SA_PREFIX):
        return None
    ns, sep, sa = name[len(SA_PREFIX):].partition(":")
    if not sep or not ns or not sa or ":" in sa:
        return None
    return ns, sa


def impersonate(request: web.Request, user: User, authorize: Authorize = admin_only) -> User:
    """The user ``user`` acts as: the ``Impersonate-User`` with the ``Impersonate-Group``s
    (a service account's groups when it names one and no group is given), and
    ``system:authenticated`` (``system:unauthenticated`` for the anonymous user), when
    ``authorize`` lets ``user`` impersonate each of them; else 403 before anything is
    done. Groups, extras or a uid without a user are upstream's internal error."""
    h = request.headers
    name = h.get(IMPERSONATE_USER)
    groups = list(h.getall(IMPERSONATE_GROUP, []))
    uid = h.get(IMPERSONATE_UID)
    extra = [(unquote(k[len(IMPERSONATE_EXTRA):].lower()), v)
             for k, v in h.items() if k.lower().startswith(IMPERSONATE_EXTRA)]
    if name is None and not groups and uid is None and not extra:
        return user
    if name is None:
        asked = [*(f"group {g!r}" for g in groups), *(["uid"] if uid is not None else []),
                 *(f"extra {k!r}" for k, _ in extra)]
        raise errors.internal(f"requested [{', '.join(asked)}] without impersonating a user")
    sa = _service_account(name)
    checks = [_asks("serviceaccounts", sa[1], namespace=sa[0]) if sa is not None
              else _asks("users", name)]
    checks += [_asks("groups", g) for g in groups]
    checks += [_asks("userextras", v, AUTHN_GROUP, subresource=k) for k, v in extra]
    if uid is not None:
        checks.append(_asks("uids", uid, AUTHN_GROUP))
    for info in checks:
        allowed, why = authorize(user, info)
        if not allowed:
            raise errors.forbidden(user.name, info.verb, info.resource, info.group,
                                   info.namespace, info.name, info.subresource, why)
    if sa is not None and not groups:  # a service account's groups are known
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{sa[0]}"]
    if name != ANONYMOUS:
        if AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups.append(UNAUTHENTICATED)
    return User(name, tuple(groups))
