"""Quantities as apimachinery's resource.ParseQuantity reads them (issue 24 item 6): the
exponent is a number, not a size, so "1e6000000" costs no more than "1e3" (before, the
parser built 10^6000000 and held the loop for seconds); values are rounded up to nano and
capped at the largest int64, and what upstream refuses is refused with its words."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from pykubelet.api.machinery.quantity import (
    MAX_QUANTITY,
    QuantityError,
    milli_value,
    parse_quantity,
)

HUGE = ["1e6000000", "1E999999999", "-7e2000000000", "1e-6000000", "0.5e-3000000",
        "123456789e9000000", "1e9223372036854775807"]


@pytest.mark.parametrize("text", HUGE)
def test_huge_exponents_cost_nothing(text: str) -> None:
    t0 = time.process_time()
    parse_quantity(text)
    milli_value(text)
    assert time.process_time() - t0 < 0.05


def test_values_are_capped_and_rounded_as_upstream() -> None:
    assert parse_quantity("1e6000000") == MAX_QUANTITY == 2**63 - 1
    assert parse_quantity("-1e6000000") == -MAX_QUANTITY
    assert parse_quantity("16Ei") == MAX_QUANTITY  # 2^64
    assert parse_quantity("1e-6000000") == Fraction(1, 10**9)  # non-zero rounds up to 1n
    assert parse_quantity("0.1n") == Fraction(1, 10**9)
    assert parse_quantity("-0.1n") == Fraction(-1, 10**9)
    assert parse_quantity("1.5e3") == 1500
    assert parse_quantity("2Ki") == 2048
    assert parse_quantity("500m") == Fraction(1, 2)
    assert parse_quantity("0e6000000") == 0


def test_what_upstream_refuses() -> None:
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        parse_quantity("1e9223372036854775808")  # past int64: strconv.ParseInt fails
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity("1x")
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity("")
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity("\u0661")  # an Arabic-Indic one: [0-9] only


def test_just_below_the_cap_is_exact() -> None:
    assert parse_quantity("7Ei") == 7 * 2**60
    assert parse_quantity("9223372036854775807") == MAX_QUANTITY
    assert parse_quantity("9223372036854775808") == MAX_QUANTITY
    assert parse_quantity("9.223372036854775806e18") == MAX_QUANTITY - 1


def test_rounding_to_nano_is_upstreams() -> None:
    assert parse_quantity("0.0009765625") == Fraction(976563, 10**9)  # 1/1024, rounded up
    assert parse_quantity("0.000000001") == Fraction(1, 10**9)
