"""A lab's state, required: `lab load`, `lab restart-node` and `lab status` read it through
one function (issue 25: they were three copies of the same read and "not found" message)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pykubelet.lab import state
from pykubelet.lab.create import LabError, locked_lab
from pykubelet.lab.layout import LabLayout
from pykubelet.lab.load import load
from pykubelet.lab.restart import restart_node

MISSING = re.escape("lab 'ghost' not found (create it with: pykubelet lab up --name ghost)")


def test_require_names_the_missing_lab(tmp_path: Path) -> None:
    layout = LabLayout("ghost", 0, 0, tmp_path / "state", tmp_path / "run")
    with pytest.raises(state.StateError, match=f"^{MISSING}$"):
        state.require(layout)


def test_require_reports_an_unreadable_state(tmp_path: Path) -> None:
    layout = LabLayout("bad", 0, 0, tmp_path / "state", tmp_path / "run")
    layout.state_file.parent.mkdir(parents=True)
    layout.state_file.write_text("{")
    with pytest.raises(state.StateError, match="unreadable lab state"):
        state.require(layout)


def test_load_and_restart_say_the_same(tmp_path: Path) -> None:
    roots = (tmp_path / "state", tmp_path / "run")
    with pytest.raises(LabError, match=f"^{MISSING}$"):
        load("ghost", "busybox", *roots, tmp_path / "host")
    with pytest.raises(LabError, match=f"^{MISSING}$"):
        restart_node("ghost", "node1", *roots, wait=1)


def test_locked_lab_holds_the_lock_over_the_state(tmp_path: Path) -> None:
    state.save(state.LabState("l1", 1, 0, str(tmp_path / "state"), str(tmp_path / "run")))
    with locked_lab("l1", tmp_path / "state", tmp_path / "run") as st:
        assert st.layout.name == "l1"
        with pytest.raises(LabError, match="is busy"), locked_lab(
                "l1", tmp_path / "state", tmp_path / "run"):
            pass
    with pytest.raises(LabError, match=f"^{MISSING}$"), locked_lab(
            "ghost", tmp_path / "state", tmp_path / "run"):
        pass
