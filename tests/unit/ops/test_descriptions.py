"""What the project says it is names all of it (issue 25: the README's and pyproject's
descriptions, and pykubelet's own, never mentioned the control plane)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pykubelet
import pykubelet.controlplane

REPO = Path(__file__).resolve().parents[3]


def test_pyproject_description_names_the_control_plane() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "control plane" in meta["description"]


def test_readme_what_it_is_names_the_control_plane() -> None:
    text = (REPO / "README.md").read_text()
    section = text.split("## What it is", 1)[1].split("\n## ", 1)[0]
    assert "control plane" in section
    assert "pykubectl" in section


def test_package_docstrings_name_what_is_there() -> None:
    assert pykubelet.__doc__ is not None
    assert "control plane" in pykubelet.__doc__
    assert pykubelet.controlplane.__doc__ is not None
    assert "namespace deletion" in pykubelet.controlplane.__doc__
