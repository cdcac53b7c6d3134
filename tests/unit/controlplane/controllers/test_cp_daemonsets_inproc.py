"""apps/v1 DaemonSets through the API (defaults, 422s naming the field with nothing
written, the immutable selector, the template generation, the Table) and the DaemonSet
controller over this module's control plane, synced by the test (no scheduler: pods stay
unbound, aimed at their node by the required node affinity; the test makes them Ready
through pods/status, as a kubelet would)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pykubelet.api.machinery.timeutil import now, rfc3339
from pykubelet.controlplane.controllers.daemonset import DaemonSetController

NS = "default"
DSS = f"/apis/apps/v1/namespaces/{NS}/daemonsets"
PODS = f"/api/v1/namespaces/{NS}/pods"
CRS = f"/apis/apps/v1/namespaces/{NS}/controllerrevisions"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
MERGE = "application/merge-patch+json"


def daemonset(name: str, image: str = "busybox:1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}}}
    body["spec"].update(spec)
    return body


@pytest.fixture
def clean(api: Any) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for n in names:
        api.call("DELETE", f"{DSS}/{n}")
    for kind_path in (PODS, CRS):
        for o in api.call("GET", kind_path).json()["items"]:
            api.call("DELETE", f"{kind_path}/{o['metadata']['name']}",
                     {"gracePeriodSeconds": 0})
    for n in api.call("GET", "/api/v1/nodes").json()["items"]:
        api.call("DELETE", f"/api/v1/nodes/{n['metadata']['name']}")


def test_defaults_and_template_generation(api: Any, clean: list[str]) -> None:
    clean.append("defaults")
    r = api.call("POST", DSS, daemonset("defaults"))
    assert r.status == 201, r.body
    got = r.json()
    assert got["spec"]["updateStrategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert got["spec"]["revisionHistoryLimit"] == 10
    assert got["metadata"]["generation"] == 1
    assert got["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert got["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                             "desiredNumberScheduled": 0, "numberReady": 0}
    r = api.call("PATCH", f"{DSS}/defaults", {"spec": {"minReadySeconds": 5}},
                 content_type=MERGE)
    assert r.json()["metadata"]["generation"] == 2
    assert r.json()["metadata"]["annotations"][
        "deprecated.daemonset.template.generation"] == "1"
    r = api.call("PATCH", f"{DSS}/defaults", {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox:2"}]}}}}, content_type=MERGE)
    assert r.json()["metadata"]["generation"] == 3
    assert r.json()["metadata"]["annotations"][
        "deprecated.daemonset.template.generation"] == "2"


def _with(**spec: Any) -> dict[str, Any]:
    return spec


@pytest.mark.parametrize(("name", "body", "field", "message"), [
    ("mismatch", daemonset("mismatch", selector={"matchLabels": {"app": "other"}}),
     "spec.template.metadata.labels",
     'Invalid value: {"app": "mismatch"}: `selector` does not match template `labels`'),
    ("never", daemonset("never", template={
        "metadata": {"labels": {"app": "never"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}}),
     "spec.template.spec.restartPolicy",
     'Unsupported value: "Never": supported values: "Always"'),
    ("both", daemonset("both", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": 1, "maxSurge": 1}}), "spec.updateStrategy.rollingUpdate.maxSurge",
     "Invalid value: 1: may not be set when maxUnavailable is non-zero"),
    ("neither", daemonset("neither", updateStrategy={"type": "RollingUpdate",
                                                      "rollingUpdate": {"maxUnavailable": 0}}),
     "spec.updateStrategy.rollingUpdate.maxUnavailable",
     "Required value: cannot be 0 when maxSurge is 0"),
    ("kind", daemonset("kind", updateStrategy={"type": "Sometimes"}),
     "spec.updateStrategy.type",
     'Unsupported value: "Sometimes": supported values: "RollingUpdate", "OnDelete"'),
    ("toomuch", daemonset("toomuch", updateStrategy={"type": "RollingUpdate",
                                                      "rollingUpdate": {"maxUnavailable": "150%"}}),
     "spec.updateStrategy.rollingUpdate.maxUnavailable",
     "Invalid value: 150%: must not be greater than 100%"),
    ("history", daemonset("history", revisionHistoryLimit=-1), "spec.revisionHistoryLimit",
     "Invalid value: -1: must be greater than or equal to 0"),
    ("noselector", daemonset("noselector", selector=None), "spec.selector", "Required value"),
])
def test_bad_daemonsets_are_422_naming_the_field(api: Any, name: str, body: dict[str, Any],
                                                 field: str, message: str) -> None:
    if body["spec"].get("selector") is None:
        body["spec"].pop("selector", None)
    r = api.call("POST", DSS, body)
    assert r.status == 422, r.body
    status = r.json()
    assert status["details"]["kind"] == "DaemonSet"
    causes = {c["field"]: c["message"] for c in status["details"]["causes"]}
    assert causes.get(field) == message, causes
    assert api.call("GET", f"{DSS}/{name}").status == 404


def test_selector_is_immutable(api: Any, clean: list[str]) -> None:
    clean.append("fixed")
    assert api.call("POST", DSS, daemonset("fixed")).status == 201
    r = api.call("PATCH", f"{DSS}/fixed", {"spec": {
        "selector": {"matchLabels": {"app": "fixed", "x": "y"}},
        "template": {"metadata": {"labels": {"app": "fixed", "x": "y"}}}}},
        content_type=MERGE)
    assert r.status == 422, r.body
    assert [c["field"] for c in r.json()["details"]["causes"]] == ["spec.selector"]
    assert api.call("GET", f"{DSS}/fixed").json()["spec"]["selector"] == {
        "matchLabels": {"app": "fixed"}}


def test_discovery_and_table(api: Any, clean: list[str]) -> None:
    resources = {r["name"]: r for r in api.call("GET", "/apis/apps/v1").json()["resources"]}
    assert resources["daemonsets"]["shortNames"] == ["ds"]
    assert "daemonsets/status" in resources
    clean.append("table")
    assert api.call("POST", DSS, daemonset("table", template={
        "metadata": {"labels": {"app": "table"}},
        "spec": {"nodeSelector": {"b": "2", "a": "1"},
                 "containers": [{"name": "c", "image": "busybox:1"}]}})).status == 201
    t = api.call("GET", f"{DSS}/table", headers=TABLE).json()
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector",
        "Age", "Containers", "Images", "Selector"]
    cells = t["rows"][0]["cells"]
    assert cells[:7] == ["table", 0, 0, 0, 0, 0, "a=1,b=2"]
    assert cells[8:] == ["c", "busybox:1", "app=table"]


# ---------------------------------------------------------------------------- controller


def add_node(api: Any, name: str, taints: list[dict[str, str]] | None = None) -> None:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}
    if taints:
        body["spec"] = {"taints": taints}
    r = api.call("POST", "/api/v1/nodes", body)
    assert r.status == 201, r.body


def pods_by_node(api: Any, app: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in api.call("GET", f"{PODS}?labelSelector=app%3D{app}").json()["items"]:
        if p["metadata"].get("deletionTimestamp"):
            continue
        terms = p["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        out.setdefault(terms[0]["matchFields"][0]["values"][0], []).append(p)
    return out


def make_ready(api: Any, app: str) -> None:
    for p in api.call("GET", f"{PODS}?labelSelector=app%3D{app}").json()["items"]:
        if p["metadata"].get("deletionTimestamp") or p.get("status", {}).get(
                "phase") == "Running":
            continue
        p["status"] = {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(now())}]}
        r = api.call("PUT", f"{PODS}/{p['metadata']['name']}/status", p)
        assert r.status == 200, r.body


def finish_deletes(api: Any, app: str) -> None:
    """What a kubelet does for a pod being deleted: gone once stopped."""
    for p in api.call("GET", f"{PODS}?labelSelector=app%3D{app}").json()["items"]:
        if p["metadata"].get("deletionTimestamp"):
            api.call("DELETE", f"{PODS}/{p['metadata']['name']}", {"gracePeriodSeconds": 0})


def test_controller_one_pod_per_node_then_rolls_out(api: Any, clean: list[str],
                                                     ctl: DaemonSetController) -> None:
    clean.append("web")
    add_node(api, "n1")
    add_node(api, "n2")
    created = api.call("POST", DSS, daemonset("web")).json()
    key = f"{NS}/web"
    api._run(ctl.sync(key))
    by_node = pods_by_node(api, "web")
    assert sorted(by_node) == ["n1", "n2"]
    pod = by_node["n1"][0]
    ref = pod["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("DaemonSet", "web",
                                                       created["metadata"]["uid"])
    revs = api.call("GET", CRS).json()["items"]
    assert [(r["revision"], r["metadata"]["ownerReferences"][0]["name"]) for r in revs] == [
        (1, "web")]
    hash1 = revs[0]["metadata"]["labels"]["controller-revision-hash"]
    assert revs[0]["metadata"]["name"] == f"web-{hash1}"
    assert pod["metadata"]["labels"]["controller-revision-hash"] == hash1
    assert revs[0]["data"]["spec"]["template"]["$patch"] == "replace"
    status = api.call("GET", f"{DSS}/web").json()["status"]
    assert (status["desiredNumberScheduled"], status["currentNumberScheduled"],
            status["numberReady"], status["updatedNumberScheduled"],
            status["numberUnavailable"], status["observedGeneration"]) == (2, 2, 0, 2, 2, 1)

    make_ready(api, "web")
    api._run(ctl.sync(key))
    status = api.call("GET", f"{DSS}/web").json()["status"]
    assert (status["numberReady"], status["numberAvailable"]) == (2, 2)

    # a new node gets a pod; a node tainted NoExecute loses its own; NoSchedule keeps it
    add_node(api, "n3")
    api._run(ctl.sync(key))
    assert sorted(pods_by_node(api, "web")) == ["n1", "n2", "n3"]
    make_ready(api, "web")
    node = api.call("GET", "/api/v1/nodes/n3").json()
    node["spec"]["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]
    assert api.call("PUT", "/api/v1/nodes/n3", node).status == 200
    api._run(ctl.sync(key))
    finish_deletes(api, "web")
    assert sorted(pods_by_node(api, "web")) == ["n1", "n2"]
    api._run(ctl.sync(key))
    status = api.call("GET", f"{DSS}/web").json()["status"]
    assert (status["desiredNumberScheduled"], status["numberMisscheduled"]) == (2, 0)

    # a template change: revision 2, one old pod at a time (maxUnavailable 1)
    api.call("PATCH", f"{DSS}/web", {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox:2"}]}}}}, content_type=MERGE)
    api._run(ctl.sync(key))
    revs = sorted(api.call("GET", CRS).json()["items"], key=lambda r: r["revision"])
    assert [r["revision"] for r in revs] == [1, 2]
    hash2 = revs[1]["metadata"]["labels"]["controller-revision-hash"]
    # an unbound pod goes at once (no grace): one node left with its old pod
    left = [p for ps in pods_by_node(api, "web").values() for p in ps]
    assert [p["metadata"]["labels"]["controller-revision-hash"] for p in left] == [hash1]
    for _ in range(4):
        finish_deletes(api, "web")
        api._run(ctl.sync(key))
        make_ready(api, "web")
        api._run(ctl.sync(key))
    by_node = pods_by_node(api, "web")
    assert sorted(by_node) == ["n1", "n2"]
    assert {p["metadata"]["labels"]["controller-revision-hash"]
            for ps in by_node.values() for p in ps} == {hash2}
    assert {p["spec"]["containers"][0]["image"] for ps in by_node.values() for p in ps} == {
        "busybox:2"}
    status = api.call("GET", f"{DSS}/web").json()["status"]
    assert (status["updatedNumberScheduled"], status["numberAvailable"],
            status["observedGeneration"]) == (2, 2, 2)


def test_controller_replaces_a_failed_pod(api: Any, clean: list[str],
                                          ctl: DaemonSetController) -> None:
    clean.append("fail")
    add_node(api, "f1")
    api.call("POST", DSS, daemonset("fail"))
    api._run(ctl.sync(f"{NS}/fail"))
    pod = pods_by_node(api, "fail")["f1"][0]
    pod["status"] = {"phase": "Failed"}
    assert api.call("PUT", f"{PODS}/{pod['metadata']['name']}/status", pod).status == 200
    api._run(ctl.sync(f"{NS}/fail"))
    finish_deletes(api, "fail")
    api._run(ctl.sync(f"{NS}/fail"))
    pods = pods_by_node(api, "fail")["f1"]
    assert len(pods) == 1
    assert pods[0]["metadata"]["name"] != pod["metadata"]["name"]
    events = api.call("GET", f"/api/v1/namespaces/{NS}/events").json()["items"]
    assert any(e["reason"] == "FailedDaemonPod" and e["involvedObject"]["name"] == "fail"
               for e in events)


async def _make(api: Any) -> DaemonSetController:
    """A controller hearing the watch cache (its expectations need the events), synced
    by the test instead of a worker."""
    ctl = DaemonSetController(api.cp.registry)
    ctl.start()
    return ctl


@pytest.fixture
def ctl(api: Any) -> Iterator[DaemonSetController]:
    made: DaemonSetController = api._run(_make(api))
    try:
        yield made
    finally:
        made.stop()


def _hashes(api: Any, app: str) -> dict[str, list[str]]:
    return {n: sorted(p["metadata"]["labels"]["controller-revision-hash"] for p in ps)
            for n, ps in pods_by_node(api, app).items()}


def _current_hash(api: Any, ds_name: str) -> str:
    revs = [r for r in api.call("GET", CRS).json()["items"]
            if r["metadata"]["ownerReferences"][0]["name"] == ds_name]
    newest = max(revs, key=lambda r: r["revision"])
    return str(newest["metadata"]["labels"]["controller-revision-hash"])


def test_controller_surges_before_deleting(api: Any, clean: list[str],
                                           ctl: DaemonSetController) -> None:
    clean.append("surge")
    add_node(api, "s1")
    add_node(api, "s2")
    api.call("POST", DSS, daemonset("surge", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}))
    key = f"{NS}/surge"
    api._run(ctl.sync(key))
    make_ready(api, "surge")
    api._run(ctl.sync(key))
    old = _current_hash(api, "surge")
    api.call("PATCH", f"{DSS}/surge", {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox:2"}]}}}}, content_type=MERGE)
    api._run(ctl.sync(key))
    new = _current_hash(api, "surge")
    # one node has a new pod beside its old one; nothing was deleted
    assert sorted(_hashes(api, "surge").values()) == [sorted([new, old]), [old]]
    make_ready(api, "surge")
    api._run(ctl.sync(key))  # the new pod is available: its old one goes, the next surges
    finish_deletes(api, "surge")
    assert sorted(_hashes(api, "surge").values()) == [[new], sorted([new, old])]
    make_ready(api, "surge")
    api._run(ctl.sync(key))
    finish_deletes(api, "surge")
    api._run(ctl.sync(key))
    assert _hashes(api, "surge") == {"s1": [new], "s2": [new]}


def test_controller_on_delete_waits_for_the_user(api: Any, clean: list[str],
                                                 ctl: DaemonSetController) -> None:
    clean.append("ondel")
    add_node(api, "o1")
    add_node(api, "o2")
    api.call("POST", DSS, daemonset("ondel", updateStrategy={"type": "OnDelete"}))
    key = f"{NS}/ondel"
    api._run(ctl.sync(key))
    make_ready(api, "ondel")
    old = _current_hash(api, "ondel")
    api.call("PATCH", f"{DSS}/ondel", {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox:2"}]}}}}, content_type=MERGE)
    api._run(ctl.sync(key))
    new = _current_hash(api, "ondel")
    assert _hashes(api, "ondel") == {"o1": [old], "o2": [old]}
    status = api.call("GET", f"{DSS}/ondel").json()["status"]
    assert (status["updatedNumberScheduled"], status["observedGeneration"]) == (0, 2)
    victim = pods_by_node(api, "ondel")["o2"][0]["metadata"]["name"]
    api.call("DELETE", f"{PODS}/{victim}", {"gracePeriodSeconds": 0})
    api._run(ctl.sync(key))
    assert _hashes(api, "ondel") == {"o1": [old], "o2": [new]}


def test_a_failed_create_ends_the_sync(api: Any, clean: list[str],
                                      ctl: DaemonSetController) -> None:
    """updateDaemonSet returns on manage's error: no history cleanup on top of it."""
    clean.append("stop")
    add_node(api, "e1")
    api.call("POST", DSS, daemonset("stop"))
    key = f"{NS}/stop"
    api._run(ctl.sync(key))
    make_ready(api, "stop")
    api.call("PATCH", f"{DSS}/stop", {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox:2"}]}}}}, content_type=MERGE)
    api._run(ctl.sync(key))  # the old pod goes
    api._run(ctl.sync(key))  # the new one comes
    make_ready(api, "stop")
    assert len(api.call("GET", CRS).json()["items"]) == 2  # revision 1 kept (limit 10)
    api.call("PATCH", f"{DSS}/stop", {"spec": {"revisionHistoryLimit": 0}},
             content_type=MERGE)
    add_node(api, "e2")

    async def refused(ds: Any, template: Any, node: str) -> str:
        return "pods is forbidden: exceeded quota"

    ctl._create_pod = refused  # type: ignore[method-assign]
    with pytest.raises(Exception, match="exceeded quota"):
        api._run(ctl.sync(key))
    assert len(api.call("GET", CRS).json()["items"]) == 2
    del ctl._create_pod  # type: ignore[method-assign]
    api._run(ctl.sync(key))  # creates succeed: now the history is cleaned
    assert [r["revision"] for r in api.call("GET", CRS).json()["items"]] == [2]


def test_orphan_revisions_are_adopted_and_unmatched_ones_released(
        api: Any, clean: list[str], ctl: DaemonSetController) -> None:
    """controlledHistories (ClaimControllerRevisions): an orphan ControllerRevision the
    selector picks becomes the DaemonSet's; one it controls whose labels stop matching is
    let go."""
    clean.append("claim")
    add_node(api, "c1")
    r = api.call("POST", DSS, daemonset("claim"))
    assert r.status == 201, r.body
    uid = r.json()["metadata"]["uid"]
    orphan = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
              "metadata": {"name": "claim-orphan", "labels": {"app": "claim"}},
              "data": {"spec": {"template": {"$patch": "replace"}}}, "revision": 5}
    assert api.call("POST", CRS, orphan).status == 201
    api._run(ctl.sync(f"{NS}/claim"))
    refs = api.call("GET", f"{CRS}/claim-orphan").json()["metadata"]["ownerReferences"]
    assert [(o["uid"], o["controller"], o["kind"]) for o in refs] == [(uid, True, "DaemonSet")]
    api.call("PATCH", f"{CRS}/claim-orphan", {"metadata": {"labels": {"app": "other"}}},
             content_type=MERGE)
    api._run(ctl.sync(f"{NS}/claim"))
    got = api.call("GET", f"{CRS}/claim-orphan").json()["metadata"]
    assert "ownerReferences" not in got
