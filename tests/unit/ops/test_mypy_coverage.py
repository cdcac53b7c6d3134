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


def _mypy_option_sets() -> list[tuple[str, ...]]:
    """The options (flags other than -p/-m and their targets) of each mypy line."""
    text = (REPO / "scripts/test.sh").read_text().replace("\\\n", " ")
    sets = []
    for line in text.splitlines():
        if "-m mypy" not in line:
            continue
        words = line.split("-m mypy", 1)[1].split()
        opts = [w for i, w in enumerate(words)
                if w not in ("-p", "-m") and (i == 0 or words[i - 1] not in ("-p", "-m"))]
        sets.append(tuple(opts))
    return sets


def test_one_mypy_run_per_set_of_options_each_with_its_own_cache() -> None:
    """Two runs with the same options parse and check their shared imports twice (issue 23
    item 8: the suite's wall time); runs with different options sharing one cache directory
    overwrite each other's entries, so a second run starts cold."""
    sets = _mypy_option_sets()
    flags = [tuple(o for o in s if not o.startswith(".mypy_cache")) for s in sets]
    assert len(set(flags)) == len(flags), flags
    caches = [s[s.index("--cache-dir") + 1] if "--cache-dir" in s else None for s in sets]
    assert None not in caches, caches
    assert len(set(caches)) == len(caches), caches
