"""The field manager against upstream's behaviour, case by case (structured-merge-diff's
merge tests and kube-apiserver's apply tests): list-maps keyed by name and by
containerPort+protocol, atomic lists, granular maps, two appliers sharing and handing
over fields, conflicts with an Update manager, force, pruning of what an applier stops
setting, and apply creating the object."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykubelet.controlplane.registry.fieldmanager import fieldpath as fp
from pykubelet.controlplane.registry.fieldmanager import managed as mf
from pykubelet.controlplane.registry.fieldmanager.managed import Managers
from pykubelet.controlplane.registry.fieldmanager.manager import ApplyConflictError, FieldManager

T0, T1 = "2026-12-04T00:00:00Z", "2026-12-04T00:01:00Z"
DEPLOY = "io.k8s.api.apps.v1.Deployment"


def fm() -> FieldManager:
    return FieldManager(DEPLOY, "apps/v1")


def deploy(replicas: int | None = 1, labels: dict[str, str] | None = None,
           containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": containers if containers is not None
                              else [{"name": "c", "image": "nginx"}]}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": labels if labels is not None
                         else {"app": "web"}},
            "spec": spec}


def owned(managers: Managers, manager: str, op: str = mf.APPLY) -> set[str]:
    key = mf.identity(manager, op, "apps/v1")
    return {fp.describe(p) for p in managers[key].fields} if key in managers else set()


C = '.spec.template.spec.containers[name="c"]'


def test_apply_creates_the_object_and_owns_exactly_what_it_set() -> None:
    obj, managers = fm().apply(None, deploy(), {}, "kubectl", False, T0)
    assert obj == deploy()
    assert owned(managers, "kubectl") == {
        ".metadata.labels.app", ".spec.replicas", ".spec.selector",
        ".spec.template.metadata.labels.app", C, C + ".name", C + ".image"}
    [entry] = mf.encode(managers)
    assert entry == {
        "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"c"}': {
                    ".": {}, "f:image": {}, "f:name": {}}}}}}}}
    assert mf.decode(mf.encode(managers)) == managers


def test_list_map_containers_merge_by_name_between_two_appliers() -> None:
    obj, m = fm().apply(None, deploy(), {}, "a", False, T0)
    cfg = deploy(replicas=None, containers=[{"name": "d", "image": "busybox"}])
    obj, m = fm().apply(obj, cfg, m, "b", False, T1)
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["c", "d"]
    assert '.spec.template.spec.containers[name="d"].image' in owned(m, "b")
    assert C + ".image" in owned(m, "a")
    assert C not in owned(m, "b")


def test_ports_are_keyed_by_container_port_and_defaulted_protocol() -> None:
    c = [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80},
                                                    {"containerPort": 53, "protocol": "UDP"}]}]
    obj, m = fm().apply(None, deploy(containers=c), {}, "a", False, T0)
    tree = mf.encode(m)[0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    ports = tree['k:{"name":"c"}']["f:ports"]
    assert set(ports) == {'k:{"containerPort":80,"protocol":"TCP"}',
                          'k:{"containerPort":53,"protocol":"UDP"}'}
    # a live port with the protocol written out is the same item
    live = copy.deepcopy(obj)
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    c2 = [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "name": "http"}]}]
    obj2, _m2 = fm().apply(live, deploy(containers=c2), m, "b", False, T1)
    assert obj2["spec"]["template"]["spec"]["containers"][0]["ports"][0] == {
        "containerPort": 80, "protocol": "TCP", "name": "http"}


def test_atomic_list_args_conflicts_whole_and_force_takes_it() -> None:
    c1 = [{"name": "c", "image": "nginx", "args": ["a", "b"]}]
    c2 = [{"name": "c", "image": "nginx", "args": ["c"]}]
    obj, m = fm().apply(None, deploy(containers=c1), {}, "a", False, T0)
    with pytest.raises(ApplyConflictError) as err:
        fm().apply(obj, deploy(containers=c2), m, "b", False, T1)
    assert err.value.message == (
        f'Apply failed with 1 conflict: conflict with "a": {C}.args')
    obj, m = fm().apply(obj, deploy(containers=c2), m, "b", True, T1)
    assert obj["spec"]["template"]["spec"]["containers"][0]["args"] == ["c"]
    assert C + ".args" in owned(m, "b")
    assert C + ".args" not in owned(m, "a")


def test_granular_labels_each_applier_owns_its_own() -> None:
    obj, m = fm().apply(None, deploy(labels={"a": "1"}), {}, "x", False, T0)
    obj, m = fm().apply(obj, deploy(labels={"b": "2"}), m, "y", False, T1)
    assert obj["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert ".metadata.labels.a" in owned(m, "x")
    assert ".metadata.labels.b" in owned(m, "y")
    assert ".metadata.labels.a" not in owned(m, "y")


def test_same_value_is_shared_and_ownership_moves_when_the_first_drops_it() -> None:
    obj, m = fm().apply(None, deploy(replicas=3), {}, "a", False, T0)
    obj, m = fm().apply(obj, deploy(replicas=3), m, "b", False, T1)  # no conflict
    assert ".spec.replicas" in owned(m, "a") & owned(m, "b")
    obj, m = fm().apply(obj, deploy(replicas=None), m, "a", False, T1)
    assert obj["spec"]["replicas"] == 3  # b still owns it
    assert ".spec.replicas" not in owned(m, "a")
    assert ".spec.replicas" in owned(m, "b")


def test_conflict_with_an_update_manager_names_its_api_version() -> None:
    obj, m = fm().apply(None, deploy(replicas=1), {}, "kubectl", False, T0)
    scaled = copy.deepcopy(obj)
    scaled["spec"]["replicas"] = 2
    m = fm().update(obj, scaled, m, "other", T1)
    assert owned(m, "other", mf.UPDATE) == {".spec.replicas"}
    assert ".spec.replicas" not in owned(m, "kubectl")  # an update takes it
    with pytest.raises(ApplyConflictError) as err:
        fm().apply(scaled, deploy(replicas=5), m, "kubectl", False, T1)
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "other" '
                                 'using apps/v1: .spec.replicas')
    assert err.value.causes() == [{"reason": "FieldManagerConflict",
                                   "message": 'conflict with "other" using apps/v1',
                                   "field": ".spec.replicas"}]
    obj, m = fm().apply(scaled, deploy(replicas=5), m, "kubectl", True, T1)
    assert obj["spec"]["replicas"] == 5
    assert mf.identity("other", mf.UPDATE, "apps/v1") not in m  # it owned nothing else


def test_several_conflicts_are_listed_by_manager() -> None:
    obj, m = fm().apply(None, deploy(replicas=1, labels={"app": "web"}), {}, "a", False, T0)
    with pytest.raises(ApplyConflictError) as err:
        fm().apply(obj, deploy(replicas=2, labels={"app": "db"}), m, "b", False, T1)
    assert err.value.message == ('Apply failed with 2 conflicts: conflicts with "a":\n'
                                 '- .metadata.labels.app\n- .spec.replicas')


def test_a_label_dropped_from_the_manifest_goes_when_owned_alone() -> None:
    obj, m = fm().apply(None, deploy(labels={"app": "web", "tier": "fe"}), {}, "a", False,
                        T0)
    obj, m = fm().apply(obj, deploy(labels={"app": "web"}), m, "a", False, T1)
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert ".metadata.labels.tier" not in owned(m, "a")


def test_a_label_dropped_from_the_manifest_stays_when_shared() -> None:
    labels = {"app": "web", "tier": "fe"}
    obj, m = fm().apply(None, deploy(labels=labels), {}, "a", False, T0)
    obj, m = fm().apply(obj, deploy(labels={"tier": "fe"}), m, "b", False, T1)
    obj, m = fm().apply(obj, deploy(labels={"app": "web"}), m, "a", False, T1)
    assert obj["metadata"]["labels"] == labels


def test_a_label_an_update_manager_owns_stays_when_the_applier_drops_it() -> None:
    obj, m = fm().apply(None, deploy(labels={"app": "web"}), {}, "a", False, T0)
    edited = copy.deepcopy(obj)
    edited["metadata"]["labels"]["env"] = "prod"
    m = fm().update(obj, edited, m, "kubectl-edit", T1)
    obj, m = fm().apply(edited, deploy(labels={}), m, "a", False, T1)
    assert obj["metadata"]["labels"] == {"env": "prod"}


def test_a_container_dropped_from_the_manifest_goes_whole() -> None:
    two = [{"name": "c", "image": "nginx"}, {"name": "d", "image": "busybox"}]
    obj, m = fm().apply(None, deploy(containers=two), {}, "a", False, T0)
    obj, m = fm().apply(obj, deploy(containers=two[:1]), m, "a", False, T1)
    assert obj["spec"]["template"]["spec"]["containers"] == two[:1]
    assert not any('name="d"' in p for p in owned(m, "a"))


def test_an_update_owns_what_it_added_with_maps_and_items_as_members() -> None:
    m = fm().update(None, deploy(), {}, "kubectl-create", T0)
    [entry] = mf.encode(m)
    assert entry["operation"] == "Update"
    assert entry["apiVersion"] == "apps/v1"
    assert entry["time"] == T0
    v1 = entry["fieldsV1"]
    assert v1["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}  # name not owned
    assert "." not in v1["f:spec"]
    assert v1["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}'] == {
        ".": {}, "f:image": {}, "f:name": {}}


def test_status_is_not_owned_through_the_main_resource_and_is_through_status() -> None:
    obj = deploy()
    obj["status"] = {"replicas": 1}
    m = fm().update(None, obj, {}, "x", T0)
    assert not any(p.startswith(".status") for p in owned(m, "x", mf.UPDATE))
    status = FieldManager(DEPLOY, "apps/v1", "status")
    new = copy.deepcopy(obj)
    new["status"]["replicas"] = 2
    new["spec"]["replicas"] = 9
    m2 = status.update(obj, new, {}, "kcm", T1)
    [entry] = mf.encode(m2)
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_an_update_that_changes_nothing_keeps_the_entries_and_times() -> None:
    obj, m = fm().apply(None, deploy(), {}, "a", False, T0)
    assert fm().update(obj, copy.deepcopy(obj), m, "b", T1) == m
    _, m2 = fm().apply(obj, deploy(), m, "a", False, T1)
    assert m2 == m  # a no-op apply keeps its time


def test_more_than_ten_updaters_fold_the_oldest_into_ancient_changes() -> None:
    from pykubelet.controlplane.registry.fieldmanager.manager import cap_updaters
    obj = deploy(labels={})
    m: Managers = {}
    for i in range(12):
        new = copy.deepcopy(obj)
        new["metadata"]["labels"][f"l{i}"] = "x"
        m = cap_updaters(fm().update(obj, new, m, f"u{i:02d}", f"2026-12-04T00:00:{i:02d}Z"))
        obj = new
    names = [e["manager"] for e in mf.encode(m)]
    assert len(names) == 10
    assert names[0] == "ancient-changes"  # u00..u02 merged, with u02's time
    assert names[1:] == [f"u{i:02d}" for i in range(3, 12)]
    ancient = m[mf.identity("ancient-changes", mf.UPDATE, "apps/v1")]
    assert ancient.time == "2026-12-04T00:00:02Z"
    assert {fp.describe(p) for p in ancient.fields} >= {
        ".metadata.labels.l0", ".metadata.labels.l1", ".metadata.labels.l2"}


@pytest.mark.parametrize(("live", "config", "merged"), [
    # structured-merge-diff's merge ordering: shared items in the configuration's order,
    # live-only items keep their place, new items where the configuration puts them
    (["a", "b", "c"], ["c", "a"], ["b", "c", "a"]),
    (["a", "b"], ["b", "x", "a"], ["b", "x", "a"]),
    (["a", "b", "c"], ["x"], ["a", "b", "c", "x"]),
    (["a", "z", "b"], ["a", "n", "b"], ["a", "z", "n", "b"]),
])
def test_list_map_items_merge_in_upstreams_order(live: list[str], config: list[str],
                                                 merged: list[str]) -> None:
    def containers(names: list[str]) -> list[dict[str, str]]:
        return [{"name": n, "image": "i"} for n in names]

    obj, _ = fm().apply(deploy(containers=containers(live)),
                        deploy(containers=containers(config)), {}, "a", True, T0)
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == merged


def test_an_empty_struct_where_there_was_none_is_no_change() -> None:
    obj = deploy()
    new = copy.deepcopy(obj)
    new["spec"]["strategy"] = {}
    assert fm().update(obj, new, {}, "x", T0) == {}
    assert fm().update(new, obj, {}, "x", T0) == {}
