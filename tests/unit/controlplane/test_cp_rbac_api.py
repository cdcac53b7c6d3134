"""rbac.authorization.k8s.io/v1 through the API: Roles, ClusterRoles, RoleBindings and
ClusterRoleBindings are served (discovery, defaults, upstream's validation wording with a
422 naming the field and nothing written, an immutable roleRef) and their Tables are
printers.go's (bindings: NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS; roles: NAME CREATED AT)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

NS = "default"
GROUP = "rbac.authorization.k8s.io"
BASE = f"/apis/{GROUP}/v1"
ROLES = f"{BASE}/namespaces/{NS}/roles"
RBS = f"{BASE}/namespaces/{NS}/rolebindings"
CRS = f"{BASE}/clusterroles"
CRBS = f"{BASE}/clusterrolebindings"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
POD_READER = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]


def obj(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": f"{GROUP}/v1", "kind": kind,
                            "metadata": {"name": name}}
    body.update(fields)
    return body


@pytest.fixture
def made(api: Any) -> Iterator[list[str]]:
    """Paths of objects a test made, deleted afterwards whatever happened."""
    paths: list[str] = []
    yield paths
    for p in paths:
        api.call("DELETE", p)


def create(api: Any, made: list[str], collection: str, body: dict[str, Any]) -> Any:
    r = api.call("POST", collection, body)
    assert r.status == 201, r.body
    made.append(f"{collection}/{body['metadata']['name']}")
    return r.json()


def causes(r: Any) -> dict[str, str]:
    assert r.status == 422, r.body
    return {c["field"]: c["message"] for c in r.json()["details"]["causes"]}


def test_discovery_lists_the_four_kinds(api: Any) -> None:
    got = {r["name"]: (r["kind"], r["namespaced"], r["singularName"])
           for r in api.call("GET", BASE).json()["resources"]}
    assert got == {
        "roles": ("Role", True, "role"),
        "clusterroles": ("ClusterRole", False, "clusterrole"),
        "rolebindings": ("RoleBinding", True, "rolebinding"),
        "clusterrolebindings": ("ClusterRoleBinding", False, "clusterrolebinding"),
    }
    groups = [g["name"] for g in api.call("GET", "/apis").json()["groups"]]
    assert GROUP in groups


def test_role_round_trip_and_defaults(api: Any, made: list[str]) -> None:
    role = create(api, made, ROLES, obj("Role", "pod-reader", rules=POD_READER))
    assert role["rules"] == POD_READER
    assert role["metadata"]["namespace"] == NS
    rb = create(api, made, RBS, obj("RoleBinding", "read-pods",
                                    roleRef={"kind": "Role", "name": "pod-reader"},
                                    subjects=[{"kind": "User", "name": "alice"},
                                              {"kind": "ServiceAccount", "name": "sa",
                                               "namespace": NS}]))
    # SetDefaults_RoleBinding and SetDefaults_Subject
    assert rb["roleRef"] == {"apiGroup": GROUP, "kind": "Role", "name": "pod-reader"}
    assert rb["subjects"] == [
        {"kind": "User", "apiGroup": GROUP, "name": "alice"},
        {"kind": "ServiceAccount", "name": "sa", "namespace": NS}]


@pytest.mark.parametrize(("collection", "body", "want"), [
    (ROLES, obj("Role", "no-verbs", rules=[{"apiGroups": [""], "resources": ["pods"]}]),
     {"rules[0].verbs": "Required value: verbs must contain at least one value"}),
    (ROLES, obj("Role", "urls", rules=[{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
     {"rules[0].nonResourceURLs": 'Invalid value: ["/healthz"]: namespaced rules cannot '
                                  "apply to non-resource URLs"}),
    (CRS, obj("ClusterRole", "both", rules=[{"nonResourceURLs": ["/x"], "resources": ["pods"],
                                             "verbs": ["get"]}]),
     {"rules[0].nonResourceURLs": 'Invalid value: ["/x"]: rules cannot apply to both '
                                  "regular resources and non-resource URLs"}),
    (CRS, obj("ClusterRole", "nogroups", rules=[{"resources": ["pods"], "verbs": ["get"]}]),
     {"rules[0].apiGroups": "Required value: resource rules must supply at least one api "
                            "group"}),
    (CRS, obj("ClusterRole", "names", rules=[{"apiGroups": [""], "resources": ["pods", "nodes"],
                                              "resourceNames": ["a"], "verbs": ["get"]}]),
     {"rules[0].resourceNames": "Required value: resource names cannot apply to multiple "
                                "resources"}),
    (RBS, obj("RoleBinding", "badkind", roleRef={"kind": "Secret", "name": "x"}),
     {"roleRef.kind": 'Unsupported value: "Secret": supported values: "Role", "ClusterRole"'}),
    (CRBS, obj("ClusterRoleBinding", "role", roleRef={"kind": "Role", "name": "x"}),
     {"roleRef.kind": 'Unsupported value: "Role": supported values: "ClusterRole"'}),
    (CRBS, obj("ClusterRoleBinding", "sa-ns", roleRef={"kind": "ClusterRole", "name": "view"},
               subjects=[{"kind": "ServiceAccount", "name": "sa"}]),
     {"subjects[0].namespace": "Required value"}),
    (RBS, obj("RoleBinding", "subj", roleRef={"kind": "Role", "name": "r"},
              subjects=[{"kind": "Robot", "name": "r2"}]),
     {"subjects[0].kind": 'Unsupported value: "Robot": supported values: "ServiceAccount", '
                          '"User", "Group"'}),
    (RBS, obj("RoleBinding", "grp", roleRef={"kind": "Role", "name": "r"},
              subjects=[{"kind": "Group", "name": "g", "apiGroup": "x"}]),
     {"subjects[0].apiGroup": 'Unsupported value: "x": supported values: '
                              '"rbac.authorization.k8s.io"'}),
    (ROLES, obj("Role", "a%b", rules=POD_READER),
     {"metadata.name": "Invalid value: \"a%b\": may not contain '%'"}),
])
def test_bad_objects_are_422_naming_the_field(api: Any, collection: str, body: dict[str, Any],
                                              want: dict[str, str]) -> None:
    r = api.call("POST", collection, body)
    assert causes(r) == want
    assert r.json()["details"]["kind"] == body["kind"]
    assert r.json()["details"]["group"] == GROUP
    assert api.call("GET", f"{collection}/{body['metadata']['name']}").status == 404


def test_role_ref_is_immutable(api: Any, made: list[str]) -> None:
    crb = create(api, made, CRBS, obj("ClusterRoleBinding", "t-immutable",
                                      roleRef={"kind": "ClusterRole", "name": "view"}))
    crb["roleRef"]["name"] = "edit"
    r = api.call("PUT", f"{CRBS}/t-immutable", crb)
    assert causes(r) == {"roleRef": 'Invalid value: rbac.RoleRef{APIGroup:'
                                    '"rbac.authorization.k8s.io", Kind:"ClusterRole", '
                                    'Name:"edit"}: cannot change roleRef'}
    assert api.call("GET", f"{CRBS}/t-immutable").json()["roleRef"]["name"] == "view"
    crb = api.call("GET", f"{CRBS}/t-immutable").json()
    crb["subjects"] = [{"kind": "Group", "name": "devs"}]
    r = api.call("PUT", f"{CRBS}/t-immutable", crb)
    assert r.status == 200, r.body
    assert r.json()["subjects"] == [{"kind": "Group", "apiGroup": GROUP, "name": "devs"}]


def test_cluster_role_keeps_its_aggregation_rule(api: Any, made: list[str]) -> None:
    rule = {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]}
    cr = create(api, made, CRS, obj("ClusterRole", "t-aggregated", aggregationRule=rule))
    assert cr["aggregationRule"] == rule


def test_binding_tables(api: Any, made: list[str]) -> None:
    create(api, made, RBS, obj("RoleBinding", "t-table",
                               roleRef={"kind": "ClusterRole", "name": "view"},
                               subjects=[{"kind": "User", "name": "alice"},
                                         {"kind": "User", "name": "bob"},
                                         {"kind": "Group", "name": "devs"},
                                         {"kind": "ServiceAccount", "name": "ci",
                                          "namespace": "build"}]))
    t = api.call("GET", RBS, headers=TABLE).json()
    cols = t["columnDefinitions"]
    assert [(c["name"], c["priority"]) for c in cols] == [
        ("Name", 0), ("Role", 0), ("Age", 0), ("Users", 1), ("Groups", 1),
        ("ServiceAccounts", 1)]
    row = next(r["cells"] for r in t["rows"] if r["cells"][0] == "t-table")
    assert row[1] == "ClusterRole/view"
    assert row[3:] == ["alice, bob", "devs", "build/ci"]


def test_role_table_is_name_created_at(api: Any, made: list[str]) -> None:
    role = create(api, made, ROLES, obj("Role", "t-created", rules=POD_READER))
    t = api.call("GET", ROLES, headers=TABLE).json()
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Created At"]
    row = next(r["cells"] for r in t["rows"] if r["cells"][0] == "t-created")
    assert row[1] == role["metadata"]["creationTimestamp"]
