"""Kubernetes resource quantities ("500m", "1Gi", "1e3") kept exact.

apimachinery's resource.Quantity rounds *up* in Value() and MilliValue(); we keep the
exact rational and do the same. The text the user wrote is kept for encoding back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from pykubelet.api.machinery.codec import invalid_quantity
from pykubelet.api.machinery.errors import DecodeError

# one parser for the whole project: the scheduler's (pysched is pure and below us)
from pykubelet.api.machinery.quantity import ERR_FORMAT, parse_parts


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
            raise QuantityError(invalid_quantity(value))
        text = value if isinstance(value, str) else _number_text(value)
        if text != text.strip():
            raise QuantityError(invalid_quantity(text, ERR_FORMAT))
        try:
            exact, _, as_written = parse_parts(text)
        except ValueError as exc:
            raise QuantityError(invalid_quantity(text, str(exc))) from exc
        if not as_written:  # capped or rounded: what is kept is what the value is
            text = _plain_text(exact)
        return cls(text=text, exact=exact)

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


def parse_quantity(value: object) -> Quantity:
    return Quantity.parse(value)
