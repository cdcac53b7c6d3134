"""Resource quantities as ``describe`` prints them (apimachinery's resource.Quantity): exact
values, sums, ``Value()``/``MilliValue()`` rounded up, and the canonical text
(``1.5`` -> ``1500m``, ``2000`` -> ``2k``, ``1024Mi`` -> ``1Gi``, ``512`` in binary -> ``512``).
The parser is pykubelet.api.machinery.quantity's (standard library only), so
"1e6000000" costs nothing."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

# the one bounded parser (pykubelet.api.machinery.quantity imports only the standard library)
from pykubelet.api.machinery.quantity import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, parse_parts

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
            "E": 18}


@dataclass(frozen=True)
class Quantity:
    value: Fraction
    format: str = DECIMAL_SI

    @classmethod
    def parse(cls, text: object) -> Quantity:
        """A quantity from its JSON form; unreadable text counts as zero (describe shows
        what it can rather than fail)."""
        if isinstance(text, bool):
            return cls(Fraction(0))
        if isinstance(text, int | float):
            return cls(Fraction(str(text)))
        try:
            value, fmt, _ = parse_parts(str(text))
        except ValueError:
            return cls(Fraction(0))
        return cls(value, fmt)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.format)

    def value_ceil(self) -> int:
        return math.ceil(self.value)

    def milli_ceil(self) -> int:
        return math.ceil(self.value * 1000)

    def __str__(self) -> str:
        return canonical(self.value, self.format)


ZERO = Quantity(Fraction(0))


def canonical(value: Fraction, fmt: str) -> str:
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
        if k == 0:
            return f"{sign}{n}"
        return f"{sign}{n}{next(s for s, e in _BINARY.items() if e == k)}"
    # decimal: the smallest integral mantissa at a power of 1000 (no finer than nano)
    scaled = v * Fraction(10) ** 9
    n = math.ceil(scaled)
    exp = -9
    while exp < 18 and n % 1000 == 0:
        n //= 1000
        exp += 3
    if fmt == DECIMAL_EXPONENT:
        return f"{sign}{n}" + (f"e{exp}" if exp else "")
    suffix = next(s for s, e in _DECIMAL.items() if e == exp)
    return f"{sign}{n}{suffix}"
