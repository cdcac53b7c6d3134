"""GetPodFromTemplate and RealPodControl, shared by the ReplicaSet and DaemonSet
controllers: the pod is the template's copy under the owner; a create or delete is
recorded on the owner with upstream's reasons and words, a failure's error returned for
the caller to judge, a pod already gone returned without an event."""

from __future__ import annotations

import asyncio
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.pod_control import PodControl, get_pod_from_template

Obj = dict[str, Any]
OWNER: Obj = {"kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "ns"}}
POD: Obj = {"metadata": {"name": "web-abc", "namespace": "ns"}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    async def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


class Pods:
    def __init__(self, error: errors.StatusError | None = None) -> None:
        self.error = error

    async def create(self, ctx: Any, ns: str, pod: Obj) -> Obj:
        if self.error is not None:
            raise self.error
        return POD

    async def delete(self, ctx: Any, ns: str, name: str, opts: Any) -> Obj:
        if self.error is not None:
            raise self.error
        return POD


def control(error: errors.StatusError | None = None) -> tuple[PodControl, Recorder]:
    rec = Recorder()
    return PodControl(Pods(error), rec), rec  # type: ignore[arg-type]


def test_create_and_delete_record_success() -> None:
    ctl, rec = control()
    assert asyncio.run(ctl.create_pod(OWNER, {"metadata": {}})) is None
    assert asyncio.run(ctl.delete_pod(OWNER, POD)) is None
    assert rec.events == [("Normal", "SuccessfulCreate", "Created pod: web-abc"),
                          ("Normal", "SuccessfulDelete", "Deleted pod: web-abc")]


def test_failures_are_recorded_and_returned() -> None:
    ctl, rec = control(errors.StatusError(403, "Forbidden", "exceeded quota"))
    create_err = asyncio.run(ctl.create_pod(OWNER, {"metadata": {}}))
    delete_err = asyncio.run(ctl.delete_pod(OWNER, POD))
    assert create_err is not None
    assert create_err.code == 403
    assert delete_err is not None
    assert delete_err.code == 403
    assert rec.events == [("Warning", "FailedCreate", "Error creating: exceeded quota"),
                          ("Warning", "FailedDelete", "Error deleting: exceeded quota")]


def test_a_pod_already_gone_is_returned_without_an_event() -> None:
    ctl, rec = control(errors.StatusError(404, "NotFound", "gone"))
    err = asyncio.run(ctl.delete_pod(OWNER, POD))
    assert err is not None
    assert err.code == 404
    assert rec.events == []


def test_pod_from_template_copies_the_template_under_the_owner() -> None:
    template: Obj = {"metadata": {"labels": {"app": "web"}, "finalizers": ["f"],
                                  "name": "ignored"},
                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    ref = {"kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": True}
    pod = get_pod_from_template(template, OWNER, ref)
    assert pod["metadata"] == {"generateName": "web-", "namespace": "ns",
                               "ownerReferences": [ref], "labels": {"app": "web"},
                               "finalizers": ["f"]}
    pod["spec"]["containers"][0]["image"] = "changed"
    pod["metadata"]["labels"]["app"] = "changed"
    assert template["spec"]["containers"][0]["image"] == "busybox"
    assert template["metadata"]["labels"] == {"app": "web"}
