"""Content negotiation as kube-apiserver's endpoints/handlers/negotiation does it, and the
strict JSON decoder's duplicate-field check.

A request body is read in the media type its Content-Type names (none means JSON), and a
type the server does not speak is 415, not read as JSON; an Accept header that admits
none of the server's types is 406. A JSON object that names a field twice is what
sigs.k8s.io/json's strict decoding reports as ``duplicate field "<path>"``.
"""

from __future__ import annotations

import json
from typing import Any

from pykubelet.controlplane import errors

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
SERIALIZERS = (JSON, YAML, PROTOBUF)


def media_type(header: str) -> str:
    """The type/subtype of a Content-Type or Accept entry, lower case, parameters off."""
    return header.split(";", 1)[0].strip().lower()


def body_type(header: str | None) -> str:
    """NegotiateInputSerializer: the media type a body is read as (JSON when none is
    named); anything the server cannot decode is 415."""
    if header is None or not header.strip():
        return JSON
    mt = media_type(header)
    if mt not in SERIALIZERS:
        raise errors.StatusError(
            415, errors.UNSUPPORTED_MEDIA_TYPE,
            "the body of the request was in an unknown format - accepted media types "
            "include: " + ", ".join(SERIALIZERS))
    return mt


def check_accept(header: str | None) -> None:
    """NegotiateOutputMediaType: some entry of Accept must admit one of the server's
    types (``*/*``, ``application/*``, or one of them, with any parameters); else 406."""
    if header is None or not header.strip():
        return
    for entry in header.split(","):
        mt = media_type(entry)
        if mt in ("*/*", "application/*", "*") or mt in SERIALIZERS:
            return
    raise errors.StatusError(406, errors.NOT_ACCEPTABLE,
                          "only the following media types are accepted: "
                          + ", ".join(SERIALIZERS))


class _Twice(dict[str, Any]):
    """An object the decoder saw a key of twice (those keys in ``twice``)."""

    twice: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    twice = _Twice(obj)
    seen: set[str] = set()
    twice.twice = []
    for k, _ in pairs:
        if k in seen and k not in twice.twice:
            twice.twice.append(k)
        seen.add(k)
    return twice


def duplicate_fields(raw: bytes) -> list[str]:
    """The paths of fields a JSON document names more than once ("metadata.name",
    "spec.containers[0].image"), in document order; [] for anything that does not parse
    (the caller's own decoder reports that)."""
    try:
        doc = json.loads(raw, object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return []
    out: list[str] = []
    _collect(doc, "", out)
    return out


def _collect(value: Any, path: str, out: list[str]) -> None:
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            if isinstance(node, _Twice):
                out.extend(f"{at}.{k}" if at else k for k in node.twice)
            for k, v in reversed(list(node.items())):
                if isinstance(v, dict | list):
                    stack.append((v, f"{at}.{k}" if at else k))
        elif isinstance(node, list):
            for i in range(len(node) - 1, -1, -1):
                if isinstance(node[i], dict | list):
                    stack.append((node[i], f"{at}[{i}]"))


def wants_table(accept: str) -> str | None:
    """The Table apiVersion an Accept header asks for first (``as=Table;g=meta.k8s.io``
    with ``v=v1`` or ``v=v1beta1``), None when it asks for objects."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if "as=Table" in params and "g=meta.k8s.io" in params:
            if "v=v1" in params:
                return "meta.k8s.io/v1"
            if "v=v1beta1" in params:
                return "meta.k8s.io/v1beta1"
    return None
