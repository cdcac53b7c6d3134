"""Continue tokens, as apiserver's storage/continue.go encodes them.

A token is base64url (no padding) of ``{"v":"meta.k8s.io/v1","rv":N,"start":K}``: ``N``
the revision the first page was read at, ``K`` the key to go on from, relative to the
list's key prefix (``<name>\\0`` in one namespace, ``<namespace>/<name>\\0`` across them).
Nothing is kept on the server: a continuation reads the request's own resource,
namespace and selectors at ``N``, so a token from another list can only move the start
of this one (upstream's design), and a token outlives the server that made it. ``rv`` -1
(handed out with a 410 when ``N`` is gone) means "go on at the latest revision".
"""

from __future__ import annotations

import base64
import binascii
import posixpath

import orjson

API_VERSION = "meta.k8s.io/v1"

# upstream's messages (storage.ErrInvalidStartRV and the others)
INVALID_START_RV = ("continue key is not valid: incorrect encoded start resourceVersion "
                    "(version meta.k8s.io/v1)")
EMPTY_START_KEY = "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
GENERIC_INVALID_KEY = "continue key is not valid"
UNRECOGNIZED_VERSION = "continue key is not valid: server does not recognize this encoded version"


def encode_continue(key: str, key_prefix: str, rev: int) -> str:
    """The token going on from ``key`` (the key after the last one sent) at ``rev``."""
    if not key.startswith(key_prefix) or key == key_prefix:
        raise ValueError(f"unable to encode next field: the key and key prefix do not match "
                         f"{key_prefix} {key}")
    raw = orjson.dumps({"v": API_VERSION, "rv": rev, "start": key[len(key_prefix):]})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _clean(key: str) -> str:
    """Go's path.Clean for a rooted path."""
    cleaned = posixpath.normpath(key)
    return "/" + cleaned.lstrip("/")


def decode_continue(value: str, key_prefix: str, depth: int) -> tuple[str, int]:
    """(the absolute key to start from, the revision) of a token; ValueError with
    upstream's message when it is not one. ``depth``: how many path segments a key under
    ``key_prefix`` has (1 in one namespace or for cluster objects, 2 across namespaces),
    so a token of a list across namespaces cannot reach below one namespace's names."""
    try:
        if "=" in value:
            raise ValueError("illegal base64 data")
        data = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_",
                                validate=True)
        doc = orjson.loads(data)
    except (ValueError, binascii.Error) as exc:
        raise ValueError(f"{GENERIC_INVALID_KEY}: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{GENERIC_INVALID_KEY}: not an object")
    version = doc.get("v")
    if version != API_VERSION:
        raise ValueError(f"{UNRECOGNIZED_VERSION} {version}")
    rev, start = doc.get("rv", 0), doc.get("start", "")
    if not isinstance(rev, int) or isinstance(rev, bool) or rev == 0 or rev < -1:
        raise ValueError(INVALID_START_RV)
    if not isinstance(start, str) or not start:
        raise ValueError(EMPTY_START_KEY)
    # path traversal: the cleaned key must be the key, so it stays under the prefix
    key = start if start.startswith("/") else "/" + start
    if _clean(key) != key or key.count("/") > depth:
        raise ValueError(f"{GENERIC_INVALID_KEY}: {start}")
    return key_prefix + key[1:], rev
