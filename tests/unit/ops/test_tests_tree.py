"""tests/unit and tests/integration mirror the package tree (issue 25), so the test of
pykubelet/kubelet/prober/worker.py is looked for in tests/unit/kubelet/prober/ and found
there: every test module sits in a directory that names a package directory
(tests/tree_map.py's ``room_of``: ``pykubelet/`` dropped, ``pysched/`` and ``pycni/`` kept)
or in a cross-cutting one (``ops/``, the top of unit/ or integration/). A test added in a
directory of no package (the old flat ``kubectl/``, a package's misspelt or removed
folder) fails here; ``python tests/tree_map.py --apply`` moves it where its imports say."""

from __future__ import annotations

from pathlib import Path

import tree_map


def misplaced(tests: Path) -> list[str]:
    """The test modules under ``tests``/unit and ``tests``/integration in no package's
    directory nor a cross-cutting one."""
    found = []
    for kind in tree_map.KINDS:
        for path in sorted((tests / kind).rglob("test_*.py")):
            test_dir = path.parent.relative_to(tests / kind).as_posix()
            test_dir = "" if test_dir == "." else test_dir
            if test_dir not in tree_map.CROSS_CUTTING and tree_map.room_of(test_dir) is None:
                found.append(path.relative_to(tests).as_posix())
    return found


def test_every_test_module_sits_in_a_directory_of_the_package_tree() -> None:
    assert misplaced(tree_map.TESTS) == []


def test_a_test_module_outside_the_package_tree_is_seen(tmp_path: Path) -> None:
    for rel in ("unit/kubectl/test_a.py", "unit/controlplane/controllers/test_b.py",
                "integration/pysched/plugins/test_c.py", "unit/ops/test_d.py",
                "unit/test_e.py", "integration/kubelet/probes/test_f.py",
                "unit/pysched/objects/test_g.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert sorted(misplaced(tmp_path)) == ["integration/kubelet/probes/test_f.py",
                                           "unit/kubectl/test_a.py",
                                           "unit/pysched/objects/test_g.py"]


def test_test_directories_name_package_directories() -> None:
    assert tree_map.room_of("controlplane/controllers") == "pykubelet/controlplane/controllers"
    assert tree_map.room_of("kubelet/prober") == "pykubelet/kubelet/prober"
    assert tree_map.room_of("pysched/plugins") == "pysched/plugins"
    assert tree_map.room_of("pycni/ipam/hostlocal") == "pycni/ipam/hostlocal"
    assert tree_map.room_of("kubectl") is None
    assert tree_map.test_dir_of("pykubelet/cli/kubectl") == "cli/kubectl"
    assert tree_map.test_dir_of("pysched/fast") == "pysched/fast"


def test_the_map_places_a_module_by_its_imports_and_name(tmp_path: Path) -> None:
    """What ``--apply`` does with a module merged into an old flat place."""
    module = tmp_path / "test_job_decisions.py"
    module.write_text("from pykubelet.controlplane.controllers.job import JobController\n"
                      "from pykubelet.controlplane.registry.store import Context\n")
    assert tree_map.best_room(module, "pykubelet/controlplane") == \
        "pykubelet/controlplane/controllers"
    module.write_text("import json\n")  # talks HTTP only: nothing says, it stays
    assert tree_map.best_room(module, "pykubelet/controlplane") is None
