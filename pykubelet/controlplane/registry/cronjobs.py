"""CronJobs (batch/v1, pkg/registry/batch/cronjob): a create starts with no status and
generation 1; the CronJob controller writes the status subresource."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import CRONJOBS
from pykubelet.controlplane.registry.strategy import Strategy


class CronJobStrategy(Strategy):
    info = CRONJOBS
    has_status = True
    tracks_generation = True
