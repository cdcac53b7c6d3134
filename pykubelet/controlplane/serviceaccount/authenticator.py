"""The service-account token authenticator (pkg/serviceaccount/jwt.go's jwtTokenAuthenticator
with validator.go's checks), one link of the bearer-token chain.

A token signed by this cluster's key for this issuer names
``system:serviceaccount:NS:NAME`` in the groups ``system:serviceaccounts``,
``system:serviceaccounts:NS`` and ``system:authenticated``; RBAC judges it from there.
It is refused (None: the chain answers 401 ``Unauthorized``, as upstream does for every
failed authentication) when its signature is not ours or ``alg`` is none or another,
it is expired or not valid yet (a minute's leeway), none of its audiences is this
server's, or its service account or bound pod, secret or node is gone or was made
again (the UID in the token is not the object's). Reasons are logged with the service
account and the token's ``jti``, never the token.

Verifying a signature costs far more than a request should, so a good token's claims are
kept under the SHA-256 of the token until it expires (upstream's cached token
authenticator keeps results 10 s); the time, and the objects it is bound to, are
checked on every request from the watch cache, so a deleted pod's token stops working at
once.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pykubelet.controlplane.registry.resources import (
    NODES,
    PODS,
    SECRETS,
    SERVICE_ACCOUNTS,
    ResourceInfo,
)
from pykubelet.controlplane.registry.store import Registry, User
from pykubelet.controlplane.serviceaccount import jwt
from pykubelet.controlplane.serviceaccount.jwt import Claims, TokenError, VerifyingKey

log = logging.getLogger(__name__)

ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
AUTHENTICATED = "system:authenticated"
MAX_CACHED = 10000  # good tokens kept; past that the cache starts again

# (resource, namespace, name) -> the object's UID, or None when there is none
UIDOf = Callable[[ResourceInfo, str, str], str | None]


def user_of(namespace: str, name: str) -> User:
    """serviceaccount.UserInfo."""
    return User(jwt.make_username(namespace, name),
                (ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED))


def registry_uids(registry: Registry) -> UIDOf:
    """Objects' UIDs from the registry's watch cache (no store read)."""

    def uid_of(info: ResourceInfo, namespace: str, name: str) -> str | None:
        entry = registry.store(info).lookup(namespace, name)
        if entry is None:
            return None
        return str(entry.derived("uid", lambda: entry.obj()["metadata"].get("uid", "")))

    return uid_of


@dataclass
class ServiceAccountTokens:
    """The authenticator: ``user(token)`` is the token's user, or None."""

    issuer: str
    audiences: list[str]
    keys: list[VerifyingKey]
    uid_of: UIDOf
    clock: Callable[[], float] = time.time
    _cache: dict[bytes, tuple[Claims, User]] = field(default_factory=dict)

    def user(self, token: str) -> User | None:
        digest = hashlib.sha256(token.encode()).digest()
        hit = self._cache.get(digest)
        now = self.clock()
        if hit is None:
            verified = self._verify(token)
            if verified is None:
                return None
            hit = verified
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            self._cache[digest] = hit
        claims, user = hit
        try:
            jwt.check_time(claims, now)
            self._check_objects(claims)
        except TokenError as exc:
            self._cache.pop(digest, None)
            log.info("service account token for %s refused (jti %s): %s", claims.subject,
                     claims.jti, exc)
            return None
        return user

    def _verify(self, token: str) -> tuple[Claims, User] | None:
        seen = jwt.peek(token)
        if seen is None or seen[1].get("iss") != self.issuer:
            return None  # not a token of this issuer: another authenticator's
        try:
            claims = jwt.parse_claims(jwt.verify_signature(token, self.keys))
            jwt.check_audiences(claims, self.audiences)
        except TokenError as exc:
            log.info("service account token refused (sub %r, jti %r): %s",
                     seen[1].get("sub"), seen[1].get("jti"), exc)
            return None
        return claims, user_of(claims.namespace, claims.service_account.name)

    def _check_objects(self, claims: Claims) -> None:
        """validator.go: the service account and the bound objects exist, same UIDs."""
        ns = claims.namespace
        checks: list[tuple[str, ResourceInfo, str, jwt.Ref]] = [
            ("service account", SERVICE_ACCOUNTS, ns, claims.service_account)]
        if claims.pod is not None:
            checks.append(("pod", PODS, ns, claims.pod))
        if claims.secret is not None:
            checks.append(("secret", SECRETS, ns, claims.secret))
        if claims.node is not None and claims.pod is None:  # a pod's node may be replaced
            checks.append(("node", NODES, "", claims.node))
        for what, info, namespace, ref in checks:
            uid = self.uid_of(info, namespace, ref.name)
            shown = f"{namespace}/{ref.name}" if namespace else ref.name
            if uid is None:
                raise TokenError(f"{what} {shown} has been deleted")
            if ref.uid and uid != ref.uid:
                raise TokenError(f"{what} UID ({uid}) does not match claim ({ref.uid})")
