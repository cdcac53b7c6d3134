"""TaintToleration: filter on NoSchedule/NoExecute, score PreferNoSchedule (reversed)."""

from __future__ import annotations

import pytest
from builders import FakeSnapshot, make_node, make_pod, node_info, run_score

from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code
from pysched.plugins.taint_toleration import TaintToleration


@pytest.mark.parametrize(
    ("taints", "tolerations", "fits"),
    [
        ([], [], True),
        ([("dedicated", "user1", "NoSchedule")], [], False),
        (
            [("dedicated", "user1", "NoSchedule")],
            [("dedicated", "user1", "NoSchedule", "Equal")],
            True,
        ),
        (
            [("dedicated", "user1", "NoSchedule")],
            [("dedicated", "user2", "NoSchedule", "Equal")],
            False,
        ),
        ([("dedicated", "user1", "NoSchedule")], [("dedicated", "", "NoSchedule", "Exists")], True),
        ([("dedicated", "user1", "NoExecute")], [("dedicated", "", "NoSchedule", "Exists")], False),
        ([("dedicated", "user1", "NoSchedule")], [("dedicated", "", "", "Exists")], True),
        # PreferNoSchedule never filters
        ([("soft", "x", "PreferNoSchedule")], [], True),
        # the first untolerated taint decides
        ([("a", "1", "NoSchedule"), ("b", "2", "NoExecute")], [("a", "1", "", "Equal")], False),
    ],
)
def test_filter(taints, tolerations, fits) -> None:  # type: ignore[no-untyped-def]
    node = make_node()
    for k, v, e in taints:
        node.taint(k, v, e)
    pod = make_pod()
    for k, v, e, op in tolerations:
        pod.toleration(k, v, e, op)
    s = TaintToleration().filter(CycleState(), pod.obj(), node_info(node.obj()))
    if fits:
        assert s is None
    else:
        assert s is not None
        assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        # v1.35+ wording (kubernetes#134740): taint keys/values are no longer disclosed.
        assert s.reasons == ["node(s) had untolerated taint(s)"]


def test_score_counts_intolerable_prefer_no_schedule_and_reverses() -> None:
    # Upstream TestTaintTolerationScore "the more intolerable taints a node has, the lower
    # its score": 0 -> 100, 1 -> 50, 2 -> 0.
    nodes = [
        make_node("n0").obj(),
        make_node("n1").taint("cpu-type", "arm64", "PreferNoSchedule").obj(),
        make_node("n2")
        .taint("cpu-type", "arm64", "PreferNoSchedule")
        .taint("disk-type", "ssd", "PreferNoSchedule")
        .obj(),
        # NoSchedule taints are ignored by scoring; a tolerated PreferNoSchedule too
        make_node("n3").taint("x", "y", "NoSchedule").taint("foo", "bar", "PreferNoSchedule").obj(),
    ]
    pod = make_pod().toleration("foo", "bar", "PreferNoSchedule").obj()
    got = run_score(TaintToleration(), pod, FakeSnapshot(nodes))
    assert got == {"n0": 100, "n1": 50, "n2": 0, "n3": 100}


def test_score_all_zero_gives_max() -> None:
    got = run_score(TaintToleration(), make_pod().obj(), FakeSnapshot([make_node("a").obj()]))
    assert got == {"a": 100}


def test_toleration_with_empty_effect_counts_for_prefer_no_schedule() -> None:
    nodes = [make_node("n1").taint("k", "v", "PreferNoSchedule").obj(), make_node("n2").obj()]
    pod = make_pod().toleration("k", "v", "", "Equal").obj()
    assert run_score(TaintToleration(), pod, FakeSnapshot(nodes)) == {"n1": 100, "n2": 100}


@pytest.mark.parametrize("prefer", [False, True])
def test_score_batch_without_prefer_taints_counts_nothing(
    prefer: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No PreferNoSchedule taint the pod leaves untolerated: every row gets 100 without
    counting taints over the rows (issue 23 item 7); with one, the rows are counted."""
    import numpy as np

    from pysched.framework.node_table import NodeTable

    n0 = make_node("n0").taint("spot", "true", "PreferNoSchedule") if prefer else make_node("n0")
    nodes = [n0.obj(), make_node("n1").obj()]
    snap = FakeSnapshot(nodes)
    table = NodeTable()
    table.rebuild(snap.list())
    counted: list[int] = []
    real = NodeTable.count_prefer_taints
    monkeypatch.setattr(NodeTable, "count_prefer_taints",
                        lambda self, ids, rows: (counted.append(1), real(self, ids, rows))[1])
    pl = TaintToleration()
    pod = make_pod("p").obj()
    state = CycleState()
    pl.pre_score(state, pod, snap.list())
    got = pl.score_batch(state, pod, table, np.array([0, 1], np.int64))
    assert got.tolist() == ([0, 100] if prefer else [100, 100])
    assert counted == ([1] if prefer else [])
