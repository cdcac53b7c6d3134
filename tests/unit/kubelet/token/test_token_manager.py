"""The kubelet's token manager (pkg/kubelet/token): a pod's token is a TokenRequest bound to
the pod by name and UID, kept until 80% of its lifetime (or a day, or expiry) and then
asked for again; a failed refresh keeps a token that is still good; a gone pod's tokens
are forgotten."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pykubelet.api.machinery.timeutil import rfc3339
from pykubelet.kubelet.token.manager import Issued, TokenFetchError, TokenManager, requires_refresh

T0 = 1_800_000_000


class FakeAPI:
    def __init__(self) -> None:
        self.now = float(T0)
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.fail = False

    def __call__(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.fail:
            raise OSError("connection refused")
        self.requests.append((namespace, name, body))
        iat = int(self.now)
        payload = base64.urlsafe_b64encode(json.dumps({"iat": iat}).encode()).decode()
        exp = body["spec"]["expirationSeconds"]
        return {"status": {"token": f"h.{payload}.{len(self.requests)}",
                           "expirationTimestamp": rfc3339(iat + exp)}}


def test_requires_refresh_at_80_percent_or_a_day() -> None:
    issued = Issued("t", T0, T0 + 3600)
    assert not requires_refresh(issued, T0 + 2879)
    assert requires_refresh(issued, T0 + 2881)
    long = Issued("t", T0, T0 + 7 * 86400)
    assert not requires_refresh(long, T0 + 86399)
    assert requires_refresh(long, T0 + 86401)


def test_a_pods_token_is_bound_to_it_and_refreshed_at_80_percent() -> None:
    api = FakeAPI()
    tokens = TokenManager(api, clock=lambda: api.now)
    first = tokens.pod_token("team-a", "reader", "", 3607, "web", "uid-1")
    assert api.requests == [("team-a", "reader", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3607, "boundObjectRef": {
            "apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "uid-1"}}})]
    api.now = T0 + 0.79 * 3607
    assert tokens.pod_token("team-a", "reader", "", 3607, "web", "uid-1") == first
    assert len(api.requests) == 1
    api.now = T0 + 0.81 * 3607
    second = tokens.pod_token("team-a", "reader", "", 3607, "web", "uid-1")
    assert second != first
    assert len(api.requests) == 2


def test_an_audience_is_asked_for_and_keyed_apart() -> None:
    api = FakeAPI()
    tokens = TokenManager(api, clock=lambda: api.now)
    tokens.pod_token("ns", "sa", "", 600, "p", "u")
    tokens.pod_token("ns", "sa", "vault", 600, "p", "u")
    assert [r[2]["spec"].get("audiences") for r in api.requests] == [None, ["vault"]]


def test_a_failed_refresh_keeps_a_good_token_then_fails() -> None:
    api = FakeAPI()
    tokens = TokenManager(api, clock=lambda: api.now)
    first = tokens.pod_token("ns", "sa", "", 600, "p", "u")
    api.fail = True
    api.now = T0 + 590
    assert tokens.pod_token("ns", "sa", "", 600, "p", "u") == first
    api.now = T0 + 601
    with pytest.raises(TokenFetchError, match="failed to fetch token"):
        tokens.pod_token("ns", "sa", "", 600, "p", "u")


def test_a_gone_pods_tokens_are_forgotten() -> None:
    api = FakeAPI()
    tokens = TokenManager(api, clock=lambda: api.now)
    tokens.pod_token("ns", "sa", "", 600, "p", "u")
    tokens.delete_pod("u")
    tokens.pod_token("ns", "sa", "", 600, "p", "u")
    assert len(api.requests) == 2
