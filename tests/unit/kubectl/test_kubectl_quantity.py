"""Quantities print as apimachinery's Quantity.String() does."""

from __future__ import annotations

import pytest

from pykubelet.cli.kubectl.quantity import Quantity


@pytest.mark.parametrize(("text", "canonical"), [
    ("100m", "100m"), ("0.5", "500m"), ("1500m", "1500m"), ("1000m", "1"), ("2000", "2k"),
    ("4", "4"), ("110", "110"), ("128974848", "128974848"), ("129e6", "129e6"),
    ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("512Mi", "512Mi"), ("0", "0"), ("1e3", "1e3"),
    (2, "2"), ("junk", "0"),
])
def test_canonical_text(text: str, canonical: str) -> None:
    assert str(Quantity.parse(text)) == canonical


def test_sums_keep_the_first_format_and_round_up() -> None:
    assert str(Quantity.parse("512Mi") + Quantity.parse("512Mi")) == "1Gi"
    assert str(Quantity.parse("100m") + Quantity.parse("0.2")) == "300m"
    q = Quantity.parse("1500m")
    assert (q.milli_ceil(), q.value_ceil()) == (1500, 2)
