"""The node status loop's two periodic writes, the lease and the status
(cluster/node_status.py's run_if_due): each a period apart, retried within a second
after a failure, never raising out of the loop."""

from __future__ import annotations

import pytest

from pykubelet.client.rest import ClientError
from pykubelet.kubelet.cluster.node_status import run_if_due


def test_not_due_runs_nothing() -> None:
    ran: list[int] = []
    assert run_if_due(5.0, 10.0, 40.0, lambda: ran.append(1), "updating") == 10.0
    assert ran == []


def test_due_runs_and_schedules_a_period_on() -> None:
    ran: list[int] = []
    assert run_if_due(10.0, 10.0, 40.0, lambda: ran.append(1), "updating") == 50.0
    assert ran == [1]


@pytest.mark.parametrize("exc", [ClientError("refused"), OSError("unreachable")])
def test_a_failure_is_logged_and_retried_within_a_second(
        exc: Exception, caplog: pytest.LogCaptureFixture) -> None:
    def fail() -> None:
        raise exc

    assert run_if_due(10.0, 0.0, 40.0, fail, "renewing the node lease") == 11.0
    assert run_if_due(10.0, 0.0, 0.5, fail, "renewing the node lease") == 10.5
    assert f"renewing the node lease: {exc}" in caplog.text


def test_other_errors_are_raised() -> None:
    def fail() -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        run_if_due(10.0, 0.0, 40.0, fail, "updating")
