"""The lab's files: its state, its kubeconfig context, its status output."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import yaml

from pykubelet.client.kubeconfig import admin_kubeconfig, merge_context, read
from pykubelet.lab import kubecontext, state
from pykubelet.lab.report import LabReport, MemberReport, NodeReport, render_table
from pykubelet.lab.state import LabState, ProcessRef
from pykubelet.lab.status import StatusPrinter


def test_state_round_trips_and_lists(tmp_path: Path) -> None:
    st = LabState("a", 2, 3, str(tmp_path), str(tmp_path / "run"))
    st.node_processes("node1").agent = ProcessRef.of(os.getpid())
    st.node_processes("node1").control_plane = ProcessRef(1234, 5.0)
    state.save(st)
    back = state.load(tmp_path / "a" / "lab.json")
    assert back == st
    assert [s.name for s in state.all_states(tmp_path)] == ["a"]
    assert back is not None
    assert back.layout.subnet_index == 3


def test_an_etcd_labs_state_round_trips_with_members_and_front(tmp_path: Path) -> None:
    st = LabState("ha", 4, 0, str(tmp_path), str(tmp_path / "run"), control_planes=3,
                  store="etcd", embedded_control_plane=False, front=ProcessRef(77, 1.5),
                  node_monitor_grace_period=20.0, lease_duration=4.0)  # for restart-node
    for i in (1, 2, 3):
        st.node_processes(f"node{i}").etcd = ProcessRef(100 + i, 2.0)
    state.save(st)
    back = state.load(tmp_path / "ha" / "lab.json")
    assert back == st
    assert back is not None
    assert back.layout.control_planes == 3
    assert [n.is_control_plane for n in back.layout.node_layouts()] == [True] * 3 + [False]


def test_a_broken_state_file_is_a_clear_error(tmp_path: Path) -> None:
    assert state.load(tmp_path / "none.json") is None
    bad = tmp_path / "lab.json"
    bad.write_text("{not json")
    with pytest.raises(state.StateError, match="unreadable lab state"):
        state.load(bad)
    bad.write_text(json.dumps({"name": "x"}))
    with pytest.raises(state.StateError, match="malformed lab state"):
        state.load(bad)


def test_a_process_ref_never_matches_a_reused_pid() -> None:
    me = ProcessRef.of(os.getpid())
    assert me.alive()
    assert not ProcessRef(os.getpid(), me.start_time - 100).alive()
    assert not ProcessRef(2**22 + 12345, 0.0).alive()


def _admin() -> dict[str, object]:
    return admin_kubeconfig("https://10.250.0.11:6443", b"-----CA-----", "tok", name="pykube")


def test_context_is_merged_renamed_and_current(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config"
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    other = {"apiVersion": "v1", "kind": "Config", "current-context": "other",
             "clusters": [{"name": "other", "cluster": {"server": "https://o"}}],
             "users": [{"name": "other", "user": {"token": "o"}}],
             "contexts": [{"name": "other", "context": {"cluster": "other", "user": "other"}}],
             "extensionField": {"kept": True}}
    cfg.write_text(yaml.safe_dump(other))
    admin = tmp_path / "admin.kubeconfig"
    admin.write_text(yaml.safe_dump(_admin()))
    assert kubecontext.merge(admin, "pykube-t") == cfg
    got = read(cfg)
    assert got["current-context"] == "pykube-t"
    ctx = next(c for c in got["contexts"] if c["name"] == "pykube-t")
    assert ctx["context"] == {"cluster": "pykube-t", "user": "pykube-t"}
    cluster = next(c for c in got["clusters"] if c["name"] == "pykube-t")["cluster"]
    assert cluster["server"] == "https://10.250.0.11:6443"
    assert next(u for u in got["users"] if u["name"] == "pykube-t")["user"] == {"token": "tok"}
    assert got["extensionField"] == {"kept": True}
    assert (cfg.stat().st_mode & 0o777) == 0o600

    note = kubecontext.remove("pykube-t", str(cfg))
    assert note == ("kubectl's current context was pykube-t and is now unset; contexts left: "
                    "other (choose one with: kubectl config use-context other)")
    after = read(cfg)
    assert after["current-context"] == ""
    assert [c["name"] for c in after["contexts"]] == ["other"]
    assert [c["name"] for c in after["clusters"]] == ["other"]
    assert [u["name"] for u in after["users"]] == ["other"]


def test_context_is_removed_from_the_recorded_file_too(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "elsewhere"))
    recorded = tmp_path / "recorded"
    merge_context(recorded, kubecontext.lab_context(_admin(), "pykube-r"))
    note = kubecontext.remove("pykube-r", str(recorded))
    assert note == ("kubectl's current context was pykube-r; no context is left, so kubectl "
                    "now talks to localhost:8080 until one is set")
    assert read(recorded)["contexts"] == []
    assert not (tmp_path / "elsewhere").exists()


def test_removing_a_context_that_is_not_current_says_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config"
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    merge_context(cfg, kubecontext.lab_context(_admin(), "pykube-a"))
    merge_context(cfg, kubecontext.lab_context(_admin(), "pykube-b"), make_current=True)
    assert kubecontext.remove("pykube-a", str(cfg)) == ""
    assert read(cfg)["current-context"] == "pykube-b"


def test_a_node_not_ready_says_what_was_last_seen() -> None:
    from pykubelet.lab.create import not_ready_reason

    assert not_ready_reason(None, None, None) == (
        "its Node object does not exist (the agent registers it when it starts)")
    assert not_ready_reason({"status": {}}, None, None) == "its Node has no Ready condition yet"
    node = {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
         "message": "container runtime network not ready: NetworkReady=false"}]}}
    assert not_ready_reason(node, None, None) == (
        "Ready=False: container runtime network not ready: NetworkReady=false")
    node["status"]["conditions"][0].update(status="True")  # type: ignore[index]
    assert not_ready_reason(node, None, None) == ""
    since = 1_796_299_200.0  # 2026-12-03T12:00:00Z
    lease = {"spec": {"renewTime": "2026-12-03T11:59:00.000000Z"}}
    assert not_ready_reason(node, lease, since) == (
        "Ready=True, but its Lease in kube-node-lease was last renewed at "
        "2026-12-03T11:59:00.000000Z, before the agent started")
    assert not_ready_reason(node, None, since) == "its Lease in kube-node-lease does not exist"
    lease["spec"]["renewTime"] = "2026-12-03T12:00:03.000000Z"
    assert not_ready_reason(node, lease, since) == ""


def test_printer_without_a_terminal_prints_one_line_per_step() -> None:
    out = io.StringIO()
    p = StatusPrinter(out, tty=False)
    p.start("Creating the lab network")
    p.start("Starting the control plane")  # ending the previous step as done
    p.end(False)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(" ✓ Creating the lab network (")
    assert lines[1].startswith(" ✗ Starting the control plane (")
    assert "\r" not in out.getvalue()


def test_printer_on_a_terminal_spins_then_settles() -> None:
    out = io.StringIO()
    p = StatusPrinter(out, tty=True, interval=0.01)
    p.start("Waiting")
    import time

    time.sleep(0.05)
    p.end(True)
    text = out.getvalue()
    assert "\r" in text
    assert text.rstrip().endswith("s)")
    assert " ✓ Waiting (" in text


def test_status_json_is_designs_shape_then_what_ha_adds() -> None:
    r = LabReport("lab", [NodeReport("node1", "10.250.0.11", True, 10, 10, pods=["a/b"],
                                     api_server="https://10.250.0.11:6443"),
                          NodeReport("node2", "10.250.0.12", False, None, None)], "node1")
    doc = r.to_json()
    assert list(doc) == ["name", "nodes", "leader"]  # a one-control-plane lab: DESIGN's
    # DESIGN's keys in DESIGN's order, then the API server the agent uses
    assert list(doc["nodes"][0]) == ["name", "address", "ready", "agentPid", "controlPlanePid",
                                     "etcdPid", "apiServer"]
    assert doc["nodes"][1] == {"name": "node2", "address": "10.250.0.12", "ready": False,
                               "agentPid": None, "controlPlanePid": None, "etcdPid": None,
                               "apiServer": None}
    table = render_table(r)
    assert "node1  10.250.0.11  True   10     10             -     https://10.250.0.11:6443  1" \
        in table
    assert "  node1: a/b" in table


def test_status_of_an_etcd_lab_adds_members_and_the_front() -> None:
    r = LabReport("ha", [NodeReport("node1", "10.250.0.11", True, 10, 11, etcd_pid=12,
                                    api_server="https://10.250.0.11:6443")], "node1",
                  members=[MemberReport("node1", "http://10.250.0.11:2379", 12, True, True)],
                  front="https://10.250.0.1:6443")
    doc = r.to_json()
    assert list(doc) == ["name", "nodes", "leader", "members", "front"]
    assert doc["members"] == [{"name": "node1", "clientURL": "http://10.250.0.11:2379",
                               "pid": 12, "healthy": True, "leader": True}]
    assert doc["nodes"][0]["etcdPid"] == 12
    table = render_table(r)
    assert "etcd member node1 http://10.250.0.11:2379: pid 12, healthy, raft leader" in table


def test_the_scheduler_config_copy_is_remembered_for_restart_node(tmp_path: Path) -> None:
    st = LabState("s", 1, 0, str(tmp_path), str(tmp_path / "run"),
                  scheduler_config=str(tmp_path / "s" / "scheduler-config.yaml"))
    state.save(st)
    back = state.load(tmp_path / "s" / "lab.json")
    assert back == st
    assert back is not None
    assert back.scheduler_config.endswith("scheduler-config.yaml")


def test_audit_is_remembered_for_restart_node(tmp_path: Path) -> None:
    st = LabState("s", 1, 0, str(tmp_path), str(tmp_path / "run"), audit=True)
    state.save(st)
    back = state.load(tmp_path / "s" / "lab.json")
    assert back is not None
    assert back.audit
    plain = LabState("p", 1, 0, str(tmp_path), str(tmp_path / "run"))
    state.save(plain)
    again = state.load(tmp_path / "p" / "lab.json")
    assert again is not None
    assert not again.audit
