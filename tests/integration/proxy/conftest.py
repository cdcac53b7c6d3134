"""The service proxy's integration tests name their namespaces with the prefix ``spx``."""

from __future__ import annotations

import pytest


@pytest.fixture
def netns_prefix() -> str:
    return "spx"
