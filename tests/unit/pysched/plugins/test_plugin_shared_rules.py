"""Rules two in-tree plugins share are written once (issue 25): the events after which a
taint-rejected pod may fit (NodeUnschedulable, TaintToleration), and AddPod/RemovePod of the
plugins whose PreFilter state counts pods (InterPodAffinity, PodTopologySpread)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import make_node, make_pod, node_info

from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code
from pysched.framework.types import PodInfo
from pysched.plugins import (
    helper,
    inter_pod_affinity,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
)


def test_taint_plugins_register_the_same_events() -> None:
    def events(plugin: Any) -> list[tuple[Any, Any]]:
        return [(e.event.resource, e.event.action_type) for e in plugin.events_to_register()]

    unschedulable = node_unschedulable.new(None, None)
    taints = taint_toleration.new(None, None)
    assert events(unschedulable) == events(taints) == events(
        type("P", (), {"events_to_register": lambda self: helper.taint_events(
            lambda *a: None, lambda *a: None)})())


COUNTING = [(inter_pod_affinity, "error reading 'PreFilterInterPodAffinity' from cycleState"),
            (pod_topology_spread, "reading 'PreFilterPodTopologySpread' from cycleState")]


@pytest.mark.parametrize(("module", "message"), COUNTING)
def test_add_and_remove_without_prefilter_state_is_an_error(module: Any, message: str) -> None:
    plugin = module.new(None, None)
    pod = make_pod("p").obj()
    info = node_info(make_node("n1").obj())
    for call in (plugin.add_pod, plugin.remove_pod):
        status = call(CycleState(), pod, PodInfo(pod), info)
        assert status is not None
        assert status.code == Code.ERROR
        assert status.reasons == [message]


def test_counting_plugins_share_add_and_remove() -> None:
    ipa, pts = inter_pod_affinity.InterPodAffinity, pod_topology_spread.PodTopologySpread
    assert ipa.add_pod is pts.add_pod is helper.PodCountingExtensions.add_pod
    assert ipa.remove_pod is pts.remove_pod is helper.PodCountingExtensions.remove_pod
