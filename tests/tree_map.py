"""Where each test module belongs: tests/unit and tests/integration mirror the package tree
(issue 25), so the test of pykubelet/kubelet/prober/worker.py is looked for in
tests/unit/kubelet/prober/ and found there.

A test directory names a package directory: ``pykubelet/`` is dropped (``controlplane/``,
``kubelet/prober/``), ``pysched/`` and ``pycni/`` are kept (``pysched/framework/``), and a
few directories are cross-cutting (``ops/``: the repository's own rules; the suite's top).
A test module moves, within the package directory its directory names, to the
subdirectory it tests most: each import of a pykubelet/pysched/pycni module counts one for
the module's directory, a module whose name is in the test's name three, and a directory
whose name is in the test's name three more; ties stay shallow. A module importing none of
them goes to the one directory below named in its name, or stays (listed as unmapped).
Modules named for a whole package's rules (house, layout, imports) stay in its directory.

Run it from anywhere: ``python tests/tree_map.py`` prints the moves; ``--apply`` makes them
with ``git mv``. Rerunning after ``--apply`` proposes nothing (a module already sits in the
best directory among its directory and the ones below it), so it can be rerun after merges
that add test modules in the old flat places. tests/unit/ops/test_tests_tree.py keeps every
test module in a directory of the package tree (``room_of``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
KINDS = ("unit", "integration")
PACKAGES = ("pykubelet", "pysched", "pycni")
# test directories that name no package directory: the repository's rules and tools
CROSS_CUTTING = {"", "ops"}
# package directories that hold no code under test of their own
NOT_ROOMS = {"_proto", "testing", "__pycache__", "static"}
# words naming a test of a whole package (its house rules, layout, imports): it stays there
WHOLE_PACKAGE = {"house", "layout", "layering", "imports"}


def room_of(test_dir: str) -> str | None:
    """The package directory (``pykubelet/kubelet/prober``) a test directory (relative to
    tests/unit or tests/integration: ``kubelet/prober``) names; None if cross-cutting or
    if it names none."""
    if test_dir in CROSS_CUTTING:
        return None
    first = test_dir.split("/")[0]
    path = test_dir if first in PACKAGES[1:] else f"pykubelet/{test_dir}"
    return path if (REPO / path / "__init__.py").is_file() else None


def test_dir_of(room: str) -> str:
    """The inverse of ``room_of``: where tests of a package directory live."""
    return room.removeprefix("pykubelet/") if room != "pykubelet" else ""


def _legacy_room(test_dir: str) -> str | None:
    """The flat directories from before the mirror, named for a package below its parent."""
    first, _, rest = test_dir.partition("/")
    legacy = {"kubectl": "pykubelet/cli/kubectl", "apimachinery": "pykubelet/api/machinery"}
    if first in legacy:
        return "/".join(p for p in (legacy[first], rest) if p)
    return None


def _module_dir(name: str) -> str | None:
    """The package directory of a dotted module name (a package counts as its own dir)."""
    path = REPO / name.replace(".", "/")
    if (path / "__init__.py").is_file():
        return path.relative_to(REPO).as_posix()
    if path.with_suffix(".py").is_file():
        return path.parent.relative_to(REPO).as_posix()
    return None


def imported_dirs(source: str) -> list[tuple[str, str]]:
    """(package directory, module stem) for each pykubelet/pysched/pycni import."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            names = [s for s in subs if _module_dir(s)] or [node.module]
        for name in names:
            if name.split(".")[0] not in PACKAGES:
                continue
            d = _module_dir(name)
            if d is not None and not NOT_ROOMS & set(d.split("/")):
                found.append((d, name.rsplit(".", 1)[-1]))
    return found


def _name_tokens(path: Path) -> list[str]:
    return path.stem.removeprefix("test_").split("_")


def _names_module(tokens: list[str], stem: str) -> bool:
    """Whether the test's name holds the module's name (``test_probe_worker`` ~ worker)."""
    parts = stem.split("_")
    return any(tokens[i:i + len(parts)] == parts for i in range(len(tokens)))


def _named_room(tokens: list[str], room: str) -> str:
    """For a module importing nothing at or below ``room`` (it talks HTTP to a control plane,
    runs a CLI): the one directory below ``room`` whose name is in the test's name, if
    exactly one is."""
    named = set()
    for module in (REPO / room).rglob("*.py"):
        d = module.parent.relative_to(REPO).as_posix()
        if d == room or NOT_ROOMS & set(d.split("/")):
            continue
        if d.rsplit("/", 1)[-1] in tokens:
            named.add(d)
    return named.pop() if len(named) == 1 else room


def best_room(path: Path, room: str) -> str:
    """The directory at or below ``room`` that the module at ``path`` tests most."""
    tokens = _name_tokens(path)
    if WHOLE_PACKAGE & set(tokens):
        return room
    score: Counter[str] = Counter()
    for d, stem in imported_dirs(path.read_text()):
        if d == room or d.startswith(room + "/"):
            score[d] += 3 if _names_module(tokens, stem) else 1
    if not score:
        return _named_room(tokens, room)
    # a directory the test is named for (``test_kubelet_pleg_relist``: pleg/) counts three more
    for d in score.keys() - {room}:
        if d.rsplit("/", 1)[-1] in tokens:
            score[d] += 3
    top = max(score.values())
    return min((d for d, s in score.items() if s == top), key=lambda d: (d.count("/"), d))


def plan() -> tuple[list[tuple[Path, Path]], list[Path]]:
    """(moves as (source, target) paths, modules left where they are for want of imports)."""
    moves: list[tuple[Path, Path]] = []
    unmapped: list[Path] = []
    for kind in KINDS:
        base = TESTS / kind
        for path in sorted(base.rglob("test_*.py")):
            test_dir = path.parent.relative_to(base).as_posix()
            test_dir = "" if test_dir == "." else test_dir
            room = room_of(test_dir) or _legacy_room(test_dir)
            if room is None:
                continue
            if not imported_dirs(path.read_text()):
                unmapped.append(path)
            target_dir = test_dir_of(best_room(path, room))
            target = base / target_dir / path.name
            if target != path:
                moves.append((path, target))
    return moves, unmapped


def main(argv: list[str]) -> int:
    apply = "--apply" in argv
    moves, unmapped = plan()
    for src, dst in moves:
        print(f"{src.relative_to(REPO)} -> {dst.relative_to(REPO)}")
        if apply:
            dst.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "-C", str(REPO), "mv", str(src), str(dst)], check=True)
    for path in unmapped:
        print(f"unmapped (imports no package module; stays): {path.relative_to(REPO)}")
    print(f"{len(moves)} moves{' made' if apply else ''}, {len(unmapped)} unmapped",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
