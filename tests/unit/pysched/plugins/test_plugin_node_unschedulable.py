"""NodeUnschedulable: cordoned nodes reject pods unless they tolerate the unschedulable taint."""

from __future__ import annotations

import pytest
from builders import make_node, make_pod, node_info

from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code
from pysched.plugins.node_unschedulable import NodeUnschedulable


@pytest.mark.parametrize(
    ("unschedulable", "toleration", "want"),
    [
        (False, None, None),
        (True, None, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (
            True,
            {
                "key": "node.kubernetes.io/unschedulable",
                "effect": "NoSchedule",
                "operator": "Exists",
            },
            None,
        ),
        (
            True,
            {
                "key": "node.kubernetes.io/unschedulable",
                "effect": "NoExecute",
                "operator": "Exists",
            },
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ),
        (True, {"operator": "Exists"}, None),
    ],
)
def test_filter(unschedulable: bool, toleration: dict | None, want: Code | None) -> None:
    pod = make_pod()
    if toleration:
        pod.toleration(**toleration)
    ni = node_info(make_node().unschedulable(unschedulable).obj())
    s = NodeUnschedulable().filter(CycleState(), pod.obj(), ni)
    if want is None:
        assert s is None
    else:
        assert s is not None
        assert s.code == want
        assert s.reasons == ["node(s) were unschedulable"]
