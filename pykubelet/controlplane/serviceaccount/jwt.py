"""Service-account JWTs as pkg/serviceaccount/jwt.go writes and reads them: a compact JWS
(RS256 with an RSA key, ES256 with a P-256 key; header ``alg`` and ``kid``) over upstream's
claims: ``iss``, ``sub`` ``system:serviceaccount:NS:NAME``, ``aud``, ``exp``, ``iat``,
``nbf``, ``jti`` and the private ``kubernetes.io`` claim (namespace, serviceaccount
{name, uid}, and the object the token is bound to: pod, secret or node {name, uid},
``warnafter``).

Pure functions over the ``cryptography`` package (already a dependency): signing is a
few lines, and reading a token is the part that must refuse well (``alg: none``, an
HMAC algorithm with the public key as secret, another key, a malformed segment), which is
clearer written out than configured in a general JWT library.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

SUBJECT_PREFIX = "system:serviceaccount:"
LEEWAY_S = 60  # jwt.DefaultLeeway, for exp and nbf
PRIVATE_CLAIM = "kubernetes.io"

SigningKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
VerifyingKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


class TokenError(ValueError):
    """A token that is not good; the message says why (for the log, never the client)."""


def make_username(namespace: str, name: str) -> str:
    """serviceaccount.MakeUsername."""
    return f"{SUBJECT_PREFIX}{namespace}:{name}"


def split_username(username: str) -> tuple[str, str] | None:
    """serviceaccount.SplitUsername: (namespace, name), or None when not an SA's."""
    if not username.startswith(SUBJECT_PREFIX):
        return None
    parts = username[len(SUBJECT_PREFIX):].split(":")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise TokenError("malformed token segment") from None


def algorithm(key: SigningKey | VerifyingKey) -> str:
    """The JWS algorithm of a key, as upstream's signerFromSigningKey picks it."""
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        return "RS256"
    if key.curve.name == "secp256r1":
        return "ES256"
    raise TokenError(f"unsupported key curve {key.curve.name}")


def key_id(public: VerifyingKey) -> str:
    """keyIDFromPublicKey: base64url of the SHA-256 of the key's PKIX DER."""
    der = public.public_bytes(serialization.Encoding.DER,
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    return _b64(hashlib.sha256(der).digest())


@dataclass(frozen=True)
class Ref:
    name: str
    uid: str


@dataclass
class Claims:
    """What a token says (token.Claims' public and private claims)."""

    issuer: str
    namespace: str
    service_account: Ref
    audiences: list[str]
    issued_at: int
    not_before: int
    expiry: int
    jti: str = field(default_factory=lambda: str(uuid.uuid4()))
    pod: Ref | None = None
    secret: Ref | None = None
    node: Ref | None = None
    warn_after: int | None = None

    @property
    def subject(self) -> str:
        return make_username(self.namespace, self.service_account.name)

    def to_json(self) -> dict[str, Any]:
        private: dict[str, Any] = {"namespace": self.namespace,
                                   "serviceaccount": {"name": self.service_account.name,
                                                      "uid": self.service_account.uid}}
        for key, ref in (("node", self.node), ("pod", self.pod), ("secret", self.secret)):
            if ref is not None:
                private[key] = {"name": ref.name, "uid": ref.uid}
        if self.warn_after is not None:
            private["warnafter"] = self.warn_after
        return {"aud": self.audiences, "exp": self.expiry, "iat": self.issued_at,
                "iss": self.issuer, "jti": self.jti, PRIVATE_CLAIM: private,
                "nbf": self.not_before, "sub": self.subject}


def new_claims(issuer: str, namespace: str, service_account: Ref, audiences: list[str],
               expiration_seconds: int, *, now: float | None = None, pod: Ref | None = None,
               secret: Ref | None = None, node: Ref | None = None,
               warn_after: int | None = None) -> Claims:
    """token.Claims: issued and valid from now, for ``expiration_seconds``."""
    t = int(time.time() if now is None else now)
    return Claims(issuer, namespace, service_account, list(audiences), t, t,
                  t + expiration_seconds, pod=pod, secret=secret, node=node,
                  warn_after=warn_after)


def sign(claims: Claims, key: SigningKey) -> str:
    """The compact JWS of ``claims`` under ``key`` (jwtTokenGenerator.GenerateToken)."""
    alg = algorithm(key)
    header = {"alg": alg, "kid": key_id(key.public_key())}
    signing_input = (_b64(orjson.dumps(header)) + "." +
                     _b64(orjson.dumps(claims.to_json(), option=orjson.OPT_SORT_KEYS)))
    data = signing_input.encode()
    if isinstance(key, rsa.RSAPrivateKey):
        sig = key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    else:  # JWS wants r||s, 32 bytes each, not DER
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return signing_input + "." + _b64(sig)


def peek(token: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Header and payload of what looks like a JWS (three dot-separated segments of JSON
    objects), unverified; None for anything else (another authenticator's token)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header = orjson.loads(_unb64(parts[0]))
        payload = orjson.loads(_unb64(parts[1]))
    except (TokenError, orjson.JSONDecodeError):
        return None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        return None
    return header, payload


def verify_signature(token: str, keys: list[VerifyingKey]) -> dict[str, Any]:
    """The payload of ``token`` if one of ``keys`` signed it with the key's own algorithm
    (``alg: none`` and any other algorithm refused), else TokenError."""
    seen = peek(token)
    if seen is None:
        raise TokenError("token is not a JWS")
    header, payload = seen
    alg = header.get("alg")
    if alg not in ("RS256", "ES256"):
        raise TokenError(f"unsupported signing algorithm {alg!r}")
    signing_input, _, sig_text = token.rpartition(".")
    sig = _unb64(sig_text)
    for key in keys:
        if algorithm(key) != alg:
            continue
        try:
            if isinstance(key, rsa.RSAPublicKey):
                key.verify(sig, signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
            else:
                if len(sig) != 64:
                    continue
                der = encode_dss_signature(int.from_bytes(sig[:32], "big"),
                                           int.from_bytes(sig[32:], "big"))
                key.verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            continue
        return payload
    raise TokenError("invalid signature")


def _ref(value: Any, what: str) -> Ref | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not \
            isinstance(value.get("uid", ""), str):
        raise TokenError(f"malformed {what} claim")
    return Ref(value["name"], value.get("uid", ""))


def _number(payload: dict[str, Any], key: str) -> int:
    value = payload.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TokenError(f"missing or malformed {key} claim")
    return int(value)


def parse_claims(payload: dict[str, Any]) -> Claims:
    """The claims of a verified payload (a token upstream would not read is TokenError)."""
    private = payload.get(PRIVATE_CLAIM)
    if not isinstance(private, dict):
        raise TokenError("token does not contain kubernetes.io claims")
    sa = _ref(private.get("serviceaccount"), "serviceaccount")
    namespace = private.get("namespace")
    if sa is None or not isinstance(namespace, str) or not namespace:
        raise TokenError("token does not name a service account")
    aud = payload.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise TokenError("malformed aud claim")
    if payload.get("sub") != make_username(namespace, sa.name):
        raise TokenError("sub claim does not match the service account")
    warn = private.get("warnafter")
    return Claims(
        issuer=str(payload.get("iss", "")), namespace=namespace, service_account=sa,
        audiences=audiences, issued_at=_number(payload, "iat"),
        not_before=_number(payload, "nbf") if "nbf" in payload else 0,
        expiry=_number(payload, "exp"), jti=str(payload.get("jti", "")),
        pod=_ref(private.get("pod"), "pod"), secret=_ref(private.get("secret"), "secret"),
        node=_ref(private.get("node"), "node"),
        warn_after=int(warn) if isinstance(warn, int | float) else None)


def check_time(claims: Claims, now: float, leeway: int = LEEWAY_S) -> None:
    """jwt.Claims.ValidateWithLeeway as jwt.go words its failures."""
    if now > claims.expiry + leeway:
        raise TokenError("service account token has expired")
    if now + leeway < claims.not_before:
        raise TokenError("service account token is not valid yet")
    if now + leeway < claims.issued_at:
        raise TokenError("service account token issued in the future")


def check_audiences(claims: Claims, accepted: list[str]) -> list[str]:
    """The token's audiences this server accepts (authenticator.Audiences.Intersect);
    none is TokenError, in jwt.go's words."""
    both = [a for a in accepted if a in claims.audiences]
    if not both:
        raise TokenError(f"token audiences {claims.audiences!r} is invalid for the target "
                         f"audiences {accepted!r}")
    return both
