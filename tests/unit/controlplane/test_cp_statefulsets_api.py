"""apps/v1 StatefulSets served (issue 19, item 1): upstream's defaults, the 422s of a bad
StatefulSet with nothing written (volumeClaimTemplates among them while there is no
storage), the spec fields an update may not change, the scale and status subresources,
discovery (short name sts) and the Table columns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import Cluster

STS = "/apis/apps/v1/namespaces/{ns}/statefulsets"


def sts_body(name: str, replicas: int = 0, labels: dict[str, str] | None = None,
             selector: dict[str, str] | None = None) -> dict[str, Any]:
    labels = labels if labels is not None else {"app": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": selector if selector is not None else labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def test_create_defaults_as_upstream(cluster: Cluster) -> None:
    ns = cluster.namespace("sts-api")
    body = sts_body("web")
    del body["spec"]["replicas"]
    code, got = cluster.admin("POST", STS.format(ns=ns), body)
    assert code == 201, got
    spec = got["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate",
                                      "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain",
                                                            "whenScaled": "Retain"}
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert got["metadata"]["generation"] == 1


def test_on_delete_is_kept_without_rolling_update(cluster: Cluster) -> None:
    ns = cluster.namespace("sts-ondelete")
    body = sts_body("web")
    body["spec"]["updateStrategy"] = {"type": "OnDelete"}
    code, got = cluster.admin("POST", STS.format(ns=ns), body)
    assert code == 201, got
    assert got["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_discovery_short_name_and_subresources(cluster: Cluster) -> None:
    code, disc = cluster.admin("GET", "/apis/apps/v1")
    assert code == 200
    sts = next(r for r in disc["resources"] if r["name"] == "statefulsets")
    assert sts["shortNames"] == ["sts"]
    assert sts["categories"] == ["all"]
    assert sts["kind"] == "StatefulSet"
    assert {r["name"] for r in disc["resources"]} >= {"statefulsets/status",
                                                     "statefulsets/scale"}


CLAIM = {"metadata": {"name": "data"},
         "spec": {"accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "1Gi"}}}}


@pytest.mark.parametrize(("mutate", "field", "message"), [
    (lambda b: b["spec"].update(volumeClaimTemplates=[CLAIM]), "spec.volumeClaimTemplates",
     "Forbidden: volumeClaimTemplates are not supported yet: this cluster has no storage"),
    (lambda b: b["spec"]["template"]["metadata"].update(labels={"app": "other"}),
     "spec.template.metadata.labels",
     'Invalid value: {"app": "other"}: `selector` does not match template `labels`'),
    (lambda b: b["spec"].pop("selector"), "spec.selector", "Required value"),
    (lambda b: b["spec"].update(selector={}), "spec.selector",
     "Invalid value: {}: empty selector is invalid for statefulset"),
    (lambda b: b["spec"].update(replicas=-1), "spec.replicas",
     "Invalid value: -1: must be greater than or equal to 0"),
    (lambda b: b["spec"].update(podManagementPolicy="Burst"), "spec.podManagementPolicy",
     "Invalid value: \"Burst\": must be 'OrderedReady' or 'Parallel'"),
    (lambda b: b["spec"].update(updateStrategy={"type": "RollingUpdate",
                                                "rollingUpdate": {"partition": -1}}),
     "spec.updateStrategy.rollingUpdate.partition",
     "Invalid value: -1: must be greater than or equal to 0"),
    (lambda b: b["spec"].update(updateStrategy={"type": "OnDelete",
                                                "rollingUpdate": {"partition": 1}}),
     "spec.updateStrategy.rollingUpdate", "Invalid value: "),
    (lambda b: b["spec"].update(persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep"}),
     "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", 'Unsupported value: "Keep"'),
    (lambda b: b["spec"]["template"]["spec"].update(restartPolicy="Never"),
     "spec.template.spec.restartPolicy", 'Unsupported value: "Never"'),
    (lambda b: b["spec"]["template"]["spec"].update(activeDeadlineSeconds=5),
     "spec.template.spec.activeDeadlineSeconds",
     "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"),
    (lambda b: b["metadata"].update(name="web.x"), "metadata.name", 'Invalid value: "web.x"'),
])
def test_bad_stateful_set_is_422_naming_the_field_and_not_written(
        cluster: Cluster, mutate: Callable[[dict[str, Any]], Any], field: str,
        message: str) -> None:
    ns = cluster.namespace(f"sts-bad-{abs(hash(field + message)) % 100000}")
    body = sts_body("bad")
    mutate(body)
    name = body["metadata"]["name"]
    code, got = cluster.admin("POST", STS.format(ns=ns), body)
    assert code == 422, got
    assert got["details"]["kind"] == "StatefulSet"
    assert got["details"]["group"] == "apps"
    causes = {c["field"]: c["message"] for c in got["details"]["causes"]}
    assert field in causes, causes
    assert causes[field].startswith(message), causes[field]
    code, _ = cluster.admin("GET", STS.format(ns=ns) + "/" + name)
    assert code == 404
    code, listed = cluster.admin("GET", STS.format(ns=ns))
    assert code == 200
    assert listed["items"] == []


def test_update_may_change_only_the_mutable_spec_fields(cluster: Cluster) -> None:
    ns = cluster.namespace("sts-immutable")
    code, got = cluster.admin("POST", STS.format(ns=ns), sts_body("web"))
    assert code == 201, got
    for patch in ({"spec": {"serviceName": "other"}},
                  {"spec": {"podManagementPolicy": "Parallel"}},
                  {"spec": {"volumeClaimTemplates": None, "selector": {"matchLabels": {
                      "app": "web", "x": "y"}}, "template": {"metadata": {"labels": {
                          "app": "web", "x": "y"}}}}}):
        code, got = cluster.admin("PATCH", STS.format(ns=ns) + "/web", patch,
                                  "application/merge-patch+json")
        assert code == 422, (patch, got)
        causes = {c["field"]: c["message"] for c in got["details"]["causes"]}
        assert causes == {"spec": (
            "Forbidden: updates to statefulset spec for fields other than 'replicas', "
            "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
    patch = {"spec": {"replicas": 3, "minReadySeconds": 5, "revisionHistoryLimit": 2,
                      "ordinals": {"start": 1},
                      "updateStrategy": {"rollingUpdate": {"partition": 2}},
                      "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"},
                      "template": {"spec": {"containers": [{"name": "c",
                                                            "image": "busybox:2"}]}}}}
    code, got = cluster.admin("PATCH", STS.format(ns=ns) + "/web", patch,
                              "application/merge-patch+json")
    assert code == 200, got
    assert got["metadata"]["generation"] == 2
    assert got["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 2


def test_scale_and_status_subresources(cluster: Cluster) -> None:
    ns = cluster.namespace("sts-scale")
    code, got = cluster.admin("POST", STS.format(ns=ns), sts_body("web", 2))
    assert code == 201, got
    code, scale = cluster.admin("GET", STS.format(ns=ns) + "/web/scale")
    assert code == 200, scale
    assert scale["kind"] == "Scale"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 0, "selector": "app=web"}
    code, scale = cluster.admin("PATCH", STS.format(ns=ns) + "/web/scale",
                                {"spec": {"replicas": 4}}, "application/merge-patch+json")
    assert code == 200, scale
    code, got = cluster.admin("GET", STS.format(ns=ns) + "/web")
    assert got["spec"]["replicas"] == 4
    # status through status only: a spec write keeps it, a status write keeps the spec
    status = {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1,
              "currentRevision": "web-1", "updateRevision": "web-1", "collisionCount": 0,
              "observedGeneration": 2}
    code, got = cluster.admin("PATCH", STS.format(ns=ns) + "/web/status",
                              {"status": status, "spec": {"replicas": 9}},
                              "application/merge-patch+json")
    assert code == 200, got
    assert got["status"]["readyReplicas"] == 1
    assert got["spec"]["replicas"] == 4
    code, got = cluster.admin("PATCH", STS.format(ns=ns) + "/web/status",
                              {"status": {"readyReplicas": 3}},
                              "application/merge-patch+json")
    assert code == 422, got
    assert [c["field"] for c in got["details"]["causes"]] == ["status.readyReplicas"]


def test_table_columns(cluster: Cluster) -> None:
    ns = cluster.namespace("sts-table")
    code, got = cluster.admin("POST", STS.format(ns=ns), sts_body("web", 3))
    assert code == 201, got
    code, table = cluster.admin(
        "GET", STS.format(ns=ns),
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert code == 200, table
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Age", "Containers", "Images"]
    assert [c["priority"] for c in table["columnDefinitions"]] == [0, 0, 0, 1, 1]
    cells = table["rows"][0]["cells"]
    assert cells[0:2] == ["web", "0/3"]
    assert cells[3:] == ["c", "busybox"]
