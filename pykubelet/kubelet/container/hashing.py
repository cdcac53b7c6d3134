"""The container spec hash kubelet stores in the io.kubernetes.container.hash annotation.

Upstream (pkg/kubelet/container/helpers.go HashContainer) hashes only the fields
that force a restart when they change, `name` and `image` (other container fields are
immutable through the API, or resized in place):

    json.Marshal(map[string]string{"name": ..., "image": ...})
    DeepHashObject(fnv32a, thatJSON)   # spew "%#v" of the []byte

spew prints a []byte under "%#v" as `([]uint8)[123 34 ...]` (decimal bytes, space
separated), and that is what is fed to FNV-1a 32. The annotation carries the value in
hex (strconv.FormatUint(hash, 16)).
"""

from __future__ import annotations

import json

from pykubelet.api.types import Container

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193


def fnv1a_32(data: bytes) -> int:
    h = _FNV32_OFFSET
    for byte in data:
        h ^= byte
        h = (h * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def go_json_marshal_str_map(fields: dict[str, str]) -> bytes:
    """encoding/json of a map[string]string: sorted keys, compact, HTML-safe escapes."""
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text.encode()


def deep_hash_json(data: bytes) -> int:
    """hashutil.DeepHashObject(fnv32a, data) for a []byte: spew's `([]uint8)[123 34 ...]`."""
    spewed = "([]uint8)[" + " ".join(str(b) for b in data) + "]"
    return fnv1a_32(spewed.encode())


def hash_container(container: Container) -> int:
    """kubecontainer.HashContainer."""
    return deep_hash_json(
        go_json_marshal_str_map({"name": container.name, "image": container.image})
    )


def hash_container_hex(container: Container) -> str:
    """The annotation's form: lower-case hex without leading zeros."""
    return format(hash_container(container), "x")
