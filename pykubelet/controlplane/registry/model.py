"""The object model as the registry uses it: decode (strict, or dropping unknown fields
with a warning, as fieldValidation asks), default, validate, per kind.

Every kind goes through ``pykubelet.api``'s typed model where it has one; the registry
only ever sees canonical dicts (what the model encodes), so what a client reads back
looks as it would from a real cluster.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from pykubelet.api.decode import decode_object, encode
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.errors import DecodeError
from pykubelet.api.types import Pod
from pykubelet.api.validation import pod_errors

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


class UnknownFieldsError(ValueError):
    """Strict decoding found fields the kind does not have (400 BadRequest)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        if len(paths) == 1:
            msg = f'strict decoding error: unknown field "{paths[0]}"'
        else:
            msg = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)
        super().__init__(msg)


def _drop(obj: Any, path: str) -> bool:
    """Remove the field at ``path`` (``spec.containers[0].foo``) from ``obj``."""
    parts: list[str | int] = [m.group(1) if m.group(1) is not None else int(m.group(2))
                              for m in _PATH_PART.finditer(path)]
    cur = obj
    for p in parts[:-1]:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return False
    last = parts[-1]
    if isinstance(cur, dict) and last in cur:
        del cur[last]
        return True
    return False


def decode_typed(
    decoder: Callable[[Any], Any], body: dict[str, Any], unknown: str
) -> tuple[Any, list[str]]:
    """Decode ``body`` with ``decoder``; unknown fields are collected (all of them, so a
    strict error names every one), then refused or dropped as ``unknown`` says."""
    work = body
    paths: list[str] = []
    for _ in range(64):
        try:
            typed = decoder(work)
            break
        except DecodeError as exc:
            if exc.problem != "unknown field":
                raise
            if work is body:
                work = copy.deepcopy(body)
            if not _drop(work, exc.path):
                raise
            paths.append(exc.path)
    else:  # pragma: no cover - a body with more than 64 unknown fields
        raise UnknownFieldsError(paths)
    if paths and unknown == STRICT:
        raise UnknownFieldsError(paths)
    warnings = [f'unknown field "{p}"' for p in paths] if unknown == WARN else []
    return typed, warnings


def decode_pod(body: dict[str, Any], unknown: str = STRICT) -> tuple[dict[str, Any], list[str]]:
    pod, warnings = decode_typed(lambda v: decode_object(Pod, v), body, unknown)
    set_defaults_pod(pod)
    out: dict[str, Any] = encode(pod)
    return out, warnings


def pod_field_errors(obj: dict[str, Any]) -> list[Any]:
    pod = decode_object(Pod, obj)
    return list(pod_errors(pod))
