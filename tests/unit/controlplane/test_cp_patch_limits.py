"""Patches that cost more than they weigh (issue 24 items 5 and 16): JSON-patch ``copy``
doubles the object per operation, so the API caps the operations (10,000) and the bytes
copies add (3 MiB, kube-apiserver's JSONPatchMaxCopyBytes) as evanphx/json-patch does, and
answers at once; a patch that changes resourceVersion, name or namespace is refused as
upstream's patcher refuses it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from cp_live import LiveAPI

JSON_PATCH = "application/json-patch+json"
CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def configmap(api: LiveAPI) -> Iterator[dict[str, Any]]:
    reply = api.call("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "patched"},
                                  "data": {"big": "x" * 100_000}})
    assert reply.status == 201, reply.body[:300]
    try:
        yield reply.json()
    finally:
        api.call("DELETE", f"{CM}/patched")


def copies(n: int) -> list[dict[str, str]]:
    """n copies of the whole data map into itself: the object doubles each time."""
    return [{"op": "copy", "from": "/data", "path": f"/data/c{i}"} for i in range(n)]


def test_copies_past_the_accumulated_limit_are_refused_at_once(
        api: LiveAPI, configmap: dict[str, Any]) -> None:
    # 100 KB copied, then 200 KB, ... : 6.3 MB over six copies, past 3 MiB
    reply = api.call("PATCH", f"{CM}/patched", data=orjson.dumps(copies(6)),
                     content_type=JSON_PATCH)
    assert reply.status == 422, reply.body[:300]
    status = reply.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == ("the server rejected our request due to an error in our "
                                 "request")
    (cause,) = status["details"]["causes"]
    assert cause["reason"] == "UnexpectedServerResponse"
    assert cause["message"].startswith("Unable to complete the copy, the accumulated size "
                                       "increase of copy is ")
    assert cause["message"].endswith(", exceeding the limit 3145728")
    assert reply.seconds < 1
    # thirty doublings (hours before the cap): refused as fast
    reply = api.call("PATCH", f"{CM}/patched", data=orjson.dumps(copies(30)),
                     content_type=JSON_PATCH)
    assert reply.status == 422
    assert reply.seconds < 1
    assert api.call("GET", f"{CM}/patched").json()["data"].keys() == {"big"}


def test_too_many_operations_are_refused(api: LiveAPI, configmap: dict[str, Any]) -> None:
    ops = [{"op": "test", "path": "/metadata/name", "value": "patched"}] * 10_001
    reply = api.call("PATCH", f"{CM}/patched", ops, content_type=JSON_PATCH)
    assert reply.status == 413, reply.body[:300]
    assert reply.json()["message"] == ("The allowed maximum operations in a JSON patch is "
                                       "10000, got 10001")
    assert reply.seconds < 1
    ok = api.call("PATCH", f"{CM}/patched", ops[:10_000], content_type=JSON_PATCH)
    assert ok.status == 200, ok.body[:300]


def test_small_copies_still_apply(api: LiveAPI, configmap: dict[str, Any]) -> None:
    ops = [{"op": "copy", "from": "/data/big", "path": "/data/again"}]
    reply = api.call("PATCH", f"{CM}/patched", ops, content_type=JSON_PATCH)
    assert reply.status == 200, reply.body[:300]
    assert reply.json()["data"]["again"] == "x" * 100_000


def test_a_stale_resource_version_in_a_json_patch_conflicts(
        api: LiveAPI, configmap: dict[str, Any]) -> None:
    stale = configmap["metadata"]["resourceVersion"]
    assert api.call("PATCH", f"{CM}/patched", {"data": {"a": "1"}},
                    content_type="application/merge-patch+json").status == 200
    ops = [{"op": "replace", "path": "/metadata/resourceVersion", "value": stale},
           {"op": "add", "path": "/data/b", "value": "2"}]
    reply = api.call("PATCH", f"{CM}/patched", ops, content_type=JSON_PATCH)
    assert reply.status == 409, reply.body[:300]
    assert reply.json()["message"] == (
        'Operation cannot be fulfilled on configmaps "patched": the object has been '
        "modified; please apply your changes to the latest version and try again")
    assert "b" not in api.call("GET", f"{CM}/patched").json()["data"]
    current = api.call("GET", f"{CM}/patched").json()["metadata"]["resourceVersion"]
    ops[0]["value"] = current
    assert api.call("PATCH", f"{CM}/patched", ops, content_type=JSON_PATCH).status == 200


def test_a_patch_cannot_rename_or_move_an_object(
        api: LiveAPI, configmap: dict[str, Any]) -> None:
    reply = api.call("PATCH", f"{CM}/patched",
                     [{"op": "replace", "path": "/metadata/name", "value": "other"}],
                     content_type=JSON_PATCH)
    assert reply.status == 400, reply.body[:300]
    assert reply.json()["message"] == ("the name of the object (other) does not match the "
                                       "name on the URL (patched)")
    reply = api.call("PATCH", f"{CM}/patched", {"metadata": {"namespace": "kube-system"}},
                     content_type="application/merge-patch+json")
    assert reply.status == 400, reply.body[:300]
    assert reply.json()["message"] == ("the namespace of the object (kube-system) does not "
                                       "match the namespace on the request (default)")
    assert api.call("GET", "/api/v1/namespaces/default/configmaps/other").status == 404
