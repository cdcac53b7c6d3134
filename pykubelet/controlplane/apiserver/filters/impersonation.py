"""Impersonation (kube-apiserver's WithImpersonation filter): the admin may act as another
user with the ``Impersonate-*`` headers; anyone else asking is refused before anything is
done."""

from __future__ import annotations

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.registry.store import User

IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"
IMPERSONATE_UID = "Impersonate-Uid"
IMPERSONATE_EXTRA = "impersonate-extra-"


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
