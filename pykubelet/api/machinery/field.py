"""Structured field errors, as upstream's k8s.io/apimachinery/pkg/util/validation/field.

A FieldError is data (type, field path, bad value, detail) whose text is exactly what kubectl
prints for it, `spec.containers[0].image: Required value`. The API server turns a list of them
into a 422 Invalid Status whose `details.causes` are `{reason: type, message: body, field}`
(see errors.ValidationError), so every client prints one line per cause.

Paths are plain strings built as upstream's field.Path prints them: `child(p, "spec")`,
`index(p, 0)` and `key(p, "app")` give `spec`, `spec[0]`, `spec[app]`.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final


class ErrorType(enum.StrEnum):
    """field.ErrorType: the machine-readable kind of problem, a StatusCause's `reason`."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"

    @property
    def message(self) -> str:
        """ErrorType.String(): the words users read."""
        return _MESSAGES[self]


_MESSAGES: Final = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}
# Types whose body never shows the bad value (ErrorBody's first cases).
_VALUE_HIDDEN: Final = frozenset(
    {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}
)


class _Omit:
    """The bad value of an error that has none to show (upstream's omitValue)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field (upstream's field.Error)."""

    type: ErrorType
    field: str
    bad_value: Any = ""
    detail: str = ""

    def body(self) -> str:
        """ErrorBody(): the message without the field path (a StatusCause's `message`)."""
        if self.type in _VALUE_HIDDEN or self.bad_value is OMIT:
            text = self.type.message
        else:
            text = f"{self.type.message}: {format_value(self.bad_value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        """The metav1.StatusCause the API server answers with."""
        return {"reason": str(self.type), "message": self.body(), "field": self.field}


ErrorList = list[FieldError]


# --------------------------------------------------------------------------- constructors


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, "", detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail)


def type_invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.TYPE_INVALID, path, value, detail)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> FieldError:
    values = ", ".join(go_quote(s) for s in supported)
    return FieldError(
        ErrorType.NOT_SUPPORTED, path, value, f"supported values: {values}" if values else ""
    )


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value)


def not_found(path: str, value: Any) -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, path, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, "", detail)


def too_long(path: str, value: Any, max_length: int) -> FieldError:
    """TooLong: the value is not shown, only the limit in bytes."""
    return FieldError(ErrorType.TOO_LONG, path, value, f"must have at most {max_length} bytes")


def too_long_max_length(path: str, value: Any, max_length: int) -> FieldError:
    detail = f"may not be longer than {max_length}" if max_length >= 0 else "value is too long"
    return FieldError(ErrorType.TOO_LONG, path, value, detail)


def too_many(path: str, actual: int, max_quantity: int) -> FieldError:
    detail = "has too many items"
    if max_quantity >= 0:
        detail = f"must have at most {max_quantity} items"
    return FieldError(ErrorType.TOO_MANY, path, actual if actual >= 0 else OMIT, detail)


def internal_error(path: str, err: BaseException | str) -> FieldError:
    return FieldError(ErrorType.INTERNAL, path, None, str(err))


# --------------------------------------------------------------------------- paths


def child(path: str, *names: str) -> str:
    """path.Child(name...): `spec` + `containers` -> `spec.containers`."""
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    """path.Index(i): `spec.containers[0]`."""
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """path.Key(k): `metadata.labels[app]`."""
    return f"{path}[{k}]"


# --------------------------------------------------------------------------- formatting


def go_quote(text: str) -> str:
    """Go's strconv.Quote (%q): what field errors print around a string."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'  # the common case, without a loop over every character
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


# the most of a bad value an error shows: a 2.9 MB name was echoed six times in one answer
MAX_SHOWN: Final = 256
TRUNCATED: Final = "...(truncated)"


def shorten(text: str, limit: int = MAX_SHOWN) -> str:
    """``text``, or its first ``limit`` characters and a mark that the rest was cut."""
    return text if len(text) <= limit else text[:limit] + TRUNCATED


def format_value(value: Any) -> str:
    """How ErrorBody prints a bad value: %q for strings, %v for numbers and booleans; at
    most MAX_SHOWN characters of it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if len(value) > MAX_SHOWN:
            return go_quote(value[:MAX_SHOWN]) + TRUNCATED
        return go_quote(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, Sequence | dict):
        return shorten(json.dumps(value, sort_keys=True, default=str))
    return shorten(str(value))


def messages(errors: Iterable[FieldError]) -> list[str]:
    """Each error's text once, in order (ErrorList.ToAggregate drops repeats)."""
    seen: dict[str, None] = {}
    for err in errors:
        seen.setdefault(str(err), None)
    return list(seen)
