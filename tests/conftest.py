"""Suite-wide rules: root tests skip without root, and must not skip in CI; VM tests run
only when asked for (``-m vm``): they are left out of every other run, not skipped.

Parallel runs (``scripts/test.sh``'s default: ``pytest -n 3 --dist loadgroup``,
pytest-xdist, then the ``exclusive`` tests in one process): every test gets an
``xdist_group``, and a group runs whole on one worker, in file order. A test file without
the root marker is its own group (its module fixtures are set up once). The root tests are
grouped by what they may share on the host: each group below owns its own names, subnets and
bridges (runtime: rcri<N>/10.94-95; kubelet: 10.96/10.200; controlplane: kcn<N>/10.97,
the fault injection's node kcn20 apart; pycni and the benches: 10.91-93, pckbench0; the
labs, whose pods all take 10.244/16: lab, e2e, ops and the workload bench's smoke; the
service proxy: spx<N> namespaces, every link and address inside them), so no two groups
collide by name; the tests of one group never run at once. Ports are free ones, picked at
run time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# Test modules and their helpers are imported by basename ("prepend" import mode, no
# __init__.py; tests/unit/ops/test_unit_tree.py keeps basenames unique across tests/). The
# tree mirrors the packages' (tests/tree_map.py), so a helper (cp_live, kubelet_builders)
# or a test module another imports sits in a directory above or beside its importers:
# every directory of tests/ is on sys.path, after the packages, wherever a run starts.
for _dir in sorted({str(p.parent) for p in TESTS.rglob("*.py")}):
    if _dir not in sys.path:
        sys.path.append(_dir)

ROOT_GROUPS = {
    "integration/runtime": "root-runtime",
    "integration/kubelet": "root-kubelet",
    "integration/controlplane": "root-controlplane",
    # pycni's subnets (cni_bench's inside them) and every lab's 10.244/16 (the workload
    # bench smoke brings up a lab too)
    "integration/pycni": "root-pycni-labs",
    "bench_smoke": "root-pycni-labs",
    "integration/lab": "root-pycni-labs",
    "integration/ops": "root-pycni-labs",
    "e2e": "root-pycni-labs",
    "integration/proxy": "root-proxy",
    # fault injection: agents and control planes killed (node kcn20), loop-mounted stores
    "faults": "root-faults",
}
# The groups in the order the workers should start them: the longest first (seconds of one
# full run on this machine: labs 475, kubelet 370, faults 225, controlplane 185, runtime
# 175, proxy 16; then the files of their own, the control plane's API tests (up to 75 s
# each) before the unit files), so the short ones fill in at the end instead of a long one
# starting last. scripts/test.sh keeps this order (--no-loadscope-reorder: xdist would sort
# by the number of tests instead, putting the faults' 7 long ones behind the unit files).
GROUP_ORDER = ("root-pycni-labs", "root-kubelet", "root-faults", "root-controlplane",
               "root-runtime", "root-proxy")


def parallel_group(item: pytest.Item) -> str:
    """The xdist group of ``item`` (see the module docstring)."""
    rel = Path(item.path).resolve().relative_to(TESTS).as_posix()
    if item.get_closest_marker("root") is None:
        return rel
    for prefix, group in ROOT_GROUPS.items():
        if rel.startswith(prefix + "/"):
            return group
    return "root"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    require_root = os.environ.get("PYKUBE_REQUIRE_ROOT") == "1"
    if require_root and not is_root:
        raise pytest.UsageError("PYKUBE_REQUIRE_ROOT=1 but not running as root")
    if "vm" not in (config.getoption("markexpr") or ""):
        vms = [item for item in items if item.get_closest_marker("vm") is not None]
        if vms:
            config.hook.pytest_deselected(items=vms)
            items[:] = [item for item in items if item.get_closest_marker("vm") is None]
    grouped_ids = _xdist_cannot_set_group_ids(config, items)
    if config.getoption("dist", "no") == "loadgroup":
        rank = {g: i for i, g in enumerate(GROUP_ORDER)}
        items.sort(key=lambda item: rank.get(parallel_group(item), len(rank)))  # stable
    for item in items:
        if item.get_closest_marker("root") is not None and not is_root:
            item.add_marker(pytest.mark.skip(reason="needs root"))
        group = parallel_group(item)
        item.add_marker(pytest.mark.xdist_group(group))
        if grouped_ids:
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]


def _xdist_cannot_set_group_ids(config: pytest.Config, items: list[pytest.Item]) -> bool:
    """On an xdist worker under ``--dist loadgroup``, whether xdist's own marking of a
    test's group fails: it appends ``@group`` to ``item._nodeid``, which pytest 9.2's
    structured node ids (``item._id``) no longer read (pytest-dev/pytest-xdist#1386), so
    every group was spread over the workers. Then this hook appends it to ``_id`` as xdist
    meant to (the controller's scheduler splits the group off at the last ``@``)."""
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup") or not items:
        return False
    return hasattr(items[0], "_id") and not hasattr(items[0], "_nodeid")
