"""Service-account JWTs (pkg/serviceaccount/jwt.go): upstream's claims and header, and the
authenticator's refusals: expired, not valid yet, another audience, another key, alg none,
a deleted service account or bound pod (UID check); a good token is verified once."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from pykubelet.controlplane.registry.resources import ResourceInfo
from pykubelet.controlplane.serviceaccount import jwt
from pykubelet.controlplane.serviceaccount.authenticator import ServiceAccountTokens
from pykubelet.controlplane.serviceaccount.jwt import Ref
from pykubelet.controlplane.serviceaccount.keys import load_key_pem, new_key_pem

ISS = "https://kubernetes.default.svc.cluster.local"
KEY = load_key_pem(new_key_pem())
NOW = 1_800_000_000.0


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segments(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    h, p, _ = token.split(".")
    return (json.loads(base64.urlsafe_b64decode(h + "=" * (-len(h) % 4))),
            json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))))


class World:
    """The objects tokens name, by UID (what the watch cache would say)."""

    def __init__(self) -> None:
        self.uids: dict[tuple[str, str, str], str] = {
            ("serviceaccounts", "team-a", "reader"): "sa-uid",
            ("pods", "team-a", "web"): "pod-uid",
            ("nodes", "", "n1"): "node-uid"}
        self.lookups = 0

    def uid_of(self, info: ResourceInfo, namespace: str, name: str) -> str | None:
        self.lookups += 1
        return self.uids.get((info.resource, namespace, name))


def authenticator(world: World, now: float = NOW, keys: list[Any] | None = None,
                  audiences: list[str] | None = None) -> ServiceAccountTokens:
    return ServiceAccountTokens(ISS, audiences or [ISS], keys or [KEY.public_key()],
                                world.uid_of, clock=lambda: now)


def token(exp: int = 3600, aud: list[str] | None = None, now: float = NOW,
          pod: Ref | None = None, key: Any = KEY, issuer: str = ISS) -> str:
    claims = jwt.new_claims(issuer, "team-a", Ref("reader", "sa-uid"), aud or [ISS], exp,
                            now=now, pod=pod)
    return jwt.sign(claims, key)


def test_claims_are_upstreams() -> None:
    header, payload = segments(token(pod=Ref("web", "pod-uid")))
    assert header == {"alg": "RS256", "kid": jwt.key_id(KEY.public_key())}
    assert payload["iss"] == ISS
    assert payload["sub"] == "system:serviceaccount:team-a:reader"
    assert payload["aud"] == [ISS]
    assert payload["iat"] == payload["nbf"] == int(NOW)
    assert payload["exp"] == int(NOW) + 3600
    assert len(payload["jti"]) == 36
    assert payload["kubernetes.io"] == {
        "namespace": "team-a", "serviceaccount": {"name": "reader", "uid": "sa-uid"},
        "pod": {"name": "web", "uid": "pod-uid"}}


def test_a_good_token_is_the_service_accounts_user() -> None:
    user = authenticator(World()).user(token())
    assert user is not None
    assert user.name == "system:serviceaccount:team-a:reader"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:team-a",
                           "system:authenticated")


def test_an_ecdsa_key_signs_es256() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    t = token(key=key)
    assert segments(t)[0]["alg"] == "ES256"
    assert authenticator(World(), keys=[key.public_key()]).user(t) is not None
    assert authenticator(World()).user(t) is None  # not our RSA key


def test_expired_is_refused_after_the_leeway() -> None:
    t = token(exp=600)
    assert authenticator(World(), now=NOW + 600 + 59).user(t) is not None
    assert authenticator(World(), now=NOW + 600 + 61).user(t) is None


def test_expiry_is_checked_on_a_cached_token() -> None:
    world, clock = World(), [NOW]
    auth = ServiceAccountTokens(ISS, [ISS], [KEY.public_key()], world.uid_of,
                                clock=lambda: clock[0])
    t = token(exp=600)
    assert auth.user(t) is not None
    clock[0] = NOW + 3600
    assert auth.user(t) is None


def test_not_valid_yet_is_refused() -> None:
    t = token(now=NOW + 600)  # nbf and iat ten minutes ahead
    assert authenticator(World()).user(t) is None
    assert authenticator(World(), now=NOW + 600).user(t) is not None


def test_another_audience_is_refused() -> None:
    assert authenticator(World()).user(token(aud=["vault"])) is None
    assert authenticator(World(), audiences=["vault", ISS]).user(token(aud=["vault"])) \
        is not None


def test_another_key_is_refused() -> None:
    other = load_key_pem(new_key_pem())
    assert authenticator(World()).user(token(key=other)) is None


def test_a_changed_payload_is_refused() -> None:
    good = token()
    h, _, s = good.split(".")
    payload = segments(good)[1]
    payload["kubernetes.io"]["namespace"] = "kube-system"
    payload["sub"] = "system:serviceaccount:kube-system:reader"
    forged = f"{h}.{b64(json.dumps(payload).encode())}.{s}"
    assert authenticator(World()).user(forged) is None


@pytest.mark.parametrize("alg", ["none", "None", "HS256"])
def test_alg_none_and_hmac_are_refused(alg: str) -> None:
    _, p, _ = token().split(".")
    header = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    assert authenticator(World()).user(f"{header}.{p}.") is None
    with pytest.raises(jwt.TokenError, match="unsupported signing algorithm"):
        jwt.verify_signature(f"{header}.{p}.", [KEY.public_key()])


def test_a_token_of_another_issuer_is_not_ours() -> None:
    assert authenticator(World()).user(token(issuer="https://elsewhere")) is None
    assert authenticator(World()).user("not-a-jwt") is None


def test_a_deleted_or_recreated_service_account_is_refused() -> None:
    world = World()
    auth = authenticator(world)
    t = token()
    assert auth.user(t) is not None
    world.uids[("serviceaccounts", "team-a", "reader")] = "another-uid"
    assert auth.user(t) is None
    del world.uids[("serviceaccounts", "team-a", "reader")]
    assert auth.user(t) is None


def test_a_deleted_bound_pod_is_refused_at_once() -> None:
    world = World()
    auth = authenticator(world)
    t = token(pod=Ref("web", "pod-uid"))
    assert auth.user(t) is not None
    del world.uids[("pods", "team-a", "web")]
    assert auth.user(t) is None
    world.uids[("pods", "team-a", "web")] = "recreated-uid"
    assert auth.user(t) is None


def test_a_pod_bound_token_does_not_check_the_pods_node() -> None:
    world = World()
    claims = jwt.new_claims(ISS, "team-a", Ref("reader", "sa-uid"), [ISS], 3600, now=NOW,
                            pod=Ref("web", "pod-uid"), node=Ref("gone", "x"))
    assert authenticator(world).user(jwt.sign(claims, KEY)) is not None
    node_bound = jwt.new_claims(ISS, "team-a", Ref("reader", "sa-uid"), [ISS], 3600, now=NOW,
                                node=Ref("n2", "x"))
    assert authenticator(world).user(jwt.sign(node_bound, KEY)) is None


def test_a_good_token_is_verified_once_then_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = jwt.verify_signature

    def counting(tok: str, keys: list[Any]) -> dict[str, Any]:
        calls.append(tok)
        return real(tok, keys)

    monkeypatch.setattr(jwt, "verify_signature", counting)
    auth = authenticator(World())
    t = token(pod=Ref("web", "pod-uid"))
    for _ in range(5):
        assert auth.user(t) is not None
    assert len(calls) == 1


def test_a_cached_token_costs_under_a_fifth_of_a_millisecond() -> None:
    auth = ServiceAccountTokens(ISS, [ISS], [KEY.public_key()], World().uid_of)
    t = jwt.sign(jwt.new_claims(ISS, "team-a", Ref("reader", "sa-uid"), [ISS], 3600,
                                pod=Ref("web", "pod-uid")), KEY)
    assert auth.user(t) is not None
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        auth.user(t)
    per = (time.perf_counter() - t0) / n
    assert per < 0.0002, f"{per * 1e3:.3f} ms per request"


def test_split_username() -> None:
    assert jwt.split_username("system:serviceaccount:ns:sa") == ("ns", "sa")
    assert jwt.split_username("system:serviceaccount:ns") is None
    assert jwt.split_username("alice") is None

