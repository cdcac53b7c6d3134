"""The test control planes (tests/integration/controlplane/cp_process.py) start without the
cluster DNS unless a test asks for it (issue 23 items 3 and 8): every `pykubelet
control-plane` serves it on <advertise address>:53 by default, and on 127.0.0.1 all but the
first of the suite's control planes (and of other suites' on the host) retried the bind
every 10 s, listing and watching Services and EndpointSlices again each time."""

from __future__ import annotations

from pathlib import Path

from cp_process import ControlPlaneProcess


def test_a_test_control_plane_runs_no_cluster_dns_by_default(tmp_path: Path) -> None:
    cmd = ControlPlaneProcess(tmp_path / "root", port=1234).command()
    assert cmd[cmd.index("control-plane"):] == [
        "control-plane", "--root", str(tmp_path / "root"), "--listen", "127.0.0.1:1234",
        "--no-cluster-dns"]


def test_a_test_that_names_a_dns_address_or_asks_for_it_gets_the_dns(tmp_path: Path) -> None:
    for asked in (["--cluster-dns-address", "127.0.10.53"], ["--cluster-dns"],
                  ["--cluster-dns-port=5353"]):
        cmd = ControlPlaneProcess(tmp_path / "root", port=1, extra_args=asked).command()
        assert "--no-cluster-dns" not in cmd, asked
        assert cmd[-len(asked):] == asked


def test_the_etcd_store_is_still_passed(tmp_path: Path) -> None:
    cmd = ControlPlaneProcess(tmp_path / "root", port=1, etcd_url="http://127.0.0.1:2379",
                              extra_args=["--pod-gc-period", "1"]).command()
    # (the store's flag, spelt as cp_process does: no process is started here)
    assert cmd[-5:-2] == ["--pod-gc-period", "1", "--no-cluster-dns"]
    assert cmd[-2:] == ["--" + "etcd-servers", "http://127.0.0.1:2379"]
