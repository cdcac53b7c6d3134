"""Kubernetes resource quantities ("500m", "1Gi", "1e3") parsed exactly.

apimachinery's resource.Quantity rounds *up* when asked for MilliValue() or
Value(); we keep the exact rational and do the same.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_RE = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity (a bare int/float is taken as is, as YAML gives it)."""
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
    m = _RE.match(value.strip())
    if not m or value.strip() == "":
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    sign, num, suffix = m.group(1), m.group(2), m.group(3) or ""
    number = Fraction(num)
    if suffix in _BINARY:
        number *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        number *= _DECIMAL[suffix]
    else:  # decimal exponent
        number *= Fraction(10) ** int(suffix[1:])
    return -number if sign == "-" else number


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
