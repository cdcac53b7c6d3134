"""The one metav1.Time module (issue 25): Go's RFC 3339 reading, metav1.Time/MicroTime
writing, and no second copy of either anywhere in pykubelet or pysched."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pykubelet.api.machinery import timeutil

REPO = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(("text", "want"), [
    ("2024-03-01T10:20:30Z", dt.datetime(2024, 3, 1, 10, 20, 30, tzinfo=dt.UTC)),
    ("2024-03-01T10:20:30.5Z", dt.datetime(2024, 3, 1, 10, 20, 30, 500000, tzinfo=dt.UTC)),
    ("2024-03-01T10:20:30.123456789Z",
     dt.datetime(2024, 3, 1, 10, 20, 30, 123456, tzinfo=dt.UTC)),
    ("2024-03-01T12:20:30+02:00", dt.datetime(2024, 3, 1, 10, 20, 30, tzinfo=dt.UTC)),
])
def test_parse_reads_what_go_reads(text: str, want: dt.datetime) -> None:
    assert timeutil.parse_time(text) == want


@pytest.mark.parametrize("text", ["2024-03-01", "2024-03-01T10:20:30", "2024-03-01 10:20:30Z",
                                  "2024-02-30T10:20:30Z", "yesterday", "2024-03-01T10:20:30+0200"])
def test_parse_refuses_what_go_refuses(text: str) -> None:
    with pytest.raises(ValueError, match='as "2006-01-02T15:04:05Z07:00"'):
        timeutil.parse_time(text)
    assert timeutil.parse_time_or_none(text) is None


def test_format_is_metav1_time_and_micro_time() -> None:
    t = dt.datetime(2024, 3, 1, 12, 20, 30, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert timeutil.rfc3339(t) == "2024-03-01T10:20:30Z"
    assert timeutil.rfc3339(t.timestamp()) == "2024-03-01T10:20:30Z"
    assert timeutil.micro_time(t) == "2024-03-01T10:20:30.123456Z"
    assert timeutil.later(t, 2**63 - 1) == timeutil.MAX_TIME
    assert timeutil.now().tzinfo is dt.UTC


def test_standard_library_only() -> None:
    code = ("import json, sys; before = set(sys.modules); "
            "import pykubelet.api.machinery.timeutil; "
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    new = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True).stdout)
    ours = {"pykubelet", "pykubelet.api", "pykubelet.api.machinery",
            "pykubelet.api.machinery.timeutil"}
    assert [m for m in new if m.split(".")[0] not in sys.stdlib_module_names
            and m not in ours] == []


TIME_CODE = re.compile(r"strptime|fromisoformat|%Y-%m-%dT")


def test_no_other_module_reads_or_writes_times_by_hand() -> None:
    hits = [f"{f.relative_to(REPO)}:{n}"
            for top in ("pykubelet", "pysched")
            for f in sorted((REPO / top).rglob("*.py"))
            if f.name != "timeutil.py" and "_proto" not in f.parts
            for n, line in enumerate(f.read_text().splitlines(), 1) if TIME_CODE.search(line)]
    assert hits == []
