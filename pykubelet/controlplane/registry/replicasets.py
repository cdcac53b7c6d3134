"""ReplicaSets and Deployments (apps/v1, pkg/registry/apps/{replicaset,deployment}): the
generation moves with the spec, status is the controller's (written through ``status``),
and ``scale`` reads and writes spec.replicas as an autoscaling/v1 Scale."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import DEPLOYMENTS, REPLICA_SETS
from pykubelet.controlplane.registry.strategy import Strategy


class ReplicaSetStrategy(Strategy):
    info = REPLICA_SETS
    has_status = True
    tracks_generation = True


class DeploymentStrategy(ReplicaSetStrategy):
    info = DEPLOYMENTS
