"""Authentication (kube-apiserver's WithAuthentication filter): a client certificate the
cluster CA signed (:mod:`.x509`) or a bearer token names an identity (the admin, a node,
the join token, a user of the ``--token-auth-file``) or the request is 401; the identity
is then the user the request acts as, after impersonation."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from pykubelet.controlplane import errors
from pykubelet.controlplane.apiserver.filters.impersonation import (
    Authorize,
    admin_only,
    impersonate,
)
from pykubelet.controlplane.apiserver.filters.x509 import (
    CertificateError,
    X509Authenticator,
    peer_certificate,
)
from pykubelet.controlplane.registry.store import User

log = logging.getLogger(__name__)

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
                 token_users: TokenUsers = _no_users,
                 certs: X509Authenticator | None = None) -> Identity:
    """The user of a client certificate, else the caller of a bearer token (the scheme in
    any case, as upstream's bearer token authenticator), else 401. As upstream's union of
    authenticators, a certificate that does not verify leaves the token to decide."""
    if certs is not None:
        user = _certificate_user(certs, request)
        if user is not None:
            return Identity("user", user=user)
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


def _certificate_user(certs: X509Authenticator, request: web.Request) -> User | None:
    der = peer_certificate(request.transport)
    if der is None:
        return None
    try:
        return certs.user(der)
    except CertificateError as exc:
        log.info("Unable to authenticate the request: %s", exc)
        return None


def check_public(identify: Identify, request: web.Request,
                 token_users: TokenUsers = _no_users) -> None:
    """Public paths answer anyone, but a token that is sent must be good (upstream
    authenticates every request; only a request without credentials is anonymous)."""
    if "Authorization" in request.headers:
        authenticate(identify, request, token_users)


def user_of(identify: Identify, request: web.Request,
            token_users: TokenUsers = _no_users,
            certs: X509Authenticator | None = None,
            authorize: Authorize = admin_only) -> User:
    """The user a request acts as: its identity's user, or whom it impersonates (when
    ``authorize`` lets it)."""
    return impersonate(request, identity_user(
        authenticate(identify, request, token_users, certs)), authorize)


def identity_user(ident: Identity) -> User:
    """The user an authenticated identity is."""
    if ident.kind == "admin":
        return ADMIN
    if ident.kind == "node":
        return User(f"system:node:{ident.node}", NODES_GROUPS)
    if ident.user is not None:
        return ident.user
    return BOOTSTRAP
