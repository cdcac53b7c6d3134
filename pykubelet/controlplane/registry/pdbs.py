"""PodDisruptionBudgets (policy/v1): minAvailable or maxUnavailable over a label selector;
the disruption controller keeps their status, the eviction subresource consumes it."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import PDBS
from pykubelet.controlplane.registry.strategy import Strategy


class PDBStrategy(Strategy):
    info = PDBS
    has_status = True
    tracks_generation = True
