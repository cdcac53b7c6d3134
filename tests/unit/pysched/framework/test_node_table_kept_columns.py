"""NodeTable.per_row: a plugin's per-row answer for one pod shape, kept for every row once
the shape comes again and brought up to date with the rows changed since (issue 23 item 7:
pods of one shape then cost a gather and the changed rows, not a pass over ~500 rows)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from builders import FakeSnapshot, make_node, make_pod

from pysched.framework import node_table
from pysched.framework.node_table import NodeTable
from pysched.framework.types import NodeInfo


def _cluster(n: int = 10) -> tuple[FakeSnapshot, NodeTable]:
    nodes = [make_node(f"n{i}").capacity(cpu=str(1 + i % 4), memory="4Gi", pods=110).obj()
             for i in range(n)]
    snap = FakeSnapshot(nodes, [])
    table = NodeTable()
    table.rebuild(snap.list())
    return snap, table


class _Free:
    """Free millicores plus a constant: a per-row function, counted."""

    def __init__(self, table: NodeTable, plus: int = 0) -> None:
        self.table, self.plus = table, plus
        self.calls: list[Any] = []
        self.ones: list[str] = []

    def fn(self, rows: Any) -> Any:
        self.calls.append(None if rows is None else rows.tolist())
        t = self.table
        free = t.alloc_cpu - t.req_cpu
        return (free if rows is None else free[rows]) + self.plus

    def one(self, ni: NodeInfo) -> int:
        self.ones.append(ni.name)
        return ni.allocatable.milli_cpu - ni.requested.milli_cpu + self.plus


def _bind(snap: FakeSnapshot, table: NodeTable, node: str, cpu: str) -> None:
    """A pod lands on ``node``: its NodeInfo changes and the table row with it."""
    ni = snap.get(node).clone()
    ni.add_pod(make_pod(f"x-{node}-{cpu}").node(node).container({"cpu": cpu}).obj())
    table.update_row(table.names.index(node), ni)


def test_the_first_ask_runs_on_the_rows_the_second_keeps_every_row() -> None:
    _, table = _cluster()
    f = _Free(table)
    rows = np.array([3, 1], np.int64)
    assert table.per_row("k", f.fn, rows, f.one).tolist() == [4000, 2000]
    assert f.calls == [[3, 1]]
    assert table.per_row("k", f.fn, rows, f.one).tolist() == [4000, 2000]
    assert f.calls == [[3, 1], None]  # now every row, kept
    col = table.per_row("k", f.fn, None, f.one)
    assert col.tolist() == [1000 * (1 + i % 4) for i in range(10)]
    assert f.calls == [[3, 1], None]  # answered from the kept column
    with pytest.raises(ValueError, match="read-only"):
        col[0] = 0


def test_changed_rows_are_brought_up_to_date_one_by_one_or_by_fn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap, table = _cluster()
    f = _Free(table, plus=7)
    table.per_row("k", f.fn, None, f.one)
    before = table.per_row("k", f.fn, None, f.one)
    _bind(snap, table, "n2", "500m")
    _bind(snap, table, "n5", "1")
    _bind(snap, table, "n2", "250m")  # the same row twice: brought up to date once
    after = table.per_row("k", f.fn, None, f.one)
    assert f.ones == ["n2", "n5"]
    assert after.tolist() == f.fn(None).tolist()
    assert after[2] == 3000 - 250 + 7  # the row's last NodeInfo
    assert before.tolist() == [1000 * (1 + i % 4) + 7 for i in range(10)]  # not changed
    monkeypatch.setattr(node_table, "ONE_BY_ONE", 1)  # more rows than that: fn runs on them
    f.calls.clear()
    _bind(snap, table, "n1", "100m")
    _bind(snap, table, "n8", "100m")
    assert table.per_row("k", f.fn, None, f.one).tolist() == f.fn(None).tolist()
    assert f.calls[0] == [1, 8]


def test_keys_are_kept_apart_and_the_least_recently_used_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_table, "KEEP_COLUMNS", 2)
    _, table = _cluster()
    fs = {k: _Free(table, plus=k) for k in (1, 2, 3)}
    for k in (1, 2, 1, 2):
        table.per_row(k, fs[k].fn, None)
    assert table.per_row(1, fs[1].fn, None)[0] == 1001  # 1 used last: 2 goes first
    assert table.per_row(2, fs[2].fn, None)[0] == 1002
    table.per_row(3, fs[3].fn, None)
    table.per_row(3, fs[3].fn, None)  # kept: key 1 (least recently used) evicted
    assert set(table._kept) == {2, 3}


def test_a_long_change_log_drops_the_kept_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_table, "MAX_CHANGES", 3)
    snap, table = _cluster()
    f = _Free(table)
    table.per_row("k", f.fn, None, f.one)
    table.per_row("k", f.fn, None, f.one)
    for i in range(4):
        _bind(snap, table, f"n{i}", "100m")
    assert not table._kept  # dropped, not caught up over a long log
    assert table.per_row("k", f.fn, None, f.one).tolist() == f.fn(None).tolist()


def test_a_row_whose_node_is_the_same_object_refills_only_its_sums(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pod came or went (the NodeInfo's Node is the same object): labels, taints, images and
    unschedulable stay as the row holds them; only the sums are written (a NodeInfo clone and
    its row per scheduled pod: issue 23 item 7). A new Node object refills the whole row."""
    snap, table = _cluster()
    table.label_column("kubernetes.io/hostname")
    whole: list[int] = []
    real = NodeTable._fill_row
    monkeypatch.setattr(NodeTable, "_fill_row",
                        lambda self, i, ni: (whole.append(i), real(self, i, ni))[1])
    _bind(snap, table, "n3", "700m")
    assert whole == []
    assert table.req_cpu[3] == 700
    assert table.num_pods[3] == 1
    ni = snap.get("n3").clone()
    ni.set_node(make_node("n3").capacity(cpu="9", memory="4Gi", pods=110).obj())
    table.update_row(3, ni)
    assert whole == [3]
    assert table.alloc_cpu[3] == 9000


def test_filters_that_reject_nothing_answer_the_shared_every_row_mask() -> None:
    from builders import plugin_for

    from pysched.framework.cycle_state import CycleState

    snap, table = _cluster()
    nodes = [ni.node for ni in snap.list()]
    pod = make_pod("p").container({"cpu": "100m"}).obj()
    for name in ("NodeName", "NodePorts", "TaintToleration", "VolumeRestrictions"):
        pl = plugin_for(name, nodes, [])
        assert pl.filter_batch(CycleState(), pod, table, None) is table.every_row, name
    assert table.every_row.all()
    assert len(table.every_row) == table.n
    with pytest.raises(ValueError, match="read-only"):
        table.every_row[0] = False


def test_a_column_only_gathered_from_changes_in_place_one_handed_out_is_copied() -> None:
    snap, table = _cluster()
    f = _Free(table)
    rows = np.array([0, 4], np.int64)
    table.per_row("k", f.fn, rows, f.one)
    table.per_row("k", f.fn, rows, f.one)
    kept = table._kept["k"].column
    _bind(snap, table, "n4", "300m")
    assert table.per_row("k", f.fn, rows, f.one).tolist() == [1000, 700]
    assert table._kept["k"].column is kept  # no caller held it: changed in place
    whole = table.per_row("k", f.fn, None, f.one)
    _bind(snap, table, "n0", "100m")
    assert table.per_row("k", f.fn, rows, f.one).tolist() == [900, 700]
    assert whole[0] == 1000  # the column handed out is not changed under its holder
    assert not whole.flags.writeable
