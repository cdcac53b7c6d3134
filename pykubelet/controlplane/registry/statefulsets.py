"""StatefulSets (apps/v1, pkg/registry/apps/statefulset): the generation moves with the
spec, status is the controller's (written through ``status``), and ``scale`` reads and
writes spec.replicas as an autoscaling/v1 Scale."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import STATEFUL_SETS
from pykubelet.controlplane.registry.strategy import Strategy


class StatefulSetStrategy(Strategy):
    info = STATEFUL_SETS
    has_status = True
    tracks_generation = True
