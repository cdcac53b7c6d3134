"""observe_attempt resolves its labelled series once per (result, profile): prometheus_client's
labels() validates and locks on every call, once per scheduled pod."""

from __future__ import annotations

from prometheus_client import generate_latest

from pysched.metrics import SchedulerMetrics


def test_attempts_counted_and_labels_resolved_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    m = SchedulerMetrics()
    calls: list[tuple[str, ...]] = []
    real = type(m._attempts).labels

    def spy(self, *values):  # type: ignore[no-untyped-def]
        calls.append(values)
        return real(self, *values)

    monkeypatch.setattr(type(m._attempts), "labels", spy)
    for _ in range(3):
        m.observe_attempt("scheduled", "default-scheduler", 0.001)
    m.observe_attempt("unschedulable", "default-scheduler", 0.002)
    text = generate_latest(m.registry).decode()
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 3.0'
        in text
    )
    assert (
        'scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",'
        'result="unschedulable"} 1.0' in text
    )
    assert calls == [("scheduled", "default-scheduler"), ("unschedulable", "default-scheduler")]
