"""Every module of the three packages is named by a mypy line of scripts/test.sh (issue 25):
a package left out of those lines is never type-checked, as pycni and pykubelet.streaming were."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PACKAGES = ("pykubelet", "pycni", "pysched")
GENERATED = "_proto"  # gRPC stubs: pyproject's [tool.mypy] ignores them


def _mypy_targets() -> tuple[set[str], set[str]]:
    """The -p packages and -m modules of every `python -m mypy` command in scripts/test.sh."""
    text = (REPO / "scripts/test.sh").read_text().replace("\\\n", " ")
    packages: set[str] = set()
    modules: set[str] = set()
    for line in text.splitlines():
        if "-m mypy" not in line:
            continue
        packages |= set(re.findall(r"-p (\S+)", line))
        modules |= set(re.findall(r"-m (?!mypy\b)(\S+)", line))
    return packages, modules


def _modules() -> list[str]:
    out = []
    for top in PACKAGES:
        for f in (REPO / top).rglob("*.py"):
            parts = f.relative_to(REPO).with_suffix("").parts
            if GENERATED in parts:
                continue
            out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_every_module_is_type_checked() -> None:
    packages, modules = _mypy_targets()

    def covered(name: str) -> bool:
        parts = name.split(".")
        return name in modules or any(".".join(parts[:i]) in packages
                                      for i in range(1, len(parts) + 1))

    assert sorted(m for m in _modules() if not covered(m)) == []


def test_the_reader_sees_the_lines() -> None:
    packages, modules = _mypy_targets()
    assert {"pykubelet.api", "pysched"} <= packages
    assert "pykubelet.oom" in modules
