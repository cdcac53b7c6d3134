"""Server-side apply and managedFields through the API (issue 28 item 1): PATCH with
``application/apply-patch+yaml`` creates (201) and updates any resource, conflicts are 409
with upstream's message and causes, ``force=true`` takes the fields, fields dropped from
the manifest go; every create, update and patch records its manager (the fieldManager
parameter, else the user agent's prefix); bad apply bodies and options are refused with
nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import yaml
from cp_live import LiveAPI

APPLY = "application/apply-patch+yaml"
DEP = "/apis/apps/v1/namespaces/default/deployments"
CM = "/api/v1/namespaces/default/configmaps"


def deployment(name: str, replicas: int = 1, labels: dict[str, str] | None = None
               ) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c",
                                                           "image": "nginx"}]}}}}


def apply(api: LiveAPI, path: str, body: Any, manager: str | None = "kubectl",
          force: bool = False, as_yaml: bool = False) -> Any:
    q = []
    if manager is not None:
        q.append(f"fieldManager={manager}")
    if force:
        q.append("force=True")  # as the Python client writes it (Go's ParseBool reads it)
    data = yaml.safe_dump(body).encode() if as_yaml else orjson.dumps(body)
    return api.call("PATCH", path + ("?" + "&".join(q) if q else ""), data=data,
                    content_type=APPLY)


@pytest.fixture
def cleanup(api: LiveAPI) -> Iterator[list[str]]:
    paths: list[str] = []
    try:
        yield paths
    finally:
        for p in paths:
            api.call("DELETE", p)


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


def test_apply_creates_then_conflicts_then_force_takes_the_field(
        api: LiveAPI, cleanup: list[str]) -> None:
    path = f"{DEP}/ssa-web"
    cleanup.append(path)
    reply = apply(api, path, deployment("ssa-web"), as_yaml=True)
    assert reply.status == 201, reply.body[:400]
    created = reply.json()
    entry = managers(created)[("kubectl", "Apply")]
    assert entry["apiVersion"] == "apps/v1"
    assert entry["fieldsType"] == "FieldsV1"
    assert "f:replicas" in entry["fieldsV1"]["f:spec"]
    assert created["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted as a create
    # a second manager changing replicas conflicts
    reply = apply(api, path, deployment("ssa-web", replicas=3), manager="other")
    assert reply.status == 409, reply.body[:400]
    status = reply.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == ('Apply failed with 1 conflict: conflict with "kubectl": '
                                 '.spec.replicas')
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                            "message": 'conflict with "kubectl"',
                                            "field": ".spec.replicas"}]
    assert api.call("GET", path).json()["spec"]["replicas"] == 1  # nothing written
    reply = apply(api, path, deployment("ssa-web", replicas=3), manager="other", force=True)
    assert reply.status == 200, reply.body[:400]
    obj = reply.json()
    assert obj["spec"]["replicas"] == 3
    assert "f:replicas" not in managers(obj)[("kubectl", "Apply")]["fieldsV1"]["f:spec"]
    assert "f:replicas" in managers(obj)[("other", "Apply")]["fieldsV1"]["f:spec"]


def test_a_label_dropped_from_the_manifest_is_removed(api: LiveAPI,
                                                      cleanup: list[str]) -> None:
    path = f"{DEP}/ssa-labels"
    cleanup.append(path)
    labels = {"app": "ssa-labels", "tier": "fe"}
    assert apply(api, path, deployment("ssa-labels", labels=labels)).status == 201
    reply = apply(api, path, deployment("ssa-labels", labels={"app": "ssa-labels"}))
    assert reply.status == 200, reply.body[:400]
    assert reply.json()["metadata"]["labels"] == {"app": "ssa-labels"}


def test_an_update_conflicts_with_the_updater_using_its_version(
        api: LiveAPI, cleanup: list[str]) -> None:
    path = f"{CM}/ssa-cm"
    cleanup.append(path)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa-cm"},
            "data": {"a": "1"}}
    assert apply(api, path, body).status == 201
    reply = api.call("PATCH", path + "?fieldManager=editor",
                     data=orjson.dumps({"data": {"a": "2"}}),
                     content_type="application/merge-patch+json")
    assert reply.status == 200, reply.body[:300]
    assert managers(reply.json())[("editor", "Update")]["fieldsV1"] == {
        "f:data": {"f:a": {}}}
    reply = apply(api, path, {**body, "data": {"a": "3"}})
    assert reply.status == 409
    assert reply.json()["message"] == ('Apply failed with 1 conflict: conflict with '
                                       '"editor" using v1: .data.a')


def test_writes_record_the_user_agent_as_manager(api: LiveAPI, cleanup: list[str]) -> None:
    path = f"{CM}/ssa-ua"
    cleanup.append(path)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa-ua"},
            "data": {"a": "1"}}
    reply = api.call("POST", CM, body, headers={"User-Agent": "kubectl/v1.31.0 (linux)"})
    assert reply.status == 201, reply.body[:300]
    [entry] = reply.json()["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl"
    assert entry["operation"] == "Update"
    assert entry["apiVersion"] == "v1"
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert entry["time"].endswith("Z")
    cur = reply.json()
    cur["data"]["b"] = "2"
    reply = api.call("PUT", path, cur, headers={"User-Agent": "mytool/1.0"})
    assert reply.status == 200, reply.body[:300]
    got = managers(reply.json())
    assert got[("mytool", "Update")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert got[("kubectl", "Update")]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}


@pytest.mark.parametrize(("query", "body", "code", "message"), [
    ("", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa-bad"}}, 422,
     'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
     "for apply patch"),
    ("?fieldManager=" + "m" * 129, {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "ssa-bad"}}, 422,
     'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than '
     "128 bytes"),
    ("?fieldManager=m", {"apiVersion": "v1", "kind": "Secret",
                         "metadata": {"name": "ssa-bad"}}, 400,
     "invalid object type: /v1, Kind=Secret"),
    ("?fieldManager=m", {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "other"}}, 400,
     "the name of the object (other) does not match the name on the URL (ssa-bad)"),
])
def test_bad_applies_are_refused_and_write_nothing(api: LiveAPI, query: str, body: Any,
                                                    code: int, message: str) -> None:
    reply = api.call("PATCH", f"{CM}/ssa-bad{query}", data=orjson.dumps(body),
                     content_type=APPLY)
    assert reply.status == code, reply.body[:300]
    assert reply.json()["message"] == message
    assert api.call("GET", f"{CM}/ssa-bad").status == 404
    assert api.call("GET", f"{CM}/other").status == 404


def test_force_on_a_non_apply_patch_is_invalid(api: LiveAPI) -> None:
    reply = api.call("PATCH", f"{CM}/nothing?force=true", data=b"{}",
                     content_type="application/merge-patch+json")
    assert reply.status == 422
    assert reply.json()["message"] == ('PatchOptions.meta.k8s.io "" is invalid: force: '
                                       "Forbidden: may not be specified for non-apply patch")


def test_apply_to_an_object_nobody_is_recorded_for_conflicts_with_before_first_apply(
        api: LiveAPI, cleanup: list[str]) -> None:
    path = f"{CM}/ssa-old"
    cleanup.append(path)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa-old"},
            "data": {"a": "1"}}
    cur = api.call("POST", CM, body).json()
    cur["metadata"]["managedFields"] = [{}]  # upstream's way to reset them
    reply = api.call("PUT", path, cur)
    assert reply.status == 200, reply.body[:300]
    assert "managedFields" not in reply.json()["metadata"]
    reply = apply(api, path, {**body, "data": {"a": "2"}})
    assert reply.status == 409, reply.body[:300]
    assert reply.json()["message"] == ('Apply failed with 1 conflict: conflict with '
                                       '"before-first-apply" using v1: .data.a')


def test_apply_to_status_is_recorded_for_the_subresource_and_leaves_spec(
        api: LiveAPI, cleanup: list[str]) -> None:
    path = f"{DEP}/ssa-status"
    cleanup.append(path)
    assert apply(api, path, deployment("ssa-status")).status == 201
    body = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "ssa-status"},
            "spec": {"replicas": 7}, "status": {"observedGeneration": 1, "replicas": 5}}
    reply = apply(api, f"{path}/status", body, manager="ctl")
    assert reply.status == 200, reply.body[:300]
    obj = reply.json()
    assert obj["status"]["replicas"] == 5
    assert obj["spec"]["replicas"] == 1  # a status write never changes the spec
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == "ctl"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:observedGeneration": {}, "f:replicas": {}}}
    # /status of an object that does not exist is 404, never a create
    reply = apply(api, f"{DEP}/ssa-none/status", {**body, "metadata": {"name": "ssa-none"}})
    assert reply.status == 404


def test_apply_to_scale_owns_replicas_under_the_scale_subresource(
        api: LiveAPI, cleanup: list[str]) -> None:
    path = f"{DEP}/ssa-scale"
    cleanup.append(path)
    reply = api.call("POST", DEP, deployment("ssa-scale"))
    assert reply.status == 201, reply.body[:300]
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale",
             "metadata": {"name": "ssa-scale"}, "spec": {"replicas": 4}}
    reply = apply(api, f"{path}/scale", scale, manager="hpa")
    assert reply.status == 409  # the creator's Update owns spec.replicas
    assert reply.json()["details"]["causes"][0]["field"] == ".spec.replicas"
    reply = apply(api, f"{path}/scale", scale, manager="hpa", force=True)
    assert reply.status == 200, reply.body[:300]
    assert reply.json()["kind"] == "Scale"
    assert reply.json()["spec"]["replicas"] == 4
    obj = api.call("GET", path).json()
    assert obj["spec"]["replicas"] == 4
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == "hpa"]
    assert entry["operation"] == "Apply"
    assert entry["subresource"] == "scale"
    assert entry["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    # an apply to the deployment changing replicas now conflicts with the scaler
    reply = apply(api, path, deployment("ssa-scale", replicas=2), manager="ci")
    assert reply.status == 409, reply.body[:300]
    assert reply.json()["message"] == ('Apply failed with 1 conflict: conflict with "hpa" '
                                       'with subresource "scale": .spec.replicas')
    reply = apply(api, f"{path}/scale", {**scale, "kind": "Deployment"}, manager="hpa")
    assert reply.status == 400
    assert reply.json()["message"] == "invalid object type: autoscaling/v1, Kind=Deployment"


def test_sent_managed_fields_replace_on_the_main_resource_only(api: LiveAPI,
                                                               cleanup: list[str]) -> None:
    path = f"{DEP}/ssa-sent"
    cleanup.append(path)
    cur = apply(api, path, deployment("ssa-sent")).json()
    mine = [{"manager": "mine", "operation": "Update", "apiVersion": "apps/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}]
    # through /status the live entries stay, whatever the body carries
    reply = api.call("PUT", f"{path}/status",
                     {**cur, "metadata": {**cur["metadata"], "managedFields": mine}})
    assert reply.status == 200, reply.body[:300]
    assert {e["manager"] for e in reply.json()["metadata"]["managedFields"]} == {"kubectl"}
    cur = reply.json()
    # entries that do not decode are ignored, the live ones kept
    bad = [{"manager": "x", "operation": "Bogus", "fieldsType": "FieldsV1", "fieldsV1": {}}]
    reply = api.call("PUT", path, {**cur, "metadata": {**cur["metadata"],
                                                       "managedFields": bad}})
    assert reply.status == 200, reply.body[:300]
    assert {e["manager"] for e in reply.json()["metadata"]["managedFields"]} == {"kubectl"}
    cur = reply.json()
    # a PUT to the main resource replaces them with what it sends
    reply = api.call("PUT", path, {**cur, "metadata": {**cur["metadata"],
                                                       "managedFields": mine}})
    assert reply.status == 200, reply.body[:300]
    assert [e["manager"] for e in reply.json()["metadata"]["managedFields"]] == ["mine"]
