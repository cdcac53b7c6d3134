"""CustomResourceDefinitions through the API: a definition is checked (422 in upstream's
words, nothing written), Established, and its resource served at once: CRUD, selectors,
discovery, Tables from printer columns, status, schema checks, pruning and defaulting,
merge patches (strategic merge refused), and its objects deleted with it."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP = "stable.example.com"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def crd(plural: str = "widgets", kind: str = "Widget", scope: str = "Namespaced",
        **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP, "scope": scope,
            "names": {"plural": plural, "kind": kind, "shortNames": [plural[:2] + "x"],
                      "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.selector"}},
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "replicas": {"type": "integer", "minimum": 1, "default": 1},
                        "size": {"type": "string", "enum": ["small", "large"]}}},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string"}, "replicas": {"type": "integer"},
                        "selector": {"type": "string"}}}}}},
            }],
        },
    }
    body["spec"].update(extra)
    return body


def wait_established(api: Any, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        r = api.call("GET", f"{CRDS}/{name}")
        got = r.json()
        conds = {c["type"]: c for c in (got.get("status") or {}).get("conditions") or []}
        if conds.get("Established", {}).get("status") == "True":
            return got  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, got
        time.sleep(0.05)


def wait_gone(api: Any, path: str) -> None:
    deadline = time.monotonic() + 10
    while api.call("GET", path).status != 404:
        assert time.monotonic() < deadline, path
        time.sleep(0.05)


@pytest.fixture
def widgets(api: Any) -> Iterator[str]:
    r = api.call("POST", CRDS, crd())
    assert r.status == 201, r.body
    wait_established(api, f"widgets.{GROUP}")
    yield f"/apis/{GROUP}/v1/namespaces/default/widgets"
    api.call("DELETE", f"{CRDS}/widgets.{GROUP}")
    wait_gone(api, f"{CRDS}/widgets.{GROUP}")


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": "small", **spec}}


def test_a_crd_is_established_with_its_names_and_stored_version(api: Any,
                                                                widgets: str) -> None:
    got = api.call("GET", f"{CRDS}/widgets.{GROUP}").json()
    conds = {c["type"]: c for c in got["status"]["conditions"]}
    assert (conds["NamesAccepted"]["status"], conds["NamesAccepted"]["reason"],
            conds["NamesAccepted"]["message"]) == ("True", "NoConflicts", "no conflicts found")
    assert (conds["Established"]["reason"], conds["Established"]["message"]) == (
        "InitialNamesAccepted", "the initial names have been accepted")
    assert got["status"]["acceptedNames"]["plural"] == "widgets"
    assert got["status"]["storedVersions"] == ["v1"]
    assert got["spec"]["names"]["singular"] == "widget"
    assert got["spec"]["names"]["listKind"] == "WidgetList"
    assert got["spec"]["conversion"] == {"strategy": "None"}
    table = api.call("GET", CRDS, headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda b: b["metadata"].update(name="gadgets.stable.example.com"),
     'metadata.name: Invalid value: "gadgets.stable.example.com": must be '
     'spec.names.plural+"."+spec.group'),
    (lambda b: b["spec"].update(scope="Galaxy"),
     'spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced"'),
    (lambda b: b["spec"]["versions"][0].update(storage=False),
     "spec.versions: Invalid value: "),
    (lambda b: b["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"].pop("type"),
     "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must "
     "not be empty for specified object fields"),
    (lambda b: b["spec"]["versions"][0].pop("schema"),
     "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"),
    (lambda b: b["spec"].update(conversion={"strategy": "Webhook"}),
     'spec.conversion.strategy: Invalid value: "Webhook": conversion webhooks are not '
     "supported"),
])
def test_a_bad_crd_is_422_and_not_written(api: Any, change: Any, message: str) -> None:
    body = crd("things", "Thing")
    change(body)
    r = api.call("POST", CRDS, body)
    assert r.status == 422, r.body
    assert message in r.json()["message"], r.json()["message"]
    assert r.json()["message"].startswith(
        f'CustomResourceDefinition.apiextensions.k8s.io "{body["metadata"]["name"]}" is '
        "invalid: ")
    assert api.call("GET", f"{CRDS}/{body['metadata']['name']}").status == 404


def test_custom_resources_crud_defaults_and_selectors(api: Any, widgets: str) -> None:
    r = api.call("POST", widgets, widget("w1") | {"metadata": {"name": "w1",
                                                                "labels": {"a": "1"}}})
    assert r.status == 201, r.body
    w1 = r.json()
    assert w1["spec"] == {"size": "small", "replicas": 1}  # defaulted
    assert w1["metadata"]["generation"] == 1
    assert w1["apiVersion"] == f"{GROUP}/v1"
    assert w1["kind"] == "Widget"
    assert api.call("POST", widgets, widget("w2", replicas=3)).status == 201
    names = [i["metadata"]["name"] for i in api.call("GET", widgets).json()["items"]]
    assert names == ["w1", "w2"]
    listed = api.call("GET", f"{widgets}?labelSelector=a%3D1").json()
    assert listed["kind"] == "WidgetList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w1"]
    by_name = api.call("GET", f"{widgets}?fieldSelector=metadata.name%3Dw2").json()
    assert [i["metadata"]["name"] for i in by_name["items"]] == ["w2"]
    everywhere = api.call("GET", f"/apis/{GROUP}/v1/widgets").json()
    assert len(everywhere["items"]) == 2
    # update: a spec change moves generation; status is the subresource's
    w1["spec"]["replicas"] = 2
    w1["status"] = {"phase": "Ignored"}
    r = api.call("PUT", f"{widgets}/w1", w1)
    assert r.status == 200, r.body
    assert r.json()["metadata"]["generation"] == 2
    assert "status" not in r.json()
    st = api.call("PATCH", f"{widgets}/w1/status", {"status": {"phase": "Ready"}},
                  content_type="application/merge-patch+json")
    assert st.status == 200, st.body
    assert st.json()["status"] == {"phase": "Ready"}
    assert st.json()["metadata"]["generation"] == 2
    merged = api.call("PATCH", f"{widgets}/w1", {"spec": {"size": "large"}},
                      content_type="application/merge-patch+json")
    assert merged.status == 200, merged.body
    assert merged.json()["spec"] == {"size": "large", "replicas": 2}
    smp = api.call("PATCH", f"{widgets}/w1", {"spec": {"size": "small"}},
                   content_type="application/strategic-merge-patch+json")
    assert smp.status == 415
    assert smp.json()["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml")
    assert api.call("DELETE", f"{widgets}/w2").status == 200
    assert api.call("GET", f"{widgets}/w2").status == 404


def test_a_bad_custom_resource_is_422_and_not_written(api: Any, widgets: str) -> None:
    r = api.call("POST", widgets, widget("bad", replicas="three"))
    assert r.status == 422, r.body
    assert r.json()["message"] == (
        f'Widget.{GROUP} "bad" is invalid: spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string"')
    assert r.json()["details"]["causes"][0]["field"] == "spec.replicas"
    assert api.call("GET", f"{widgets}/bad").status == 404
    r = api.call("POST", widgets, widget("bad", size="huge", replicas=0))
    assert r.status == 422
    assert "spec.size: Unsupported value: \"huge\"" in r.json()["message"]
    assert "spec.replicas in body should be greater than or equal to 1" in r.json()["message"]


def test_unknown_fields_strict_400_warn_or_pruned(api: Any, widgets: str) -> None:
    body = widget("p", colour="red")
    r = api.call("POST", f"{widgets}?fieldValidation=Strict", body)
    assert r.status == 400, r.body
    assert 'strict decoding error: unknown field "spec.colour"' in r.json()["message"]
    r = api.call("POST", f"{widgets}?fieldValidation=Warn", body)
    assert r.status == 201, r.body
    assert r.headers.get("Warning") == '299 - "unknown field \\"spec.colour\\""'
    assert "colour" not in r.json()["spec"]


def test_discovery_and_table(api: Any, widgets: str) -> None:
    groups = api.call("GET", "/apis").json()["groups"]
    mine = next(g for g in groups if g["name"] == GROUP)
    assert mine["preferredVersion"]["groupVersion"] == f"{GROUP}/v1"
    res = api.call("GET", f"/apis/{GROUP}/v1").json()["resources"]
    main = next(r for r in res if r["name"] == "widgets")
    assert (main["kind"], main["namespaced"], main["singularName"]) == (
        "Widget", True, "widget")
    assert main["shortNames"] == ["wix"]
    assert main["categories"] == ["all"]
    assert sorted(main["verbs"]) == ["create", "delete", "deletecollection", "get", "list",
                                     "patch", "update", "watch"]
    assert any(r["name"] == "widgets/status" for r in res)
    ext = api.call("GET", "/apis/apiextensions.k8s.io/v1").json()["resources"]
    assert any(r["name"] == "customresourcedefinitions" and r["shortNames"] == ["crd", "crds"]
               for r in ext)
    idx = api.call("GET", "/openapi/v3").json()["paths"]
    assert f"apis/{GROUP}/v1" in idx
    assert api.call("POST", widgets, widget("t", replicas=4)).status == 201
    table = api.call("GET", widgets, headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Replicas", "Size",
                                                              "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[:3] == ["t", 4, "small"]
    assert cells[3].endswith("s")


def test_cluster_scoped_and_default_columns(api: Any) -> None:
    body = crd("gizmos", "Gizmo", "Cluster")
    del body["spec"]["versions"][0]["additionalPrinterColumns"]
    assert api.call("POST", CRDS, body).status == 201
    try:
        wait_established(api, f"gizmos.{GROUP}")
        path = f"/apis/{GROUP}/v1/gizmos"
        r = api.call("POST", path, widget("g") | {"kind": "Gizmo"})
        assert r.status == 201, r.body
        assert "namespace" not in r.json()["metadata"]
        table = api.call("GET", path, headers={"Accept": TABLE}).json()
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
        assert api.call("GET", f"/apis/{GROUP}/v1/namespaces/default/gizmos").status == 404
    finally:
        api.call("DELETE", f"{CRDS}/gizmos.{GROUP}")
        wait_gone(api, f"{CRDS}/gizmos.{GROUP}")


def test_deleting_the_crd_deletes_its_objects(api: Any) -> None:
    assert api.call("POST", CRDS, crd("doomeds", "Doomed")).status == 201
    wait_established(api, f"doomeds.{GROUP}")
    path = f"/apis/{GROUP}/v1/namespaces/default/doomeds"
    for n in ("a", "b"):
        assert api.call("POST", path, widget(n) | {"kind": "Doomed"}).status == 201
    r = api.call("DELETE", f"{CRDS}/doomeds.{GROUP}")
    assert r.status == 200, r.body
    wait_gone(api, f"{CRDS}/doomeds.{GROUP}")
    assert api.call("GET", path).status == 404
    # made again, it starts empty
    assert api.call("POST", CRDS, crd("doomeds", "Doomed")).status == 201
    try:
        wait_established(api, f"doomeds.{GROUP}")
        assert api.call("GET", path).json()["items"] == []
    finally:
        api.call("DELETE", f"{CRDS}/doomeds.{GROUP}")
        wait_gone(api, f"{CRDS}/doomeds.{GROUP}")


def test_a_name_taken_in_the_group_is_not_accepted(api: Any, widgets: str) -> None:
    other = copy.deepcopy(crd("widgetz", "Widget"))
    assert api.call("POST", CRDS, other).status == 201
    try:
        deadline = time.monotonic() + 10
        while True:
            got = api.call("GET", f"{CRDS}/widgetz.{GROUP}").json()
            conds = {c["type"]: c for c in (got.get("status") or {}).get("conditions") or []}
            if "NamesAccepted" in conds:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert conds["NamesAccepted"]["status"] == "False"
        assert conds["NamesAccepted"]["reason"] == "NameConflict"
        assert conds["Established"]["status"] == "False"
        assert api.call("GET", f"/apis/{GROUP}/v1/namespaces/default/widgetz").status == 404
    finally:
        api.call("DELETE", f"{CRDS}/widgetz.{GROUP}")
        wait_gone(api, f"{CRDS}/widgetz.{GROUP}")


def test_the_scale_subresource(api: Any, widgets: str) -> None:
    assert api.call("POST", widgets, widget("s", replicas=2)).status == 201
    st = api.call("PATCH", f"{widgets}/s/status",
                  {"status": {"replicas": 2, "selector": "app=s"}},
                  content_type="application/merge-patch+json")
    assert st.status == 200, st.body
    got = api.call("GET", f"{widgets}/s/scale")
    assert got.status == 200, got.body
    scale = got.json()
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 2, "selector": "app=s"}
    r = api.call("PATCH", f"{widgets}/s/scale", {"spec": {"replicas": 5}},
                 content_type="application/merge-patch+json")
    assert r.status == 200, r.body
    assert r.json()["spec"] == {"replicas": 5}
    obj = api.call("GET", f"{widgets}/s").json()
    assert obj["spec"]["replicas"] == 5
    assert obj["status"]["replicas"] == 2
    bad = api.call("PUT", f"{widgets}/s/scale", scale | {"spec": {"replicas": -1}})
    assert bad.status == 422, bad.body
    res = api.call("GET", f"/apis/{GROUP}/v1").json()["resources"]
    assert any(r["name"] == "widgets/scale" and r["kind"] == "Scale" for r in res)


def test_several_versions_with_the_none_conversion(api: Any) -> None:
    body = crd("multis", "Multi")
    v1 = body["spec"]["versions"][0]
    beta = copy.deepcopy(v1) | {"name": "v1beta1", "storage": False}
    beta["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] = {
        "type": "string"}
    body["spec"]["versions"] = [beta, v1]
    assert api.call("POST", CRDS, body).status == 201
    try:
        wait_established(api, f"multis.{GROUP}")
        beta_path = f"/apis/{GROUP}/v1beta1/namespaces/default/multis"
        v1_path = f"/apis/{GROUP}/v1/namespaces/default/multis"
        start = api.call("GET", v1_path).json()["metadata"]["resourceVersion"]
        made = api.call("POST", beta_path, {"apiVersion": f"{GROUP}/v1beta1", "kind": "Multi",
                                            "metadata": {"name": "m"},
                                            "spec": {"size": "small", "extra": "x"}})
        assert made.status == 201, made.body
        assert made.json()["apiVersion"] == f"{GROUP}/v1beta1"
        as_v1 = api.call("GET", f"{v1_path}/m").json()
        assert as_v1["apiVersion"] == f"{GROUP}/v1"
        assert as_v1["spec"]["extra"] == "x"  # None conversion: nothing but apiVersion
        assert as_v1["metadata"]["resourceVersion"] == made.json()["metadata"][
            "resourceVersion"]
        listed = api.call("GET", beta_path).json()
        assert [i["apiVersion"] for i in listed["items"]] == [f"{GROUP}/v1beta1"]
        # a v1 write reads back in v1beta1
        as_v1["spec"]["replicas"] = 3
        assert api.call("PUT", f"{v1_path}/m", as_v1).status == 200
        got = api.call("GET", f"{beta_path}/m").json()
        assert (got["apiVersion"], got["spec"]["replicas"]) == (f"{GROUP}/v1beta1", 3)
        events = api.call("GET", f"{beta_path}?watch=1&resourceVersion={start}"
                                 "&timeoutSeconds=1").body.splitlines()
        seen = [(orjson.loads(e)["type"], orjson.loads(e)["object"]["apiVersion"])
                for e in events]
        assert seen == [("ADDED", f"{GROUP}/v1beta1"), ("MODIFIED", f"{GROUP}/v1beta1")]
        group = api.call("GET", f"/apis/{GROUP}").json()
        assert group["preferredVersion"]["version"] == "v1"
        assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
        stored = api.call("GET", f"{CRDS}/multis.{GROUP}").json()["status"]["storedVersions"]
        assert stored == ["v1"]
    finally:
        api.call("DELETE", f"{CRDS}/multis.{GROUP}")
        wait_gone(api, f"{CRDS}/multis.{GROUP}")
