"""The ``api`` fixture: one live control plane per test module (cp_live.LiveAPI)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cp_live import LiveAPI


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveAPI]:
    live = LiveAPI(tmp_path_factory.mktemp("cp"))
    try:
        yield live
    finally:
        live.close()
