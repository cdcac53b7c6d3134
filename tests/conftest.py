"""Suite-wide rules: root tests skip without root, and must not skip in CI; VM tests run
only when asked for (``-m vm``): they are left out of every other run, not skipped."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    require_root = os.environ.get("PYKUBE_REQUIRE_ROOT") == "1"
    if require_root and not is_root:
        raise pytest.UsageError("PYKUBE_REQUIRE_ROOT=1 but not running as root")
    if "vm" not in (config.getoption("markexpr") or ""):
        vms = [item for item in items if item.get_closest_marker("vm") is not None]
        if vms:
            config.hook.pytest_deselected(items=vms)
            items[:] = [item for item in items if item.get_closest_marker("vm") is None]
    for item in items:
        if item.get_closest_marker("root") is not None and not is_root:
            item.add_marker(pytest.mark.skip(reason="needs root"))
