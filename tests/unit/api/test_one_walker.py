"""One walker, one set of rules: pysched's slim view and pykubelet.api's complete model read
the same manifest the same way, and fail on the same problem with the same words."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from real_objects import REAL_POD

import pysched.objects as sched
from pykubelet.api import kinds
from pysched.apimachinery.errors import DecodeError, UnknownFieldError


def test_a_real_pod_reads_in_both_views() -> None:
    slim = sched.Pod.from_dict(copy.deepcopy(REAL_POD))
    full = kinds.POD.decode(copy.deepcopy(REAL_POD))
    assert slim.spec.containers[0].resources.limits == {"cpu": 500, "memory": 256 * 2**20}
    assert slim.spec.topology_spread_constraints[0].max_skew == 1
    assert full.spec.unmodelled["topologySpreadConstraints"][0]["maxSkew"] == 1
    assert slim.spec.node_name == full.spec.node_name == "node-1"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["spec", "containers", 0, "bogus"], 1, "spec.containers[0].bogus: unknown field"),
        (["spec", "containers", 0, "resources", "limits", "cpu"], "abc",
         'spec.containers[0].resources.limits.cpu: invalid quantity "abc"'),
        (["spec", "volumes", 1, "configMap", "defaultMode"], "420",
         "spec.volumes[1].configMap.defaultMode: expected integer, got string"),
        (["status", "containerStatuses", 0, "ready"], "yes",
         "status.containerStatuses[0].ready: expected boolean, got string"),
        (["metadata", "labels", "app"], 7, "metadata.labels.app: expected string, got number"),
    ],
)
def test_the_same_problem_reads_the_same_in_both_views(
    path: list[Any], value: Any, message: str
) -> None:
    doc = copy.deepcopy(REAL_POD)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    errors = []
    for decode in (sched.Pod.from_dict, kinds.POD.decode):
        with pytest.raises(DecodeError) as ei:
            decode(copy.deepcopy(doc))
        errors.append(ei.value)
    assert [str(e) for e in errors] == [message, message]
    assert type(errors[0]) is type(errors[1])
    assert isinstance(errors[0], UnknownFieldError) == message.endswith("unknown field")
