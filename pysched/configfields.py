"""Strict decoding of the scheduler's configuration documents (a KubeSchedulerConfiguration
and the extenders it names), as its strict decoding does: an object's fields all known,
each field of its one JSON type, and an error that names the field. Each caller raises its
own error type (``error``), so the extenders' decoding stays usable on its own."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

D = TypeVar("D")
V = TypeVar("V")

ErrorFn = Callable[[str], Exception]

_WORDS = {int: "an integer", str: "a string", bool: "a boolean", list: "a list",
          dict: "an object"}


def field_path(path: str, key: str) -> str:
    """``path.key``, or ``key`` at the top of the document; a key that would not show as
    itself (empty, spaces, control characters, not a string) in quotes."""
    if not isinstance(key, str) or not key or not key.isprintable() or " " in key:
        key = json.dumps(key if isinstance(key, str) else str(key))
    return f"{path}.{key}" if path else key


def known_object(v: Any, path: str, known: set[str], error: ErrorFn) -> dict[str, Any]:
    """An object whose fields are all in ``known`` (the first other one is an error)."""
    if not isinstance(v, dict):
        raise error(f"{path}: expected an object, got {type(v).__name__}")
    for k in v:
        if k not in known:
            raise error(f"{field_path(path, k)}: unknown field")
    return v


def typed(d: Mapping[str, Any], key: str, path: str, default: D, want: type[V],
          error: ErrorFn) -> V | D:
    """A field of one JSON type: absent or null is ``default``, another type an error that
    names the field (a boolean is not an integer, as in Go's decoding)."""
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, want) or (want is int and isinstance(v, bool)):
        word = _WORDS.get(want, f"a {want.__name__}")
        raise error(f"{field_path(path, key)}: expected {word}, got {type(v).__name__}")
    return v
