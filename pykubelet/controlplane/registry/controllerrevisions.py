"""ControllerRevisions (apps/v1, pkg/registry/apps/controllerrevision): plain objects with
no status and no generation; the object model refuses a change of ``data``."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import CONTROLLER_REVISIONS
from pykubelet.controlplane.registry.strategy import Strategy


class ControllerRevisionStrategy(Strategy):
    info = CONTROLLER_REVISIONS
