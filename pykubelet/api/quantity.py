"""Kubernetes resource quantities ("500m", "1Gi", "1e3") kept exact.

apimachinery's resource.Quantity rounds *up* in Value() and MilliValue(); we keep the
exact rational and do the same. The text the user wrote is kept for encoding back.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
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
    """A value that is not a Kubernetes quantity."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity plus the text it was written as."""

    text: str
    exact: Fraction

    @classmethod
    def parse(cls, value: object) -> Quantity:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise QuantityError(f"invalid quantity {value!r}")
        text = value if isinstance(value, str) else _number_text(value)
        m = _RE.match(text)
        if not m:
            raise QuantityError(f'invalid quantity "{text}"')
        sign, number, suffix = m.group(1), m.group(2), m.group(3) or ""
        exact = Fraction(number)
        if suffix in _BINARY:
            exact *= _BINARY[suffix]
        elif suffix in _DECIMAL:
            exact *= _DECIMAL[suffix]
        else:
            exact *= Fraction(10) ** int(suffix[1:])
        if sign == "-":
            exact = -exact
        return cls(text=text, exact=exact)

    @classmethod
    def from_milli(cls, milli: int) -> Quantity:
        text = f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"
        return cls(text=text, exact=Fraction(milli, 1000))

    @classmethod
    def from_int(cls, value: int) -> Quantity:
        return cls(text=str(value), exact=Fraction(value))

    def value(self) -> int:
        """The value rounded up to an integer (bytes, pods), as Quantity.Value()."""
        return math.ceil(self.exact)

    def milli_value(self) -> int:
        """Thousandths rounded up (millicores), as Quantity.MilliValue()."""
        return math.ceil(self.exact * 1000)

    def is_zero(self) -> bool:
        return self.exact == 0

    def __str__(self) -> str:
        return self.text


def _number_text(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def parse_quantity(value: object) -> Quantity:
    return Quantity.parse(value)
