"""The per-pod stage trace: off unless configured, one line per stage, read back into
per-step durations (issue 23 item 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubelet import podtrace


@pytest.fixture
def trace(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "trace.jsonl"
    podtrace.configure(str(path))
    try:
        yield path
    finally:
        podtrace.configure(None)


def test_off_by_default_writes_nothing(tmp_path: Path) -> None:
    podtrace.configure(None)
    podtrace.stage("created", "u1")
    assert not podtrace.enabled()
    assert list(tmp_path.iterdir()) == []


def test_a_stage_is_one_line_with_both_clocks(trace: Path) -> None:
    podtrace.stage("created", "u1")
    podtrace.stage("scheduled", "u1", node="n1")
    podtrace.stage("seen", "")  # no uid: nothing to attribute it to
    recs = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(r["uid"], r["stage"]) for r in recs] == [("u1", "created"), ("u1", "scheduled")]
    assert recs[1]["node"] == "n1"
    assert recs[0]["pid"] == os.getpid()
    assert recs[0]["wall"] <= recs[1]["wall"]
    assert recs[0]["mono"] <= recs[1]["mono"]


def test_the_env_var_turns_it_on_in_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    env = {**os.environ, podtrace.ENV: str(path)}
    subprocess.run([sys.executable, "-c",
                    "from pykubelet import podtrace; podtrace.stage('seen', 'u9')"],
                   env=env, check=True)
    assert podtrace.read(path) == {"u9": {"seen": pytest.approx(
        json.loads(path.read_text())["wall"])}}


def test_read_keeps_each_stages_first_time_and_skips_cut_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"uid":"a","stage":"created","wall":1.0}\n'
        '{"uid":"a","stage":"sync","wall":2.0}\n'
        '{"uid":"a","stage":"sync","wall":5.0}\n'
        '{"uid":"a","stage":"scheduled","wal')
    assert podtrace.read(path) == {"a": {"created": 1.0, "sync": 2.0}}


def test_breakdown_steps_between_the_stages_each_pod_has() -> None:
    traces = {
        "a": {"created": 0.0, "scheduled": 0.5, "seen": 0.6, "sandbox_ready": 1.6,
              "watch_running": 2.0},
        "b": {"created": 1.0, "scheduled": 1.25, "seen": 1.5},
        "c": {"seen": 3.0, "sync": 3.5},  # created before the trace began: no end to end
        "d": {"created": 0.0, "scheduled": 0.5},  # one step: no total beside it
    }
    steps = podtrace.breakdown(traces)
    assert steps["created -> scheduled"] == [0.5, 0.25, 0.5]
    assert steps["scheduled -> seen"] == pytest.approx([0.1, 0.25])
    assert steps["seen -> sandbox_ready"] == [1.0]
    assert steps["seen -> sync"] == [0.5]
    assert steps["sandbox_ready -> watch_running"] == pytest.approx([0.4])
    assert steps["total: created -> watch_running"] == [2.0]
    assert steps["total: created -> seen"] == [0.5]
    assert "total: created -> sync" not in steps
