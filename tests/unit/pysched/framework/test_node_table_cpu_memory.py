"""NodeTable.cpu_memory: the rows' cpu and memory columns gathered once a cycle for the two
score plugins that read them (NodeResourcesFit, BalancedAllocation: issue 23 item 7), read
only, and gathered again once a row changes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from builders import FakeSnapshot, make_node, make_pod, plugin_for

from pysched.framework.cycle_state import CycleState
from pysched.framework.node_table import NodeTable


def _table() -> tuple[FakeSnapshot, NodeTable, list[Any], list[Any]]:
    nodes = [make_node(f"n{i}").capacity(cpu=str(1 + i % 4), memory=f"{1 + i % 3}Gi",
                                          pods=110).obj() for i in range(12)]
    pods = [make_pod(f"b{j}").node(f"n{j % 12}").container({"cpu": "300m", "memory": "200Mi"})
            .obj() for j in range(20)]
    snap = FakeSnapshot(nodes, pods)
    table = NodeTable()
    table.rebuild(snap.list())
    return snap, table, nodes, pods


def test_the_columns_of_the_rows() -> None:
    _, table, _, _ = _table()
    rows = np.array([5, 0, 11, 3], np.int64)
    g = table.cpu_memory(rows)
    assert g.alloc.tolist() == [table.alloc_cpu[rows].tolist(), table.alloc_mem[rows].tolist()]
    assert g.req.tolist() == [table.req_cpu[rows].tolist(), table.req_mem[rows].tolist()]
    assert g.nz.tolist() == [table.nz_cpu[rows].tolist(), table.nz_mem[rows].tolist()]
    assert g.both
    with pytest.raises(ValueError, match="read-only"):
        g.req[0, 0] = 1


def test_gathered_once_for_both_score_plugins_then_again_after_a_row_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap, table, nodes, pods = _table()
    gathers: list[Any] = []
    real = NodeTable._gather_cpu_memory

    def counting(self: NodeTable, rows: Any) -> Any:
        gathers.append(rows)
        return real(self, rows)

    monkeypatch.setattr(NodeTable, "_gather_cpu_memory", counting)
    fit = plugin_for("NodeResourcesFit", nodes, pods)
    ba = plugin_for("NodeResourcesBalancedAllocation", nodes, pods)
    pod = make_pod("p").container({"cpu": "500m", "memory": "1Gi"}).obj()
    state = CycleState()
    infos = snap.list()
    fit.pre_score(state, pod, infos)
    ba.pre_score(state, pod, infos)
    rows = np.arange(12, dtype=np.int64)
    first = (fit.score_batch(state, pod, table, rows), ba.score_batch(state, pod, table, rows))
    assert len(gathers) == 1
    assert table.cpu_memory(rows) is table.cpu_memory(rows)
    table.update_row(2, infos[2])  # the node the last pod went to, say
    again = (fit.score_batch(state, pod, table, rows), ba.score_batch(state, pod, table, rows))
    assert len(gathers) == 2
    assert [a.tolist() for a in again] == [f.tolist() for f in first]
