"""Ephemeral containers in the object model and upstream's validation of them
(validateEphemeralContainers, ValidatePodCreate, ValidatePodEphemeralContainersUpdate,
ValidatePodStatusUpdate), with upstream's wording."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykubelet.api.decode import decode_pod, encode
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod
from pykubelet.api.validation import (
    pod_ephemeral_containers_update_errors,
    pod_errors,
    pod_status_update_errors,
    pod_update_errors,
)

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                 "resourceVersion": "5"},
    "spec": {
        "initContainers": [{"name": "init", "image": "busybox:1.35"}],
        "containers": [{"name": "c", "image": "busybox:1.35"}],
        "volumes": [{"name": "data", "emptyDir": {}}],
    },
}
DEBUGGER: dict[str, Any] = {"name": "debugger", "image": "busybox:1.35",
                            "command": ["sh"], "stdin": True, "tty": True,
                            "targetContainerName": "c"}


def pod(*ephemeral: dict[str, Any], base: dict[str, Any] = POD) -> Pod:
    obj = copy.deepcopy(base)
    if ephemeral:
        obj["spec"]["ephemeralContainers"] = [copy.deepcopy(e) for e in ephemeral]
    return set_defaults_pod(decode_pod(obj))


def update_errors(*ephemeral: dict[str, Any], old: tuple[dict[str, Any], ...] = ()) -> list[str]:
    return [str(e) for e in pod_ephemeral_containers_update_errors(pod(*ephemeral), pod(*old))]


def test_spec_field_is_modelled_and_round_trips() -> None:
    p = pod(DEBUGGER)
    (ec,) = p.spec.ephemeral_containers
    assert (ec.name, ec.target_container_name, ec.stdin, ec.tty) == ("debugger", "c", True, True)
    # defaulted as any container
    assert (ec.image_pull_policy, ec.termination_message_policy) == ("IfNotPresent", "File")
    wire = encode(p)["spec"]["ephemeralContainers"][0]
    assert wire["targetContainerName"] == "c"
    assert wire["command"] == ["sh"]


def test_status_field_is_modelled() -> None:
    obj = copy.deepcopy(POD)
    obj["status"] = {"ephemeralContainerStatuses": [
        {"name": "debugger", "state": {"running": {"startedAt": "2026-12-03T10:00:00Z"}},
         "ready": False, "restartCount": 0, "image": "busybox:1.35", "imageID": ""}]}
    p = decode_pod(obj)
    (st,) = p.status.ephemeral_container_statuses
    assert st.name == "debugger"
    assert st.state.running is not None
    assert encode(p)["status"]["ephemeralContainerStatuses"][0]["name"] == "debugger"


def test_create_with_ephemeral_containers_is_forbidden() -> None:
    assert [str(e) for e in pod_errors(pod(DEBUGGER))] == [
        "spec.ephemeralContainers: Forbidden: cannot be set on create"]
    assert pod_errors(pod()) == []


def test_adding_one_is_allowed() -> None:
    assert update_errors(DEBUGGER) == []
    second = {**DEBUGGER, "name": "debugger-2"}
    assert update_errors(DEBUGGER, second, old=(DEBUGGER,)) == []
    # a patch need not keep their order
    assert update_errors(second, DEBUGGER, old=(DEBUGGER,)) == []


def test_existing_ones_may_not_be_removed_or_changed() -> None:
    assert update_errors(old=(DEBUGGER,)) == [
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" '
        "may not be removed\n"]
    changed = {**DEBUGGER, "image": "busybox:1.36"}
    (err,) = update_errors(changed, old=(DEBUGGER,))
    assert err.startswith('spec.ephemeralContainers: Forbidden: existing ephemeral containers '
                          '"debugger" may not be changed\n')
    assert "busybox:1.35" in err
    assert "busybox:1.36" in err


@pytest.mark.parametrize("name", ["c", "init"])
def test_names_are_unique_across_all_containers(name: str) -> None:
    assert update_errors({**DEBUGGER, "name": name}) == [
        f'spec.ephemeralContainers[0].name: Duplicate value: "{name}"']


def test_two_new_ones_with_one_name() -> None:
    assert update_errors(DEBUGGER, DEBUGGER) == [
        'spec.ephemeralContainers[1].name: Duplicate value: "debugger"']


def test_target_must_name_a_regular_or_init_container() -> None:
    assert update_errors({**DEBUGGER, "targetContainerName": "nope"}) == [
        'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"']
    assert update_errors({**DEBUGGER, "targetContainerName": "init"}) == []
    # another ephemeral container is no target
    second = {**DEBUGGER, "name": "d2", "targetContainerName": "debugger"}
    assert update_errors(DEBUGGER, second, old=(DEBUGGER,)) == [
        'spec.ephemeralContainers[1].targetContainerName: Not found: "debugger"']


@pytest.mark.parametrize(("field", "value"), [
    ("ports", [{"containerPort": 80}]),
    ("resources", {"limits": {"cpu": "1"}}),
    ("livenessProbe", {"exec": {"command": ["true"]}}),
    ("readinessProbe", {"exec": {"command": ["true"]}}),
    ("startupProbe", {"exec": {"command": ["true"]}}),
    ("lifecycle", {"preStop": {"exec": {"command": ["true"]}}}),
    ("restartPolicy", "Always"),
])
def test_fields_not_allowed_for_an_ephemeral_container(field: str, value: Any) -> None:
    assert update_errors({**DEBUGGER, field: value}) == [
        f"spec.ephemeralContainers[0].{field}: Forbidden: cannot be set for an Ephemeral "
        "Container"]


def test_sub_path_not_allowed_but_mounts_are() -> None:
    mounts = [{"name": "data", "mountPath": "/data"}]
    assert update_errors({**DEBUGGER, "volumeMounts": mounts}) == []
    mounts = [{"name": "data", "mountPath": "/data", "subPath": "x"}]
    assert update_errors({**DEBUGGER, "volumeMounts": mounts}) == [
        "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an "
        "Ephemeral Container"]


def test_common_container_rules_apply() -> None:
    assert update_errors({"name": "Bad_Name", "image": ""}) == [
        'spec.ephemeralContainers[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
        "label must consist of lower case alphanumeric characters or '-', and must start and "
        "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        "spec.ephemeralContainers[0].image: Required value"]


def test_static_pods_take_none() -> None:
    base = copy.deepcopy(POD)
    base["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    errs = pod_ephemeral_containers_update_errors(pod(DEBUGGER, base=base), pod(base=base))
    assert [str(e) for e in errs] == [": Forbidden: static pods do not support ephemeral "
                                      "containers"]


def test_plain_pod_update_may_not_change_them() -> None:
    errs = [str(e) for e in pod_update_errors(pod(DEBUGGER), pod())]
    assert len(errs) == 1
    assert errs[0].startswith(
        "spec: Forbidden: pod updates may not change fields other than")
    assert "ephemeralContainers" in errs[0]


def test_status_may_not_bring_a_terminated_ephemeral_container_back() -> None:
    def with_status(state: dict[str, Any]) -> Pod:
        obj = copy.deepcopy(POD)
        obj["spec"]["ephemeralContainers"] = [DEBUGGER]
        obj["status"] = {"ephemeralContainerStatuses": [
            {"name": "debugger", "state": state, "image": "busybox:1.35"}]}
        return set_defaults_pod(decode_pod(obj))

    done = with_status({"terminated": {"exitCode": 0}})
    running = with_status({"running": {}})
    assert [str(e) for e in pod_status_update_errors(running, done)] == [
        "status.ephemeralContainerStatuses[0].state: Forbidden: may not be transitioned to "
        "non-terminated state"]
    assert pod_status_update_errors(done, running) == []
