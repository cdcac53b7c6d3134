"""Authentication (kube-apiserver's WithAuthentication filter): a bearer token names an
identity (the admin, a node, the join token, a user of the ``--token-auth-file``) or the
request is 401; the identity is then the user the request acts as, after impersonation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.filters.impersonation import impersonate
from pykubelet.controlplane.registry.store import User

ADMIN = User("system:admin", ("system:masters", "system:authenticated"))
NODES_GROUPS = ("system:nodes", "system:authenticated")
BOOTSTRAP = User("system:bootstrap", ("system:bootstrappers", "system:authenticated"))

# a bearer token -> (kind, node) of its identity, or None for no such token
Identify = Callable[[str], tuple[str, str] | None]
# a bearer token -> the user a static token file names, or None
TokenUsers = Callable[[str], User | None]


@dataclass
class Identity:
    kind: str  # admin, node, join, user
    node: str = ""
    user: User | None = None  # a token file's user


def _no_users(token: str) -> User | None:
    return None


def authenticate(identify: Identify, request: web.Request,
                 token_users: TokenUsers = _no_users) -> Identity:
    """The caller of a bearer token (the scheme in any case, as upstream's bearer token
    authenticator), else 401."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise errors.unauthorized()
    who = identify(token.strip())
    if who is not None:
        return Identity(*who)
    user = token_users(token.strip())
    if user is None:
        raise errors.unauthorized()
    return Identity("user", user=user)


def check_public(identify: Identify, request: web.Request,
                 token_users: TokenUsers = _no_users) -> None:
    """Public paths answer anyone, but a token that is sent must be good (upstream
    authenticates every request; only a request without credentials is anonymous)."""
    if "Authorization" in request.headers:
        authenticate(identify, request, token_users)


def user_of(identify: Identify, request: web.Request,
            token_users: TokenUsers = _no_users) -> User:
    """The user a request acts as: its identity's user, or whom it impersonates."""
    ident = authenticate(identify, request, token_users)
    if ident.kind == "admin":
        user = ADMIN
    elif ident.kind == "node":
        user = User(f"system:node:{ident.node}", NODES_GROUPS)
    elif ident.user is not None:
        user = ident.user
    else:
        user = BOOTSTRAP
    return impersonate(request, user)
