"""JSON for the exec'd plugins' start path, without importing :mod:`json`.

Every CNI call of an exec'd plugin starts a fresh interpreter, and ``import json``
alone costs it ~20 ms here: json's pure-Python half compiles regular expressions at
import, which brings ``re``, ``enum``, ``functools`` and more. The C half, ``_json``,
is built in and does the work anyway: its scanner parses (it falls back to nothing
in ``json.decoder`` unless the input is malformed, when it imports it for the
error), and its string escaper quotes. What is left here is the small encoder for
the plain values a CNI message holds (dict, list, tuple, str, int, float, bool,
None), byte-for-byte what ``json.dumps`` writes with its defaults or ``indent``.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start
if TYPE_CHECKING:
    from typing import Any

_quote = _json.encode_basestring_ascii


def _constant(name: str) -> float:
    return float(name)  # NaN, Infinity, -Infinity: float() reads them as json does


class _Context:
    """What ``_json.make_scanner`` reads from a ``json.JSONDecoder``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)


_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # a duck-typed context
_WHITESPACE = " \t\n\r"


def loads(data: str | bytes | bytearray) -> Any:
    """Like ``json.loads``: ValueError (json's JSONDecodeError) on malformed input."""
    text = data.decode("utf-8-sig") if isinstance(data, bytes | bytearray) else data
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        obj, end = _scan(text, start)
    except StopIteration as stop:
        from json.decoder import JSONDecodeError  # the error path only

        raise JSONDecodeError("Expecting value", text, stop.value) from None
    rest = text[end:].lstrip(_WHITESPACE)
    if rest:
        from json.decoder import JSONDecodeError

        raise JSONDecodeError("Extra data", text, len(text) - len(rest))
    return obj


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return _float(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _encode(obj: object, out: list[str], indent: str | None, level: int) -> None:
    if isinstance(obj, str):
        out.append(_quote(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        out.append(_float(obj))
    elif isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        sep, close = _separators(indent, level)
        out.append("{")
        first = True
        for k, v in obj.items():
            out.append(sep[0] if first else sep[1])
            first = False
            out.append(_quote(_key(k)))
            out.append(": ")
            _encode(v, out, indent, level + 1)
        out.append(close + "}")
    elif isinstance(obj, list | tuple):
        if not obj:
            out.append("[]")
            return
        sep, close = _separators(indent, level)
        out.append("[")
        for i, v in enumerate(obj):
            out.append(sep[0] if i == 0 else sep[1])
            _encode(v, out, indent, level + 1)
        out.append(close + "]")
    else:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _separators(indent: str | None, level: int) -> tuple[tuple[str, str], str]:
    """(before the first item, between items), and before the closing bracket."""
    if indent is None:
        return ("", ", "), ""
    inner = "\n" + indent * (level + 1)
    return (inner, "," + inner), "\n" + indent * level


def dumps(obj: object, indent: int | None = None) -> str:
    """Like ``json.dumps(obj)`` or ``json.dumps(obj, indent=n)`` for plain values."""
    out: list[str] = []
    _encode(obj, out, None if indent is None else " " * indent, 0)
    return "".join(out)
