"""_sync_pod asks "is the pod done?" in one place (issue 25): the agent calls pod_termination
once, on the status generated from what the runtime shows, before the runtime sync and after
it; the behaviour (stop a deleted, terminal or overdue pod; run the others) is what the
kubelet suites test."""

from __future__ import annotations

import ast
from pathlib import Path

import pykubelet.kubelet.agent as agent


def test_pod_termination_is_asked_in_one_place() -> None:
    tree = ast.parse(Path(agent.__file__).read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "pod_termination"]
    assert len(calls) == 1
