"""NodeName: spec.nodeName pins a pod to one node."""

from __future__ import annotations

import pytest
from builders import make_node, make_pod, node_info

from pysched.framework.cycle_state import CycleState
from pysched.framework.events import QueueingHint
from pysched.framework.status import Code
from pysched.plugins.node_name import NodeName


@pytest.mark.parametrize(
    ("node_name", "node", "fits"),
    [("", "n1", True), ("n1", "n1", True), ("n2", "n1", False)],
)
def test_filter(node_name: str, node: str, fits: bool) -> None:
    pod = make_pod().spec(nodeName=node_name).obj() if node_name else make_pod().obj()
    s = NodeName().filter(CycleState(), pod, node_info(make_node(node).obj()))
    if fits:
        assert s is None
    else:
        assert s is not None
        assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert s.reasons == ["node(s) didn't match the requested node name"]


def test_queueing_hint_only_for_the_named_node() -> None:
    (ev,) = NodeName().events_to_register()
    assert ev.queueing_hint_fn is not None
    pod = make_pod().spec(nodeName="n1").obj()
    assert ev.queueing_hint_fn(pod, None, make_node("n1").obj()) == QueueingHint.QUEUE
    assert ev.queueing_hint_fn(pod, None, make_node("n2").obj()) == QueueingHint.QUEUE_SKIP
