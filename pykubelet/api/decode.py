"""Strict decoding of API objects from plain dicts (JSON/YAML) and encoding back.

The walker is the ground floor's (pykubelet.api.machinery.codec), shared with pysched: every
unknown or ill-typed field is an error naming its path the way kubectl prints it
(`spec.containers[0].resources.limits.cpu: invalid quantity "abc"`); a field upstream has and
types.py does not model is checked against upstream's schema and kept, so it goes back out.
A JSON null is read as "unset", as Go's decoder does. Encoding produces camelCase dicts fit for
json.dumps / yaml.safe_dump, leaving out empty fields (see types.py for the rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pykubelet.api.errors import DecodeError
from pykubelet.api.machinery import codec
from pykubelet.api.machinery.codec import camel, decode_value, describe, encode
from pykubelet.api.types import Pod

__all__ = [
    "camel",
    "check_kind",
    "decode_object",
    "decode_pod",
    "decode_value",
    "encode",
    "encode_pod",
]

T = TypeVar("T")


def decode_object(
    cls: type[T], value: Any, path: str = "", *, unknown: list[str] | None = None
) -> T:
    """Decode a mapping into the dataclass `cls`; unknown keys are errors (or, given an
    `unknown` list, collected there and dropped)."""
    return codec.decode(cls, value, path, unknown=unknown)


def check_kind(value: Any, kind: str, api_version: str) -> None:
    """`apiVersion`/`kind`, when given, must be the kind's."""
    if not isinstance(value, Mapping):
        raise DecodeError("", f"expected a {kind} object, got {describe(value)}")
    got_kind = value.get("kind", kind)
    if got_kind != kind:
        raise DecodeError("kind", f'expected "{kind}", got {got_kind!r}')
    got_version = value.get("apiVersion", api_version)
    if got_version != api_version:
        raise DecodeError("apiVersion", f'expected "{api_version}", got {got_version!r}')


def decode_pod(value: Any, *, unknown: list[str] | None = None) -> Pod:
    """Decode a v1 Pod. `apiVersion`/`kind`, when given, must be `v1`/`Pod`."""
    check_kind(value, "Pod", "v1")
    return codec.decode(Pod, value, unknown=unknown)


def encode_pod(pod: Pod) -> dict[str, Any]:
    encoded: dict[str, Any] = encode(pod)
    if not encoded.get("status"):
        encoded.pop("status", None)
    return encoded
