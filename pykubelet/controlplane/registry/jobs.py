"""Jobs (batch/v1, pkg/registry/batch/job): a create starts with no status and generation
1, and unless ``spec.manualSelector`` is true gets the selector upstream generates (the
job's uid) with the matching labels on its pod template; the Job controller writes the
status subresource. A Job without labels gets its template's (batch/v1's SetDefaults_Job,
which upstream also runs on every read from storage, when the generated labels are on the
template: stored here once at create). A delete without a propagation policy orphans the
job's pods, as upstream's batch/v1 does for backward compatibility (jobStrategy's
DefaultGarbageCollectionPolicy): kubectl sends Background explicitly."""

from __future__ import annotations

from typing import Any

from pykubelet.api.batch_validation import generate_selector
from pykubelet.controlplane.registry.gcpolicy import ORPHAN_DEPENDENTS
from pykubelet.controlplane.registry.resources import JOBS
from pykubelet.controlplane.registry.strategy import Strategy


class JobStrategy(Strategy):
    info = JOBS
    has_status = True
    tracks_generation = True
    garbage_collection_policy = ORPHAN_DEPENDENTS

    def prepare_typed_for_create(self, typed: Any) -> None:
        super().prepare_typed_for_create(typed)
        generate_selector(typed)
        if not typed.metadata.labels:
            typed.metadata.labels = dict(typed.spec.template.metadata.labels)
