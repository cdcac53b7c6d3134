"""The control loops that run beside the API: the scheduler, node lifecycle, pod GC,
namespace deletion, disruption budgets, event expiry and store compaction. Each is a
coroutine over the control plane, run (and restarted if it fails) by the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

Controller = Callable[["ControlPlane"], Awaitable[Any]]


def default_controllers(scheduler: bool = True) -> list[Controller]:
    from pykubelet.controlplane.controllers.disruption import run_disruption_controller
    from pykubelet.controlplane.controllers.maintenance import run_compaction, run_event_expiry
    from pykubelet.controlplane.controllers.namespace import run_namespace_controller
    from pykubelet.controlplane.controllers.nodelifecycle import run_node_lifecycle
    from pykubelet.controlplane.controllers.podgc import run_pod_gc

    out: list[Controller] = [run_node_lifecycle, run_pod_gc, run_namespace_controller,
                             run_disruption_controller, run_event_expiry, run_compaction]
    if scheduler:
        from pykubelet.controlplane.controllers.scheduler import run_scheduler

        out.insert(0, run_scheduler)
    return out
