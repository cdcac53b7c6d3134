"""Container events derived from two observations (the pure part of GetContainerEvents)."""

from __future__ import annotations

import pytest

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.runtime.cri.events import CREATED, DELETED, STARTED, STOPPED, transitions


def _c(state: int) -> pb.Container:
    return pb.Container(id="c1", pod_sandbox_id="p1", state=state)


@pytest.mark.parametrize(
    ("before", "after", "started", "events"),
    [
        (None, pb.CONTAINER_CREATED, False, [CREATED]),
        (None, pb.CONTAINER_RUNNING, True, [CREATED, STARTED]),
        (None, pb.CONTAINER_EXITED, True, [CREATED, STARTED, STOPPED]),
        (None, pb.CONTAINER_EXITED, False, [CREATED, STOPPED]),  # never started
        (pb.CONTAINER_CREATED, pb.CONTAINER_CREATED, False, []),
        (pb.CONTAINER_CREATED, pb.CONTAINER_RUNNING, True, [STARTED]),
        (pb.CONTAINER_CREATED, pb.CONTAINER_EXITED, True, [STARTED, STOPPED]),
        (pb.CONTAINER_RUNNING, pb.CONTAINER_RUNNING, True, []),
        (pb.CONTAINER_RUNNING, pb.CONTAINER_EXITED, True, [STOPPED]),
        (pb.CONTAINER_EXITED, pb.CONTAINER_EXITED, True, []),
        (pb.CONTAINER_EXITED, None, True, [DELETED]),
        (pb.CONTAINER_RUNNING, None, True, [STOPPED, DELETED]),  # exit + removal in one poll
        (pb.CONTAINER_CREATED, None, False, [DELETED]),
    ],
)
def test_transitions(before, after, started, events) -> None:
    b = _c(before) if before is not None else None
    a = _c(after) if after is not None else None
    assert transitions(b, a, started) == events
