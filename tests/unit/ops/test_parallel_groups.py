"""scripts/test.sh runs the suite on two xdist workers: every file of root tests must fall in
one of tests/conftest.py's named groups (each owning its host names and subnets), so a new
directory of root tests is placed on purpose, not run beside a group it collides with."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import module_by_path

TESTS = Path(__file__).resolve().parents[2]
ROOT_MARK = re.compile(r"^(pytestmark\b.*\.root\b|@pytest\.mark\.root\b)", re.M)


def suite_conftest() -> ModuleType:
    return module_by_path.load("suite_conftest", TESTS / "conftest.py")


def test_every_root_test_file_is_in_a_named_group() -> None:
    groups: dict[str, str] = suite_conftest().ROOT_GROUPS
    root_files = sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")
                        if ROOT_MARK.search(p.read_text()))
    assert root_files
    ungrouped = [f for f in root_files if not any(f.startswith(d + "/") for d in groups)]
    assert ungrouped == []


def test_the_labs_share_one_group_and_the_cni_bench_runs_beside_pycni() -> None:
    """Every lab's pods take 10.244/16; cni_bench's subnet is inside pycni's 10.93/16."""
    groups = suite_conftest().ROOT_GROUPS
    assert groups["integration/lab"] == groups["e2e"] == groups["integration/ops"]
    assert groups["bench_smoke"] == groups["integration/pycni"]


def test_the_bench_smokes_lab_runs_beside_no_other_lab() -> None:
    """tests/bench_smoke runs bench/workload_bench.py on a 3-node lab (pods in 10.244/16, as
    every lab's), so it shares the labs' group too (it shared only pycni's, and so could
    run beside an e2e lab on two workers)."""
    groups = suite_conftest().ROOT_GROUPS
    assert "lab" in (TESTS.parent / "bench" / "workload_bench.py").read_text()
    assert groups["bench_smoke"] == groups["e2e"] == groups["integration/pycni"]


def test_the_longest_groups_start_first_in_the_order_the_script_keeps() -> None:
    """Three workers take the groups in conftest's order, longest first: xdist's default
    reorders by the number of tests, which put the fault injection's seven long tests (225
    s) behind the unit files, last to start. Every named root group has its place."""
    conftest = suite_conftest()
    assert set(conftest.GROUP_ORDER) == set(conftest.ROOT_GROUPS.values())
    assert conftest.GROUP_ORDER[0] == conftest.ROOT_GROUPS["e2e"]  # the labs: 475 s
    assert "--no-loadscope-reorder" in (TESTS.parent / "scripts" / "test.sh").read_text()


def test_two_workers_keep_each_group_on_one_worker() -> None:
    """`pytest -n 2 --dist loadgroup` keeps a group whole on one worker. pytest-xdist 3.8
    marks a test's group by rewriting ``item._nodeid``, which pytest 9.2's structured node
    ids no longer read (pytest-dev/pytest-xdist#1386): every group was spread over both
    workers, root tests sharing names and subnets ran at once. tests/conftest.py sets the
    id itself."""
    import subprocess
    import sys

    files = ["tests/unit/dns/test_dns_records.py", "tests/unit/ops/test_cp_process_dns.py"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-v", *files], cwd=TESTS.parent, capture_output=True,
        text=True, timeout=120, check=False).stdout
    workers: dict[str, set[str]] = {f: set() for f in files}
    for m in re.finditer(r"^\[(gw\d)\] .*?PASSED (\S+?)::", out, re.M):
        workers[m.group(2)].add(m.group(1))
    assert all(len(w) == 1 for w in workers.values()), (workers, out[-3000:])


# the lab census (pykubelet.lab.census) without a cgroup scope counts the host's pods
CENSUS = re.compile(
    r"^(from pykubelet\.lab import .*\bcensus\b|(from|import) pykubelet\.lab\.census\b)", re.M)
EXCLUSIVE_MARK = re.compile(r"^pytestmark\b[^\]]*\.exclusive\b", re.M | re.S)


def test_a_host_wide_census_runs_with_the_host_to_itself() -> None:
    """A root test that compares a census of host-wide kernel objects (netns, veths, pod
    cgroups) before and after sees the other workers' labs and pods as leaks: it is marked
    `exclusive`, and scripts/test.sh runs those after the parallel run, alone (the first
    two-worker full run failed the fault injection's and the lab census's tests so). The
    fault injection's census is its node's own (tests/faults/fault_census.py: it takes the
    node's namespace prefix and its pods' UIDs), so it runs in the parallel run."""
    census_users = sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")
                          if ROOT_MARK.search(p.read_text()) and CENSUS.search(p.read_text()))
    assert census_users  # the lab census's test at least
    unmarked = [f for f in census_users
                if not EXCLUSIVE_MARK.search((TESTS / f).read_text())]
    assert unmarked == []
    script = (TESTS.parent / "scripts" / "test.sh").read_text()
    assert '-m "not exclusive"' in script
    assert "-m exclusive" in script


def test_the_fault_census_is_scoped_to_its_node() -> None:
    """Without a scope the fault census counted every namespace pin and pod cgroup of the
    host; now the node's namespace prefix and its pods' UIDs are required arguments."""
    import inspect

    fault_census = module_by_path.load("fault_census_scope", TESTS / "faults" / "fault_census.py")
    params = inspect.signature(fault_census.take).parameters
    assert params["netns_prefix"].default is inspect.Parameter.empty
    assert params["pod_uids"].default is inspect.Parameter.empty
