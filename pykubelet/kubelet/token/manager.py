"""The kubelet's service-account token manager (pkg/kubelet/token/token_manager.go): the
tokens of pods' ``serviceAccountToken`` projected sources, each asked for through the
TokenRequest API with the node's own credentials and bound to its pod (the Node
authorizer lets a node ask only for the accounts of pods bound to it, NodeRestriction
only for tokens bound to such a pod), kept per (account, audience, lifetime, pod UID)
and asked for again once 80% of its lifetime has passed, or 24 h, or it has expired.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pykubelet.api.machinery.timeutil import parse_time

MAX_TTL_S = 24 * 3600  # maxTTL: refresh a day-old token whatever its lifetime
REFRESH_FRACTION = 0.8


class TokenFetchError(Exception):
    """No token (the control plane refused or is away); the message says why."""


class TokenRequester(Protocol):
    def __call__(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST the TokenRequest ``body`` for service account ``namespace/name``."""


@dataclass(frozen=True)
class Issued:
    token: str
    issued_at: float  # the token's iat
    expires: float  # status.expirationTimestamp


def requires_refresh(issued: Issued, now: float) -> bool:
    """requiresRefresh: expired, past 80% of its lifetime, or older than a day."""
    if now >= issued.expires:
        return True
    lifetime = issued.expires - issued.issued_at
    return now > issued.issued_at + min(lifetime * REFRESH_FRACTION, MAX_TTL_S)


def _issued_at(token: str, fallback: float) -> float:
    """The ``iat`` of a JWT (unverified: this node only schedules its refresh by it)."""
    try:
        payload = token.split(".")[1]
        iat = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["iat"]
        return float(iat)
    except (IndexError, KeyError, TypeError, ValueError):
        return fallback


class TokenManager:
    def __init__(self, request: TokenRequester, clock: Callable[[], float] = time.time) -> None:
        self._request = request
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str, int, str], Issued] = {}

    def pod_token(self, namespace: str, account: str, audience: str, expiration_seconds: int,
                  pod_name: str, pod_uid: str) -> bytes:
        """The token of a projected source of pod ``namespace/pod_name``."""
        key = (namespace, account, audience, expiration_seconds, pod_uid)
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and not requires_refresh(hit, now):
            return hit.token.encode()
        spec: dict[str, Any] = {"expirationSeconds": expiration_seconds,
                                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                                   "name": pod_name, "uid": pod_uid}}
        if audience:
            spec["audiences"] = [audience]
        try:
            out = self._request(namespace, account, {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": spec})
            status = out["status"]
            issued = Issued(status["token"], _issued_at(status["token"], now),
                            parse_time(status["expirationTimestamp"]).timestamp())
        except TokenFetchError:
            raise
        except Exception as exc:
            if hit is not None and now < hit.expires:
                return hit.token.encode()  # keep the old one while it is good
            raise TokenFetchError(f'failed to fetch token: {exc}') from None
        with self._lock:
            self._cache[key] = issued
        return issued.token.encode()

    def delete_pod(self, pod_uid: str) -> None:
        """DeleteServiceAccountToken: forget a gone pod's tokens."""
        with self._lock:
            for key in [k for k in self._cache if k[4] == pod_uid]:
                del self._cache[key]
