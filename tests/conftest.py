"""Suite-wide rules: root tests skip without root, and must not skip in CI."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--with-e2e", action="store_true", help="run the e2e (whole lab) tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    require_root = os.environ.get("PYKUBE_REQUIRE_ROOT") == "1"
    if require_root and not is_root:
        raise pytest.UsageError("PYKUBE_REQUIRE_ROOT=1 but not running as root")
    with_e2e = config.getoption("--with-e2e")
    for item in items:
        if "root" in item.keywords and not is_root:
            item.add_marker(pytest.mark.skip(reason="needs root"))
        if "e2e" in item.keywords and not with_e2e:
            item.add_marker(pytest.mark.skip(reason="e2e: pass --with-e2e"))
