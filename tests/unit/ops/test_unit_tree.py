"""What tests/unit holds: tests that start nothing outside the test process but loopback
servers of their own. Starting etcd (Debian's etcd-server, a binary and seconds per member)
is integration work: those tests live in tests/integration/controlplane (issue 25)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
UNIT = REPO / "tests" / "unit"
# the storage suite's runner serves the integration suite too, which passes "etcd"
ETCD_RUNNER = "tests/unit/controlplane/storage/test_cp_storage.py"
STARTS_ETCD = re.compile(r"\bEtcdServer\(|\betcd_cluster\b|\"--etcd-servers\"")
ETCD_BACKEND = re.compile(r"parametrize\([^)]*\"etcd\"")


def _hits(pattern: re.Pattern[str], skip: str = "") -> list[str]:
    return [f"{f.relative_to(REPO)}:{n}"
            for f in sorted(UNIT.rglob("*.py"))
            if str(f.relative_to(REPO)) != skip and f != Path(__file__).resolve()
            for n, line in enumerate(f.read_text().splitlines(), 1) if pattern.search(line)]


def test_no_unit_test_starts_etcd() -> None:
    assert _hits(STARTS_ETCD, skip=ETCD_RUNNER) == []
    assert [h for h in _hits(STARTS_ETCD) if h.startswith(ETCD_RUNNER)] != []  # it is seen


def test_no_unit_test_runs_on_an_etcd_backend() -> None:
    assert _hits(ETCD_BACKEND) == []
    assert ETCD_BACKEND.search('@pytest.mark.parametrize("backend", ["sqlite", "etcd"])')


def test_the_agent_harness_is_written_once() -> None:
    """tests/unit/kubelet/unit_agent_harness.py builds the real Kubelet for unit tests; the
    test modules that built their own (cgroups-less manager, KubeletConfig, APINode) use it."""
    own = re.compile(r"^class NoCgroups\b|^def wait_for\(|KubeletConfig\(nodeName=")
    kubelet = UNIT / "kubelet"
    hits = [str(f.relative_to(REPO)) for f in sorted(kubelet.rglob("test_*.py"))
            if any(own.search(line) for line in f.read_text().splitlines())]
    assert hits == []


def test_one_control_plane_fixture_for_the_controlplane_unit_tests() -> None:
    """conftest's cp_thread starts the module's control plane; LiveAPI (the ``api`` fixture)
    talks to it instead of starting its own."""
    live = (UNIT / "controlplane" / "cp_live.py").read_text()
    assert "ControlPlane(" not in live
    assert "new_event_loop" not in live
    conftest = (UNIT / "controlplane" / "conftest.py").read_text()
    assert conftest.count("ControlPlaneThread(") == 1


def test_test_module_names_are_unique_across_the_tree() -> None:
    """pytest imports test modules and their helpers by basename (rootdir-relative
    "prepend" import mode, no __init__.py): two files of one name in tests/ make the
    second fail to collect (or import the other's helpers) when one run collects both."""
    tests = REPO / "tests"
    seen: dict[str, list[str]] = {}
    for f in sorted(tests.rglob("*.py")):
        if f.name not in ("conftest.py", "__init__.py"):
            seen.setdefault(f.name, []).append(str(f.relative_to(REPO)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
