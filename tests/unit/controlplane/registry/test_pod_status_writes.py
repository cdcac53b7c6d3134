"""pods/status writes (podStatusStrategy): the spec is the old pod's whatever the patch
says (PrepareForUpdate keeps it), an ill-typed spec in the patched pod is still a 400
(the patched object is decoded whole), and the status written is exactly the patch's.
The store skips decoding a spec the patch left as it was: these pin what must not move."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane.errors import StatusError
from pykubelet.controlplane.registry.patch import MERGE_PATCH, STRATEGIC_MERGE_PATCH
from pykubelet.controlplane.registry.resources import PODS
from pykubelet.controlplane.registry.store import Context, GenericStore

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
       "spec": {"nodeName": "n1", "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "c", "image": "nginx",
                                "resources": {"requests": {"cpu": "100m"}}}]}}


def run(body: Callable[[GenericStore], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with memory_registry(("default",)) as registry:
            pods = registry.store(PODS)
            await pods.create(Context(field_manager="kubectl"), "default", POD)
            return await body(pods)
    return asyncio.run(main())


async def status_patch(pods: GenericStore, patch: Any, kind: str = MERGE_PATCH) -> Any:
    return await pods.patch(Context(subresource="status", field_manager="kubelet"),
                            "default", "web", kind, patch,
                            strategy=pods.strategy.subresource_strategy("status"))


def stored(pods: GenericStore) -> dict[str, Any]:
    out: dict[str, Any] = orjson.loads(pods.get("default", "web").data)
    return out


def test_a_status_patch_that_changes_the_spec_keeps_the_old_spec() -> None:
    async def body(pods: GenericStore) -> tuple[Any, Any]:
        before = stored(pods)
        await status_patch(pods, {"spec": {"containers": [{"name": "c", "image": "evil"}],
                                           "activeDeadlineSeconds": 5},
                                  "status": {"phase": "Running"}})
        return before, stored(pods)

    before, after = run(body)
    assert after["spec"] == before["spec"]
    assert after["status"]["phase"] == "Running"
    assert after["metadata"].get("generation") == before["metadata"].get("generation")


@pytest.mark.parametrize("spec", [{"activeDeadlineSeconds": "soon"},
                                  {"containers": [{"name": "c", "image": "nginx",
                                                   "bogus": 1}]},
                                  # equal to the old value by ==, not by type
                                  {"terminationGracePeriodSeconds": True}])
def test_an_ill_typed_spec_in_a_status_patch_is_still_a_400(spec: dict[str, Any]) -> None:
    async def body(pods: GenericStore) -> tuple[int, str, Any, Any]:
        before = stored(pods)
        try:
            await status_patch(pods, {"spec": spec, "status": {"phase": "Running"}},
                               STRATEGIC_MERGE_PATCH)
        except StatusError as exc:
            return exc.code, str(exc), before, stored(pods)
        return 0, "", before, stored(pods)

    code, _msg, before, after = run(body)
    assert code == 400
    assert after == before


def test_a_status_patch_writes_the_status_and_labels_and_nothing_else() -> None:
    status = {"phase": "Running", "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}],
              "conditions": [{"type": "Ready", "status": "True",
                              "lastTransitionTime": "2026-12-04T08:00:00Z"}],
              "containerStatuses": [{"name": "c", "image": "nginx", "imageID": "",
                                     "ready": True, "restartCount": 0,
                                     "state": {"running": {
                                         "startedAt": "2026-12-04T08:00:00Z"}}}]}

    async def body(pods: GenericStore) -> tuple[Any, Any]:
        before = stored(pods)
        await status_patch(pods, {"metadata": {"labels": {"seen": "yes"}},
                                  "status": status})
        return before, stored(pods)

    before, after = run(body)
    assert after["spec"] == before["spec"]
    assert orjson.dumps(after["spec"]) == orjson.dumps(before["spec"])
    assert after["metadata"]["labels"] == {"app": "web", "seen": "yes"}
    for k, v in status.items():
        if k != "containerStatuses":
            assert after["status"][k] == v, k
    assert after["status"]["containerStatuses"] == [
        {**status["containerStatuses"][0], "lastState": {}}]  # type: ignore[index]
    assert after["status"]["qosClass"] == "Burstable"


def test_a_status_patch_may_not_bring_back_a_terminated_container() -> None:
    term = {"terminated": {"exitCode": 0, "reason": "Completed"}}

    def cs(state: dict[str, Any]) -> dict[str, Any]:
        return {"containerStatuses": [{"name": "c", "image": "nginx", "imageID": "",
                                       "ready": False, "restartCount": 0, "state": state}]}

    async def body(pods: GenericStore) -> int:
        await status_patch(pods, {"status": cs(term)})
        try:
            await status_patch(pods, {"status": cs({"running": {}})})
        except StatusError as exc:
            return exc.code
        return 0

    assert run(body) == 422  # ValidatePodStatusUpdate read the old spec's restartPolicy


def test_same_json_tells_types_apart_and_takes_what_orjson_cannot_encode() -> None:
    """A status write compares the spec it was given with the stored one; a value orjson
    cannot encode (an integer past 64 bits, as a YAML body can carry) is "changed", so the
    spec is decoded and its error named, never a 500."""
    from pykubelet.controlplane.registry.strategy import same_json

    assert same_json({"a": [1, "x"]}, {"a": [1, "x"]})
    assert not same_json({"a": 1}, {"a": True})
    assert not same_json({"a": 1}, {"a": 1.0})
    assert not same_json({"a": 2**70}, {"a": 2**70})
