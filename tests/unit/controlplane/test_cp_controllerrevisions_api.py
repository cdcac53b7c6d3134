"""apps/v1 ControllerRevisions through the API: data is mandatory and immutable, revision
non-negative and changeable (a 422 names the field, nothing written), discovery lists
them, and the Table is NAME CONTROLLER REVISION AGE."""

from __future__ import annotations

from typing import Any

import pytest

NS = "default"
CRS = f"/apis/apps/v1/namespaces/{NS}/controllerrevisions"


def revision(name: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                            "metadata": {"name": name}, "data": {"spec": {"x": 1}},
                            "revision": 1}
    body.update(fields)
    return body


@pytest.fixture
def clean(api: Any) -> Any:
    names: list[str] = []
    yield names
    for n in names:
        api.call("DELETE", f"{CRS}/{n}")


@pytest.mark.parametrize(("name", "body", "field", "message"), [
    ("nodata", {"data": None}, "data", "Required value: data is mandatory"),
    ("negative", {"revision": -1}, "revision",
     "Invalid value: -1: must be greater than or equal to 0"),
])
def test_bad_revisions_are_422_naming_the_field(api: Any, name: str, body: dict[str, Any],
                                                field: str, message: str) -> None:
    r = api.call("POST", CRS, revision(name, **body))
    assert r.status == 422, r.body
    status = r.json()
    assert status["details"]["kind"] == "ControllerRevision"
    causes = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert causes.get(field) == message, causes
    assert api.call("GET", f"{CRS}/{name}").status == 404


def test_data_is_immutable_revision_is_not(api: Any, clean: list[str]) -> None:
    clean.append("immutable")
    created = api.call("POST", CRS, revision("immutable"))
    assert created.status == 201, created.body
    obj = created.json()
    obj["data"] = {"spec": {"x": 2}}
    r = api.call("PUT", f"{CRS}/immutable", obj)
    assert r.status == 422, r.body
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["data"]
    assert "field is immutable" in r.json()["details"]["causes"][0]["message"]
    assert api.call("GET", f"{CRS}/immutable").json()["data"] == {"spec": {"x": 1}}
    obj = api.call("GET", f"{CRS}/immutable").json()
    obj["revision"] = 7
    r = api.call("PUT", f"{CRS}/immutable", obj)
    assert r.status == 200, r.body
    assert r.json()["revision"] == 7


def test_discovery_lists_controllerrevisions(api: Any) -> None:
    resources = {r["name"]: r for r in api.call("GET", "/apis/apps/v1").json()["resources"]}
    cr = resources["controllerrevisions"]
    assert (cr["kind"], cr["namespaced"], cr["singularName"]) == (
        "ControllerRevision", True, "controllerrevision")


def test_table_columns(api: Any, clean: list[str]) -> None:
    clean += ["owned", "orphan"]
    owned = revision("owned", revision=3)
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web", "uid": "u-1",
         "controller": True}]
    assert api.call("POST", CRS, owned).status == 201
    assert api.call("POST", CRS, revision("orphan")).status == 201
    t = api.call("GET", CRS, headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name", "Controller", "Revision", "Age"]
    rows = {r["cells"][0]: r["cells"][1:3] for r in t["rows"]}
    assert rows["owned"] == ["daemonset.apps/web", 3]
    assert rows["orphan"] == ["<none>", 1]
