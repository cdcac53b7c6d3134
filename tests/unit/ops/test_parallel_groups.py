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


def test_the_agents_and_the_control_planes_never_run_side_by_side() -> None:
    """Two workers ran them side by side on this 2-core machine and 6 timing-bound tests
    failed (pods not Running within 60 s, scripts/test.sh): one group, so one worker runs
    them one after the other while the other worker takes everything else."""
    groups = suite_conftest().ROOT_GROUPS
    assert groups["integration/kubelet"] == groups["integration/controlplane"]
    assert groups["integration/runtime"] != groups["integration/controlplane"]


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


CENSUS = re.compile(r"^(from|import) .*\b(fault_census|census)\b", re.M)
EXCLUSIVE_MARK = re.compile(r"^pytestmark\b[^\]]*\.exclusive\b", re.M | re.S)


def test_a_host_wide_census_runs_with_the_host_to_itself() -> None:
    """A root test that compares census of host-wide kernel objects (netns, veths, pod
    cgroups) before and after sees the other worker's labs and pods as leaks: it is marked
    `exclusive`, and scripts/test.sh runs those after the parallel run, alone (the first
    two-worker full run failed the fault injection's and the lab census's tests so)."""
    census_users = sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")
                          if ROOT_MARK.search(p.read_text()) and CENSUS.search(p.read_text()))
    assert census_users  # the fault injection and the lab census tests at least
    unmarked = [f for f in census_users
                if not EXCLUSIVE_MARK.search((TESTS / f).read_text())]
    assert unmarked == []
    script = (TESTS.parent / "scripts" / "test.sh").read_text()
    assert '-m "not exclusive"' in script
    assert "-m exclusive" in script
