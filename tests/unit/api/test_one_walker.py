"""One walker, one set of rules: pysched's slim decode and pykubelet.api's complete one read
the same manifest into the same model the same way, and fail on the same problem with the same
words."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from real_objects import REAL_POD

from pykubelet.api import kinds, validation
from pykubelet.api.machinery.errors import DecodeError, UnknownFieldError
from pysched import decode as sched_decode
from pysched.views import int_resources


def test_a_real_pod_reads_in_both_views() -> None:
    slim = sched_decode.pod(copy.deepcopy(REAL_POD))
    full = kinds.POD.decode(copy.deepcopy(REAL_POD))
    assert type(slim) is type(full)
    assert slim.spec.unmodelled == {}
    limits = {"cpu": 500, "memory": 256 * 2**20}
    assert int_resources(slim.spec.containers[0].resources.limits) == limits
    assert slim.spec.topology_spread_constraints[0].max_skew == 1
    assert full.spec.topology_spread_constraints[0].max_skew == 1
    assert slim.spec.node_name == full.spec.node_name == "node-1"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["spec", "containers", 0, "bogus"], 1, "spec.containers[0].bogus: unknown field"),
        (["spec", "containers", 0, "resources", "limits", "cpu"], "abc",
         'spec.containers[0].resources.limits.cpu: invalid quantity "abc": quantities must '
         "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
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
    for decode in (sched_decode.pod, kinds.POD.decode):
        with pytest.raises(DecodeError) as ei:
            decode(copy.deepcopy(doc))
        errors.append(ei.value)
    assert [str(e) for e in errors] == [message, message]
    assert type(errors[0]) is type(errors[1])
    assert isinstance(errors[0], UnknownFieldError) == message.endswith("unknown field")


_NA = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_PAA = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (["spec", "tolerations", 0, "operator"], "Maybe",
         'spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: '
         '"Equal", "Exists"'),
        (["spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution",
          0, "podAffinityTerm", "topologyKey"], "",
         f"{_PAA}.podAffinityTerm.topologyKey: Required value: can not be empty"),
        (["spec", "topologySpreadConstraints", 0, "maxSkew"], 0,
         "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"),
        (["spec", "topologySpreadConstraints", 0, "whenUnsatisfiable"], "Never",
         'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Never": '
         'supported values: "DoNotSchedule", "ScheduleAnyway"'),
        (["spec", "affinity", "nodeAffinity"],
         {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]}},
         f'{_NA}.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": '
         "not a valid selector operator"),
        (["spec", "topologySpreadConstraints", 0, "labelSelector"],
         {"matchExpressions": [{"key": "", "operator": "Exists"}]},
         'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].key: Invalid '
         'value: "": name part must be non-empty'),
        (["spec", "containers", 0, "ports", 0, "protocol"], "XTP",
         'spec.containers[0].ports[0].protocol: Unsupported value: "XTP": supported values: '
         '"SCTP", "TCP", "UDP"'),
    ],
)
def test_what_the_scheduler_cannot_read_the_api_refuses(
    path: list[Any], value: Any, expected: str
) -> None:
    """Every pod the API server accepts decodes in pysched's view: the checks pysched's
    decoding makes, the API's validation makes too (with upstream's words)."""
    doc = copy.deepcopy(REAL_POD)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    pod = kinds.POD.set_defaults(kinds.POD.decode(copy.deepcopy(doc)))
    assert expected in [str(e) for e in kinds.POD.validate(pod)]
    with pytest.raises(DecodeError):
        sched_decode.pod(doc)


def test_the_real_pod_is_valid_for_the_api() -> None:
    pod = kinds.POD.set_defaults(kinds.POD.decode(copy.deepcopy(REAL_POD)))
    # its ephemeral container was added to the running pod (pods/ephemeralcontainers)
    assert [str(e) for e in kinds.POD.validate(pod)] == [
        "spec.ephemeralContainers: Forbidden: cannot be set on create"]
    created = copy.deepcopy(pod)
    created.spec.ephemeral_containers = []
    assert kinds.POD.validate(created) == []
    assert validation.pod_ephemeral_containers_update_errors(pod, created) == []
