"""metadata.generation kept by the strategy base for the resources that track it
(``tracks_generation``): 1 on create, +1 when an update changes the spec."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.controlplane.registry.cronjobs import CronJobStrategy
from pykubelet.controlplane.registry.jobs import JobStrategy
from pykubelet.controlplane.registry.pdbs import PDBStrategy
from pykubelet.controlplane.registry.replicasets import DeploymentStrategy, ReplicaSetStrategy
from pykubelet.controlplane.registry.resources import CONFIGMAPS
from pykubelet.controlplane.registry.strategy import Strategy

TRACKING = [CronJobStrategy, PDBStrategy, ReplicaSetStrategy, DeploymentStrategy]


# a status field each kind has, to see a create clear it
STATUS = {CronJobStrategy: {"lastScheduleTime": "2024-01-01T00:00:00Z"}}


@pytest.mark.parametrize("cls", TRACKING)
def test_create_sets_generation_one_and_clears_status(cls: type[Strategy]) -> None:
    strategy = cls()
    typed = strategy.typed({"metadata": {"name": "a", "generation": 7},
                            "status": STATUS.get(cls, {"observedGeneration": 2})})
    assert strategy.encoded(typed)["status"]  # the sample sets one
    strategy.prepare_typed_for_create(typed)
    obj = strategy.encoded(typed)
    assert obj["metadata"]["generation"] == 1
    assert not obj.get("status")


@pytest.mark.parametrize("cls", [*TRACKING, JobStrategy])
def test_update_bumps_generation_only_when_the_spec_changes(cls: type[Strategy]) -> None:
    old: dict[str, Any] = {"metadata": {"name": "a", "generation": 3}, "spec": {"x": 1},
                           "status": {"y": 2}}
    same: dict[str, Any] = {"metadata": {"name": "a", "generation": 9}, "spec": {"x": 1},
                            "status": {"y": 5}}
    cls().prepare_for_update(same, old)
    assert same["metadata"]["generation"] == 3
    assert same["status"] == {"y": 2}
    changed: dict[str, Any] = {"metadata": {"name": "a"}, "spec": {"x": 2}}
    cls().prepare_for_update(changed, old)
    assert changed["metadata"]["generation"] == 4
    unset: dict[str, Any] = {"metadata": {}, "spec": {"x": 2}}
    cls().prepare_for_update(unset, {"metadata": {}, "spec": {"x": 1}})
    assert unset["metadata"]["generation"] == 2  # an old object without one counts as 1


def test_the_flag_is_what_turns_it_on() -> None:
    class Plain(Strategy):
        info = CONFIGMAPS

    class Tracking(Plain):
        tracks_generation = True

    for cls, want in ((Plain, None), (Tracking, 1)):
        strategy = cls()
        typed = strategy.typed({"metadata": {"name": "a"}, "data": {}})
        strategy.prepare_typed_for_create(typed)
        assert strategy.encoded(typed)["metadata"].get("generation") == want
    assert all(cls.tracks_generation for cls in [*TRACKING, JobStrategy])
    assert not Strategy.tracks_generation
