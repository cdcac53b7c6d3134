"""Kubernetes resource quantities ("500m", "1Gi", "1e3") parsed exactly, within bounds.

apimachinery's resource.Quantity rounds *up* when asked for MilliValue() or
Value(); we keep the exact rational and do the same.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

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
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The value of a quantity (a bare int/float is taken as is, as YAML gives it)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or number, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
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
