"""One duration.HumanDuration (issue 25): the API server's Tables and kubectl describe print
ages through the ground floor's, as upstream's both call apimachinery's."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest

from pykubelet.api.machinery.duration import human_duration


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (5, "5s"), (119, "119s"), (120, "2m"),
    (150, "2m30s"), (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"),
    (4 * 3600 + 60, "4h1m"), (30 * 3600, "30h"), (3 * 86400, "3d"),
    (3 * 86400 + 5 * 3600, "3d5h"), (400 * 86400, "400d"), (3 * 365 * 86400, "3y"),
    (3 * 365 * 86400 + 2 * 86400, "3y2d"), (9 * 365 * 86400 + 86400, "9y")])
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(dt.timedelta(seconds=seconds)) == text


def test_tables_and_describe_print_through_it() -> None:
    from pykubelet.cli.kubectl import describe
    from pykubelet.controlplane.apiserver import tables

    assert tables.human_duration is human_duration
    assert describe.human_duration is human_duration


def test_standard_library_only() -> None:
    code = ("import json, sys; before = set(sys.modules); "
            "import pykubelet.api.machinery.duration; "
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    new = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True).stdout)
    assert [m for m in new if m.split(".")[0] not in sys.stdlib_module_names
            and not m.startswith("pykubelet.api.machinery") and m not in
            ("pykubelet", "pykubelet.api")] == []
