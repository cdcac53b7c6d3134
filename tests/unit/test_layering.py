"""The house's floors: pycni and pysched never import pykubelet, and nothing imports a face.

A cheap stand-in for import-linter's contracts: every module's imports are read
with ast (nothing is executed), so a new upward arrow fails here first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules_of(package: str) -> list[Path]:
    return sorted(p for p in (REPO / package).rglob("*.py") if "_pb2" not in p.name)


@pytest.mark.parametrize("package", ["pycni", "pysched"])
def test_lower_packages_never_import_pykubelet(package: str) -> None:
    offenders = {
        str(p.relative_to(REPO)): sorted(
            m for m in imported_modules(p) if m.split(".")[0] == "pykubelet"
        )
        for p in modules_of(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_nothing_below_the_faces_imports_a_cli() -> None:
    """`pykubelet.cli` is a face: only other faces (the CLI itself) may import it."""
    offenders = {}
    for package in ("pycni", "pysched", "pykubelet"):
        for p in modules_of(package):
            rel = p.relative_to(REPO)
            if rel.parts[:2] == ("pykubelet", "cli") or rel.name in ("cli.py", "demo.py"):
                continue
            faces = ("pykubelet.cli", "pycni.cli", "pysched.cli")
            bad = sorted(
                m
                for m in imported_modules(p)
                if m in faces or m.startswith(tuple(f + "." for f in faces))
            )
            if bad:
                offenders[str(rel)] = bad
    assert offenders == {}


def test_api_types_do_no_io() -> None:
    """pykubelet.api is pure: no subprocess, socket, grpc or runtime imports."""
    forbidden = (
        "subprocess",
        "socket",
        "grpc",
        "pykubelet.runtime",
        "pykubelet.kubelet",
        "pyroute2",
    )
    offenders = {}
    for p in sorted((REPO / "pykubelet" / "api").rglob("*.py")):
        bad = sorted(m for m in imported_modules(p) if m.startswith(forbidden))
        if bad:
            offenders[str(p.relative_to(REPO))] = bad
    assert offenders == {}
