"""One duration module (issue 25): the API server's Tables and kubectl describe print ages
through the ground floor's HumanDuration, as upstream's both call apimachinery's; the node's
config, the scheduler's extenders, the lab's and kubectl's flags read durations through its one
time.ParseDuration."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pykubelet.api.machinery.duration import human_duration, parse_duration

REPO = Path(__file__).resolve().parents[4]


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


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0), ("+0", 0), ("-0", 0), ("5s", 5), ("1m30s", 90), ("2h", 7200), ("250ms", 0.25),
    ("1.5s", 1.5), (".5s", 0.5), ("1.s", 1), ("-1.5h", -5400), ("+5s", 5), ("1h2m3s4ms", 3723.004),
    ("100us", 1e-4), ("100\u00b5s", 1e-4), ("100\u03bcs", 1e-4), ("7ns", 7e-9), ("3m0s", 180)])
def test_parse_duration_as_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "message"), [
    ("", 'time: invalid duration ""'), ("-", 'time: invalid duration "-"'),
    ("soon", 'time: invalid duration "soon"'), (".s", 'time: invalid duration ".s"'),
    ("5", 'time: missing unit in duration "5"'), ("1m5", 'time: missing unit in duration "1m5"'),
    ("5x", 'time: unknown unit "x" in duration "5x"'), (" 5s", 'time: invalid duration " 5s"'),
    ("5 s", 'time: unknown unit " s" in duration "5 s"')])
def test_parse_duration_errors_as_go(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        parse_duration(text)


UNIT_TABLE = re.compile(r"""["']ms["']\s*:\s*(0?\.001|1e-3)|\(ms\|s\|m\|h\)""")


def test_no_other_module_parses_durations_by_hand() -> None:
    hits = [f"{f.relative_to(REPO)}:{n}"
            for top in ("pycni", "pykubelet", "pysched")
            for f in sorted((REPO / top).rglob("*.py"))
            if f.name != "duration.py" and "_proto" not in f.parts
            for n, line in enumerate(f.read_text().splitlines(), 1) if UNIT_TABLE.search(line)]
    assert hits == []
