"""pycni's plugin integration tests name what they create with the prefix ``pck``."""

from __future__ import annotations

import pytest


@pytest.fixture
def netns_prefix() -> str:
    return "pck"
