"""Where each test module belongs: tests/unit and tests/integration mirror the package tree
(issue 25), so the test of pykubelet/kubelet/prober/worker.py is looked for in
tests/unit/kubelet/prober/ and found there.

A test directory names a package directory: ``pykubelet/`` is dropped (``controlplane/``,
``kubelet/prober/``), ``pysched/`` and ``pycni/`` are kept (``pysched/framework/``), and a
few directories are cross-cutting (``ops/``: the repository's own rules; the suite's top).
A test module moves to the directory, at or below the package directory its top test
directory names, that it tests most: each import of a pykubelet/pysched/pycni module
counts one for the module's directory, five if the test is named for the module
(``test_job_decisions`` ~ controllers/job.py); a directory the test is named for counts
five (``test_kubelet_pleg_relist`` ~ kubelet/pleg); ties go to the shallower. A module with
none of these stays where it is (those importing no package module are listed as
unmapped); one named for a whole package's rules (house, layout, imports) stays in it.

Run it from anywhere: ``python tests/tree_map.py`` prints the moves; ``--apply`` makes them
with ``git mv``. Rerunning after ``--apply`` proposes nothing (where a module goes depends on
its text and its top directory only), so it can be rerun after merges that add test
modules in the old flat places. tests/unit/ops/test_tests_tree.py keeps every
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
# what the test's name counts for a directory: a module or directory it is named for
NAMED = 5


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
    legacy = {"kubectl": "pykubelet/cli", "apimachinery": "pykubelet/api"}
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


def _named_dirs(tokens: list[str], room: str) -> set[str]:
    """The package directories below ``room`` whose name (or its singular) is in the test's
    name: ``test_kubelet_pleg_relist`` ~ kubelet/pleg, ``test_plugin_node_name`` ~ plugins."""
    named = set()
    for init in (REPO / room).rglob("__init__.py"):
        d = init.parent.relative_to(REPO).as_posix()
        name = d.rsplit("/", 1)[-1]
        if d != room and not NOT_ROOMS & set(d.split("/")) and (
                name in tokens or name.removesuffix("s") in tokens):
            named.add(d)
    return named


def best_room(path: Path, room: str) -> str | None:
    """The directory at or below ``room`` that the module at ``path`` tests most; None if
    nothing says (it stays where it is)."""
    tokens = _name_tokens(path)
    if WHOLE_PACKAGE & set(tokens):  # test_kubectl_imports: cli/kubectl's, not cli's
        named = _named_dirs(tokens, room)
        return named.pop() if len(named) == 1 else None
    score: Counter[str] = Counter()
    for d, stem in imported_dirs(path.read_text()):
        if d == room or d.startswith(room + "/"):
            score[d] += NAMED if _names_module(tokens, stem) else 1
    for d in _named_dirs(tokens, room):
        score[d] += NAMED
    if not score:
        return None
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
            top = test_dir.split("/")[0]
            room = room_of(top) or _legacy_room(top)
            if room is None:
                continue
            if not imported_dirs(path.read_text()):
                unmapped.append(path)
            best = best_room(path, room)
            if best is None:  # stays, unless its directory names no package (kubectl/)
                best = room if room_of(test_dir) is None else room_of(test_dir)
            assert best is not None
            target_dir = test_dir_of(best)
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
