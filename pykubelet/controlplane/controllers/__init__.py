"""The control loops that run beside the API: the scheduler, node lifecycle, pod GC,
namespace deletion, disruption budgets, event expiry and store compaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlane

Controller = Callable[["ControlPlane"], Awaitable[Any]]


def default_controllers() -> list[Controller]:
    return []
