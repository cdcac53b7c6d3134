"""Kubernetes resource quantities ("500m", "1Gi", "1e3"): the project's one module for them,
as apimachinery's resource package is upstream's.

  parse_parts     resource.ParseQuantity, bounded: the exact value, its format, and whether it
                  is what the text says (capped at the largest int64, rounded up to a nano)
  parse_quantity  the value alone (cached), with milli_value/int_value as the scheduler reads
                  them: Quantity.MilliValue() and Value(), both rounded *up* as upstream does
  Quantity        what the API model holds: the exact value plus the text it was written as
                  (kept for encoding back), and String()'s canonical text for describe
  invalid_quantity  the one message for a value that is no quantity, in every decoder

Standard library only (and the field errors beside it): pykubectl imports this module on its
start-up path, so nothing heavy may come with it (tests/unit/cli/kubectl/test_kubectl_imports.py).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.machinery.field import shorten

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}  # powers of 2
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
            "E": 18}  # powers of 10
_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")

BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"
# resource.ParseQuantity caps at maxAllowed (the largest int64) and rounds every non-zero
# value up to a nano; upstream caps only BinarySI and keeps huge decimals as a scaled
# big number, but every reader of one (Value, MilliValue: int64) overflows, so the cap
# is what any consumer can see of it
MAX_QUANTITY = 2**63 - 1
_NANO = Fraction(1, 10**9)
_MAX_DIGITS = 21  # 10^20 > MAX_QUANTITY: more integral digits than this is past the cap
# apimachinery's errors, word for word
ERR_FORMAT = ("quantities must match the regular expression "
              "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The value of a quantity (a bare int/float is taken as is, as YAML gives it)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or number, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):  # YAML's .inf and .nan: no quantity, as "inf" is none
            raise QuantityError(invalid_quantity(value, ERR_FORMAT))
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"quantity must be a string or number, not {type(value).__name__}")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """Cached: a cluster's lists repeat the same few quantities ("4", "32Gi", "110")."""
    return parse_parts(value)[0]


def parse_parts(text: str) -> tuple[Fraction, str, bool]:
    """resource.ParseQuantity: the value, its format (BinarySI, DecimalSI or
    DecimalExponent) and whether the value is exactly what the text says (not capped or
    rounded). The exponent is read as an int64 (and used as an int32, as upstream
    does), never expanded: a value past MAX_QUANTITY is capped without computing it, one
    below a nano rounds up to 1n."""
    text = text.strip()
    m = _RE.fullmatch(text)
    if not m or not (m.group(2) or m.group(3)):
        raise QuantityError(ERR_FORMAT)
    sign, num, denom, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4) or ""
    if suffix in _BINARY:
        fmt, base, exp = BINARY_SI, 2, _BINARY[suffix]
    elif suffix in _DECIMAL:
        fmt, base, exp = DECIMAL_SI, 10, _DECIMAL[suffix]
    else:
        fmt, base = DECIMAL_EXPONENT, 10
        if len(suffix) > 21:
            raise QuantityError(ERR_SUFFIX)
        exp = int(suffix[1:])
        if not -(2**63) <= exp < 2**63:  # strconv.ParseInt(s, 10, 64)
            raise QuantityError(ERR_SUFFIX)
        exp = (exp + 2**31) % 2**32 - 2**31  # int32(parsed)
    digits = (num + denom).lstrip("0")
    if not digits:
        return Fraction(0), fmt, True
    if len(digits) > 4000:
        raise QuantityError(ERR_NUMERIC)
    mantissa = int(digits)
    # the value is mantissa * base^exp / 10^len(denom); its integral digits, roughly:
    scale10 = (exp * 3 // 10 + 1 if base == 2 else exp) - len(denom)
    exact = False
    if len(digits) + scale10 > _MAX_DIGITS:
        magnitude = Fraction(MAX_QUANTITY)
    elif len(digits) + scale10 < -9:
        magnitude = _NANO
    else:
        magnitude = Fraction(mantissa * (2**exp if base == 2 else 1), 10 ** len(denom))
        if base == 10:
            magnitude *= Fraction(10) ** exp
        exact = True
        if (magnitude * 10**9).denominator != 1:  # round up to a nano, away from zero
            magnitude = Fraction(math.ceil(magnitude * 10**9), 10**9)
            exact = False
        if magnitude > MAX_QUANTITY:
            magnitude, exact = Fraction(MAX_QUANTITY), False
    return (-magnitude if sign == "-" else magnitude), fmt, exact


def milli_value(value: str | int | float) -> int:
    """Quantity.MilliValue(): thousandths, rounded up."""
    if type(value) is str:
        return _milli_text(value)
    return math.ceil(parse_quantity(value) * 1000)


def int_value(value: str | int | float) -> int:
    """Quantity.Value(): whole units, rounded up."""
    if type(value) is str:
        return _int_text(value)
    return math.ceil(parse_quantity(value))


@functools.lru_cache(maxsize=4096)
def _milli_text(value: str) -> int:
    return math.ceil(_parse_text(value) * 1000)


@functools.lru_cache(maxsize=4096)
def _int_text(value: str) -> int:
    return math.ceil(_parse_text(value))


def invalid_quantity(value: Any, reason: str = "") -> str:
    """The one message for a value that is no quantity, in both object models: the value
    (at most 256 characters of it) and resource.ParseQuantity's own words."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"invalid quantity {shorten(repr(value))}"
    text = f'invalid quantity "{shorten(str(value))}"'
    return f"{text}: {reason}" if reason else text


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity plus the text it was written as (and its format, for String())."""

    text: str
    exact: Fraction
    format: str = field(default=DECIMAL_SI, compare=False)

    @classmethod
    def parse(cls, value: object) -> Quantity:
        """A quantity as the API reads one: strictly (QuantityError with upstream's words)."""
        if type(value) is str:
            return _parse_str(value)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise QuantityError(invalid_quantity(value))
        return cls._parse_text(value if isinstance(value, str) else _number_text(value))

    @classmethod
    def _parse_text(cls, text: str) -> Quantity:
        if text != text.strip():
            raise QuantityError(invalid_quantity(text, ERR_FORMAT))
        try:
            exact, fmt, as_written = parse_parts(text)
        except ValueError as exc:
            raise QuantityError(invalid_quantity(text, str(exc))) from exc
        if not as_written:  # capped or rounded: what is kept is what the value is
            text = _plain_text(exact)
        return cls(text=text, exact=exact, format=fmt)

    @classmethod
    def canonical_of(cls, value: object) -> Quantity:
        """A quantity as ``kubectl describe`` shows one, its text String()'s canonical form
        (``1.5`` -> ``1500m``); unreadable text counts as zero (describe shows what it can
        rather than fail)."""
        if isinstance(value, bool):
            return ZERO
        if isinstance(value, int | float):
            exact, fmt = Fraction(str(value)), DECIMAL_SI
        else:
            try:
                exact, fmt, _ = parse_parts(str(value))
            except ValueError:
                return ZERO
        return cls(canonical(exact, fmt), exact, fmt)

    @classmethod
    def __k8s_decode__(cls, value: object) -> Quantity:
        """The walker's converter (pykubelet.api.machinery.codec)."""
        try:
            return cls.parse(value)
        except QuantityError as exc:
            raise DecodeError("", str(exc)) from None

    def __k8s_encode__(self) -> str:
        return self.text

    @classmethod
    def from_milli(cls, milli: int) -> Quantity:
        text = f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"
        return cls(text=text, exact=Fraction(milli, 1000))

    @classmethod
    def from_int(cls, value: int) -> Quantity:
        return cls(text=str(value), exact=Fraction(value))

    def __add__(self, other: Quantity) -> Quantity:
        """Quantity.Add: the sum keeps the first operand's format, in canonical text."""
        exact = self.exact + other.exact
        return Quantity(canonical(exact, self.format), exact, self.format)

    def __gt__(self, other: Quantity) -> bool:
        """Quantity.Cmp(other) > 0: by value, whatever the texts."""
        return self.exact > other.exact

    def __lt__(self, other: Quantity) -> bool:
        return self.exact < other.exact

    def value(self) -> int:
        """The value rounded up to an integer (bytes, pods), as Quantity.Value()."""
        return math.ceil(self.exact)

    def milli_value(self) -> int:
        """Thousandths rounded up (millicores), as Quantity.MilliValue()."""
        return math.ceil(self.exact * 1000)

    def is_zero(self) -> bool:
        return self.exact == 0

    def canonical(self) -> str:
        """Quantity.String(): the canonical text of the value in its format."""
        return canonical(self.exact, self.format)

    def __str__(self) -> str:
        return self.text


ZERO = Quantity("0", Fraction(0))


@functools.lru_cache(maxsize=4096)
def _parse_str(text: str) -> Quantity:
    """Quantity.parse of a text, cached: manifests repeat a few quantities ("100m", "1Gi")
    thousands of times, and a Quantity is immutable (a failure is not cached: it raises)."""
    return Quantity._parse_text(text)

_BINARY_BY_POWER = {e // 10: s for s, e in _BINARY.items()}  # 1 -> "Ki", ... 6 -> "Ei"
_DECIMAL_BY_EXP = {e: s for s, e in _DECIMAL.items()}


def canonical(value: Fraction, fmt: str) -> str:
    """resource.Quantity's canonical text: binary suffixes for a BinarySI value of at least
    1Ki that is a whole multiple, else the smallest integral mantissa at a power of 1000 (no
    finer than nano), rounded up; DecimalExponent writes the power as ``eN``."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    v = abs(value)
    if fmt == BINARY_SI and v >= 1024:
        n = math.ceil(v)
        k = 0
        while k < 6 and n % 1024 == 0:
            n //= 1024
            k += 1
        return f"{sign}{n}{_BINARY_BY_POWER[k]}" if k else f"{sign}{n}"
    n = math.ceil(v * Fraction(10) ** 9)
    exp = -9
    while exp < 18 and n % 1000 == 0:
        n //= 1000
        exp += 3
    if fmt == DECIMAL_EXPONENT:
        return f"{sign}{n}" + (f"e{exp}" if exp else "")
    return f"{sign}{n}{_DECIMAL_BY_EXP[exp]}"


def _plain_text(value: Fraction) -> str:
    """A value that upstream's parser capped or rounded (at most the largest int64, whole
    nanos), written as it now is: "9223372036854775807", "976563n"."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value * 10**9}n"


def _number_text(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
