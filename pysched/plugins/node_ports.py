"""NodePorts: a pod's hostPorts must be free on the node (0.0.0.0 conflicts with every IP)."""

from __future__ import annotations

from typing import Any

from pykubelet.api.types import Pod
from pysched.framework.cycle_state import CycleState
from pysched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from pysched.framework.node_table import Mask, NodeTable, NominatedLoad
from pysched.framework.status import Code, Status
from pysched.framework.types import HostPortInfo, NodeInfo, PreFilterResult, host_ports
from pysched.plugins import node_fits

NAME = node_fits.NODE_PORTS
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = node_fits.NODE_PORTS_ERR_REASON
fits_ports = node_fits.fits_ports


class NodePorts:
    def name(self) -> str:
        return NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        ports = host_ports(pod)
        if not ports:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, ports)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        want = state.get(PRE_FILTER_STATE_KEY)
        if want is None:
            return Status(
                Code.ERROR, [f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found"]
            )
        if not fits_ports(want, node_info.used_ports):
            return Status(Code.UNSCHEDULABLE, [ERR_REASON])
        return None

    def filter_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, nominated: NominatedLoad | None
    ) -> Mask | None:
        if host_ports(pod):
            return None  # ports in use are not in the columns: the per-node method decides
        return table.every_row

    def resource_monotone(self) -> bool:
        return False  # other pods' host ports matter

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), _after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]


def _after_pod_deleted(pod: Any, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterPodDeleted: a scheduled pod that held one of the wanted host ports."""
    if old is None or not old.spec.node_name:
        return QueueingHint.QUEUE_SKIP
    freed = HostPortInfo()
    for ip, proto, port in host_ports(old):
        freed.add(ip, proto, port)
    if fits_ports(host_ports(pod), freed):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def new(args: Any, handle: Any) -> NodePorts:
    return NodePorts()
