"""The fault plan is the seed's: the same seed gives the same points, another seed others,
and each victim's points cover both operations and both ends of their windows."""

from __future__ import annotations

import fault_plan


def test_a_seed_replays_its_plan_and_another_differs() -> None:
    a = fault_plan.plan("agent", 30, 29)
    assert a == fault_plan.plan("agent", 30, 29)
    assert a != fault_plan.plan("agent", 30, 30)
    assert a != fault_plan.plan("runtime", 30, 29)  # victims draw apart


def test_points_cover_operations_and_their_windows() -> None:
    points = fault_plan.plan("control-plane", 30, 29)
    assert len(points) == 30
    for op, window in fault_plan.WINDOWS.items():
        delays = [p.delay for p in points if p.operation == op]
        assert len(delays) == 15
        assert all(0 <= d <= window for d in delays)
        assert min(delays) < 0.1 * window  # the API's write and the binding
        assert max(delays) > 0.5 * window  # the node's SyncPod / stop


def test_seed_and_length_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(fault_plan.SEED_ENV, raising=False)
    monkeypatch.delenv(fault_plan.POINTS_ENV, raising=False)
    assert fault_plan.seed() == fault_plan.DEFAULT_SEED
    assert fault_plan.points_per_victim() == fault_plan.DEFAULT_POINTS
    monkeypatch.setenv(fault_plan.SEED_ENV, "7")
    monkeypatch.setenv(fault_plan.POINTS_ENV, "40")
    assert (fault_plan.seed(), fault_plan.points_per_victim()) == (7, 40)
