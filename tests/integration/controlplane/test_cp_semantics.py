"""API semantics through real HTTP: graceful deletion and finalizers, access control
(tokens, NodeRestriction), bad input refused with upstream's codes and nothing written,
and durability across a SIGKILL of the control plane."""

from __future__ import annotations

import base64
import json
import ssl
import time
from typing import Any

import pytest
import urllib3
import yaml
from cp_process import ControlPlaneProcess, wait_for


class Raw:
    """Plain HTTPS requests with a bearer token (for what client libraries won't send)."""

    def __init__(self, cp: ControlPlaneProcess, token: str | None = None) -> None:
        cfg = yaml.safe_load(cp.kubeconfig.read_text())
        ca = base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"])
        ctx = ssl.create_default_context(cadata=ca.decode())
        self.pool = urllib3.PoolManager(ssl_context=ctx)
        self.base = cfg["clusters"][0]["cluster"]["server"]
        self.token = token if token is not None else cfg["users"][0]["user"]["token"]

    def __call__(self, method: str, path: str, body: Any = None, ctype: str = "application/json",
                 token: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": ctype}
        tok = self.token if token is None else token
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        data = body if isinstance(body, bytes | str) or body is None else json.dumps(body)
        resp = self.pool.request(method, self.base + path, body=data, headers=headers)
        try:
            return resp.status, json.loads(resp.data)
        except ValueError:
            return resp.status, resp.data.decode(errors="replace")


def pod(name: str, node: str = "", finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "2", "memory": "2Gi", "pods": "10"},
                       "capacity": {"cpu": "2", "memory": "2Gi", "pods": "10"}}}


def test_graceful_deletion_of_a_bound_pod_waits_for_its_node(cp: ControlPlaneProcess,
                                                             ns: str) -> None:
    raw = Raw(cp)
    base = f"/api/v1/namespaces/{ns}/pods"
    code, made = raw("POST", base, pod("bound", node="nowhere-node"))
    assert code == 201, made
    code, body = raw("DELETE", f"{base}/bound", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                  "gracePeriodSeconds": 20})
    assert code == 200
    assert body["metadata"]["deletionGracePeriodSeconds"] == 20
    assert body["metadata"]["deletionTimestamp"]
    code, still = raw("GET", f"{base}/bound")
    assert code == 200
    assert still["metadata"]["deletionTimestamp"]
    # a second delete with a longer grace does not extend it; a shorter one shortens it
    raw("DELETE", f"{base}/bound", {"gracePeriodSeconds": 60})
    assert raw("GET", f"{base}/bound")[1]["metadata"]["deletionGracePeriodSeconds"] == 20
    raw("DELETE", f"{base}/bound", {"gracePeriodSeconds": 5})
    assert raw("GET", f"{base}/bound")[1]["metadata"]["deletionGracePeriodSeconds"] == 5
    # the node confirms with grace 0: gone
    code, _ = raw("DELETE", f"{base}/bound", {"gracePeriodSeconds": 0})
    assert code == 200
    assert raw("GET", f"{base}/bound")[0] == 404


def test_unbound_pod_goes_at_once_and_finalizers_hold_an_object(cp: ControlPlaneProcess,
                                                                ns: str) -> None:
    raw = Raw(cp)
    base = f"/api/v1/namespaces/{ns}/pods"
    raw("POST", base, pod("free"))
    code, body = raw("DELETE", f"{base}/free")
    assert code == 200
    assert body["kind"] == "Pod"
    assert raw("GET", f"{base}/free")[0] == 404
    raw("POST", base, pod("held", finalizers=["example.com/hold"]))
    code, body = raw("DELETE", f"{base}/held")
    assert code == 200
    assert body["metadata"]["deletionTimestamp"]
    assert raw("GET", f"{base}/held")[0] == 200  # held by its finalizer
    code, body = raw("PATCH", f"{base}/held", {"metadata": {"finalizers": None}},
                     ctype="application/merge-patch+json")
    assert code == 200, body
    assert raw("GET", f"{base}/held")[0] == 404  # the last finalizer gone: deleted


def test_configmap_delete_answers_a_status(cp: ControlPlaneProcess, ns: str) -> None:
    raw = Raw(cp)
    base = f"/api/v1/namespaces/{ns}/configmaps"
    raw("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    code, body = raw("DELETE", f"{base}/x")
    assert code == 200
    assert body["kind"] == "Status"
    assert body["status"] == "Success"
    assert body["details"]["name"] == "x"
    assert body["details"]["uid"]


def test_deletecollection_of_pods(cp: ControlPlaneProcess, ns: str) -> None:
    raw = Raw(cp)
    base = f"/api/v1/namespaces/{ns}/pods"
    for i in range(3):
        raw("POST", base, {**pod(f"dc{i}"), "metadata": {"name": f"dc{i}",
                                                        "labels": {"g": "a" if i < 2 else "b"}}})
    code, body = raw("DELETE", f"{base}?labelSelector=g%3Da")
    assert code == 200
    assert body["kind"] == "PodList"
    assert sorted(p["metadata"]["name"] for p in body["items"]) == ["dc0", "dc1"]
    code, left = raw("GET", base)
    assert [p["metadata"]["name"] for p in left["items"]] == ["dc2"]


def test_tokens_and_node_restriction(cp: ControlPlaneProcess, ns: str) -> None:
    admin = Raw(cp)
    anon = Raw(cp, token="")
    code, body = anon("GET", "/api/v1/pods")
    assert code == 401
    assert body["reason"] == "Unauthorized"
    assert Raw(cp, token="not-a-token")("GET", "/api/v1/pods")[0] == 401
    assert anon("GET", "/healthz")[0] == 200
    tokens = json.loads((cp.root / "tokens.json").read_text())
    # the join token only bootstraps a node's own credentials
    join = Raw(cp, token=tokens["join"])
    assert join("GET", "/api/v1/pods")[0] == 403
    code, cred = join("POST", "/bootstrap/node", {"nodeName": "nr-n1"})
    assert code == 200
    assert cred["token"]
    n1 = Raw(cp, token=cred["token"])
    other = Raw(cp, token=join("POST", "/bootstrap/node", {"nodeName": "nr-n2"})[1]["token"])
    # a node writes its own Node and Lease, not another's
    assert n1("POST", "/api/v1/nodes", node("nr-n1"))[0] == 201
    code, body = n1("POST", "/api/v1/nodes", node("nr-n2"))
    assert code == 403
    assert body["reason"] == "Forbidden"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "nr-n1", "namespace": "kube-node-lease"},
             "spec": {"holderIdentity": "nr-n1"}}
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    assert n1("POST", path, lease)[0] == 201
    assert other("PUT", f"{path}/nr-n1", lease)[0] == 403
    # pod status only for pods bound to it; no spec writes; no secrets it does not need
    admin("POST", f"/api/v1/namespaces/{ns}/pods", pod("on-n1", node="nr-n1"))
    status = {"status": {"phase": "Running"}}
    code, body = n1("PATCH", f"/api/v1/namespaces/{ns}/pods/on-n1/status", status,
                    ctype="application/merge-patch+json")
    assert code == 200
    assert body["status"]["phase"] == "Running"
    assert other("PATCH", f"/api/v1/namespaces/{ns}/pods/on-n1/status", status,
                 ctype="application/merge-patch+json")[0] == 403
    assert n1("PATCH", f"/api/v1/namespaces/{ns}/pods/on-n1", {"metadata": {"labels": {}}},
              ctype="application/merge-patch+json")[0] == 403
    admin("POST", f"/api/v1/namespaces/{ns}/secrets",
          {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
           "stringData": {"k": "v"}})
    code, body = n1("GET", f"/api/v1/namespaces/{ns}/secrets/s")
    assert code == 403
    assert "no relationship found between node 'nr-n1' and this object" in body["message"]
    # the final delete of its own pod is the node's to make
    assert other("DELETE", f"/api/v1/namespaces/{ns}/pods/on-n1")[0] == 403
    assert n1("DELETE", f"/api/v1/namespaces/{ns}/pods/on-n1", {"gracePeriodSeconds": 0})[0] == 200
    admin("DELETE", "/api/v1/nodes/nr-n1")
    # tokens never reach the log
    log = cp.log_path.read_text()
    for t in (tokens["admin"], tokens["join"], cred["token"]):
        assert t not in log


def test_bad_input_gets_upstream_codes_and_writes_nothing(cp: ControlPlaneProcess,
                                                          ns: str) -> None:
    raw = Raw(cp)
    base = f"/api/v1/namespaces/{ns}/pods"
    code, body = raw("POST", base, "{not json")
    assert code == 400
    assert body["reason"] == "BadRequest"
    assert "json parse error" in body["message"]
    code, body = raw("POST", base, "kind: [", ctype="application/yaml")
    assert code == 400
    bad_field = pod("uf")
    bad_field["spec"]["containers"][0]["imagee"] = "x"
    code, body = raw("POST", base + "?fieldValidation=Strict", bad_field)
    assert code == 400
    assert body["message"] == 'strict decoding error: unknown field "spec.containers[0].imagee"'
    ill_typed = pod("it")
    ill_typed["spec"]["containers"][0]["image"] = 42
    code, body = raw("POST", base, ill_typed)
    assert code == 400
    assert "spec.containers[0].image" in body["message"]
    code, body = raw("POST", base, {**pod("x"), "metadata": {"name": "x", "labels": {
        "bad key!": "v"}}})
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.labels"
    no_image = pod("noimg")
    del no_image["spec"]["containers"][0]["image"]
    code, body = raw("POST", base, no_image)
    assert code == 422
    assert body["details"]["causes"] == [{"reason": "FieldValueRequired",
                                          "message": "Required value",
                                          "field": "spec.containers[0].image"}]
    big = pod("big")
    big["metadata"]["annotations"] = {"a": "x" * (3 * 1024 * 1024 + 10)}
    code, body = raw("POST", base, big)
    assert code == 413
    assert body["reason"] == "RequestEntityTooLarge"
    code, body = raw("POST", base, {**pod("rv"), "metadata": {"name": "rv",
                                                                "resourceVersion": "5"}})
    assert code == 400
    # a patch that breaks validation is refused and changes nothing (the pod is bound,
    # so nothing else writes it meanwhile)
    raw("POST", base, pod("ok", node="elsewhere"))
    mid = raw("GET", f"{base}/ok")[1]["metadata"]["resourceVersion"]
    code, body = raw("PATCH", f"{base}/ok", {"metadata": {"labels": {"-bad": "x"}}},
                     ctype="application/merge-patch+json")
    assert code == 422
    code, body = raw("PATCH", f"{base}/ok", {"x": 1}, ctype="text/plain")
    assert code == 415
    assert raw("GET", f"{base}/ok")[1]["metadata"]["resourceVersion"] == mid
    code, listed = raw("GET", base)
    assert [p["metadata"]["name"] for p in listed["items"]] == ["ok"]  # nothing else written
    code, body = raw("GET", f"{base}?labelSelector=a%20in%20(")
    assert code == 400
    code, body = raw("GET", f"{base}?watch=true&resourceVersion=abc")
    assert code == 400


def test_acknowledged_writes_survive_sigkill(tmp_path: Any) -> None:
    proc = ControlPlaneProcess(tmp_path / "root")
    proc.start()
    try:
        raw = Raw(proc)
        names = []
        for i in range(30):
            code, body = raw("POST", "/api/v1/namespaces/default/configmaps",
                             {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": f"d{i}"}, "data": {"i": str(i)}})
            assert code == 201
            names.append(body["metadata"]["name"])
        last_rv = int(body["metadata"]["resourceVersion"])
        proc.kill()
        proc.start()
        raw = Raw(proc)
        code, listed = raw("GET", "/api/v1/namespaces/default/configmaps")
        mine = [c["metadata"]["name"] for c in listed["items"]
                if c["metadata"]["name"] != "kube-root-ca.crt"]  # the root-ca publisher's
        assert sorted(mine) == sorted(names)
        assert int(listed["metadata"]["resourceVersion"]) >= last_rv
        # revisions go on from where they were; a watch from before the restart resumes
        code, made = raw("POST", "/api/v1/namespaces/default/configmaps",
                         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}})
        assert int(made["metadata"]["resourceVersion"]) > last_rv
        code, text = raw("GET", "/api/v1/namespaces/default/configmaps?watch=true&"
                         f"resourceVersion={last_rv}&timeoutSeconds=1")
        lines = [json.loads(x) for x in text.splitlines()] if isinstance(text, str) else [text]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines
                if e["object"]["metadata"]["name"] != "kube-root-ca.crt"] == [("ADDED", "n")]
    finally:
        proc.stop()


def test_admin_kubeconfig_and_join_command(cp: ControlPlaneProcess) -> None:
    assert cp.kubeconfig.stat().st_mode & 0o777 == 0o600
    assert (cp.root / "tokens.json").stat().st_mode & 0o777 == 0o600
    assert (cp.root / "pki" / "ca.key").stat().st_mode & 0o777 == 0o600
    out = __import__("subprocess").run(
        [__import__("sys").executable, "-m", "pykubelet.cli.main", "control-plane", "--root",
         str(cp.root), "join-command"], capture_output=True, text=True, check=True).stdout
    assert "--token " in out
    assert "--ca-cert-hash sha256:" in out
    assert "--server https://" in out
    log = cp.log_path.read_text()
    assert "join other nodes with the output of: pykubelet control-plane --root" in log


def test_node_lifecycle_marks_a_silent_node_unknown_and_taints_it(cp: ControlPlaneProcess
                                                                  ) -> None:
    from cp_process import FakeNode

    fake = FakeNode(cp, "lc-n1")
    try:
        raw = Raw(cp)
        time.sleep(2)
        assert _ready(raw, "lc-n1") == "True"
        fake.stop_heartbeat()  # the grace period of this control plane is 4 s
        wait_for(lambda: _ready(raw, "lc-n1") == "Unknown", timeout=20, what="Ready=Unknown")
        _code, n = raw("GET", "/api/v1/nodes/lc-n1")
        ready = next(c for c in n["status"]["conditions"] if c["type"] == "Ready")
        assert ready["reason"] == "NodeStatusUnknown"
        assert ready["message"] == "Kubelet stopped posting node status."
        taints = {(t["key"], t["effect"]) for t in n["spec"]["taints"]}
        assert taints == {("node.kubernetes.io/unreachable", "NoSchedule"),
                          ("node.kubernetes.io/unreachable", "NoExecute")}
        assert "Unknown" in cp.kubectl("get", "node", "lc-n1").stdout.split()[6:8] or (
            "NotReady" in cp.kubectl("get", "node", "lc-n1").stdout)
        # a pod that does not tolerate unreachable is evicted at once
        raw("POST", "/api/v1/namespaces/default/pods",
            {**pod("lc-victim", node="lc-n1"),
             "spec": {"nodeName": "lc-n1", "containers": [{"name": "c", "image": "b"}],
                      "tolerations": [{"key": "node.kubernetes.io/unreachable",
                                       "operator": "Exists", "effect": "NoExecute",
                                       "tolerationSeconds": 0}]}})
        wait_for(lambda: raw("GET", "/api/v1/namespaces/default/pods/lc-victim")[1].get(
            "metadata", {}).get("deletionTimestamp") is not None, timeout=20,
            what="taint eviction")
        raw("DELETE", "/api/v1/namespaces/default/pods/lc-victim", {"gracePeriodSeconds": 0})
        # the node comes back: the taints go
        fake.renew()
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        raw("PATCH", "/api/v1/nodes/lc-n1/status",
            {"status": {"conditions": [{"type": "Ready", "status": "True",
                                        "reason": "KubeletReady", "lastHeartbeatTime": t,
                                        "lastTransitionTime": t}]}},
            ctype="application/strategic-merge-patch+json")
        wait_for(lambda: not raw("GET", "/api/v1/nodes/lc-n1")[1]["spec"].get("taints"),
                 timeout=20, what="taints removed")
    finally:
        fake.delete()


def test_pods_of_a_node_gone_unknown_are_marked_not_ready(cp: ControlPlaneProcess) -> None:
    """MarkPodsNotReady: the Ready condition of a pod on a silent node turns False (its
    other conditions and containers untouched), with a NodeNotReady Warning event."""
    from cp_process import FakeNode

    fake = FakeNode(cp, "mnr-n1")
    raw = Raw(cp)
    try:
        tol = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                "effect": "NoExecute"}]  # stays through the outage
        code, _ = raw("POST", "/api/v1/namespaces/default/pods",
                      {**pod("mnr-web"), "spec": {"nodeName": "mnr-n1", "tolerations": tol,
                                                  "containers": [{"name": "c", "image": "b"}]}})
        assert code == 201
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conds = [{"type": c, "status": "True", "lastTransitionTime": t}
                 for c in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
        code, _ = raw("PATCH", "/api/v1/namespaces/default/pods/mnr-web/status",
                      {"status": {"phase": "Running", "conditions": conds}},
                      ctype="application/merge-patch+json")
        assert code == 200
        time.sleep(2)
        assert _pod_cond(raw, "mnr-web", "Ready") == "True"  # a Ready node leaves it be
        fake.stop_heartbeat()
        wait_for(lambda: _ready(raw, "mnr-n1") == "Unknown", timeout=20, what="Ready=Unknown")
        wait_for(lambda: _pod_cond(raw, "mnr-web", "Ready") == "False", timeout=10,
                 what="pod Ready=False")
        _code, p = raw("GET", "/api/v1/namespaces/default/pods/mnr-web")
        assert p["status"]["phase"] == "Running"
        assert _pod_cond(raw, "mnr-web", "ContainersReady") == "True"
        _code, evs = raw("GET", "/api/v1/namespaces/default/events"
                         "?fieldSelector=involvedObject.name=mnr-web")
        assert [(e["type"], e["reason"], e["message"]) for e in evs["items"]] == [
            ("Warning", "NodeNotReady", "Node is not ready")]
    finally:
        raw("DELETE", "/api/v1/namespaces/default/pods/mnr-web", {"gracePeriodSeconds": 0})
        fake.delete()


def _pod_cond(raw: Raw, name: str, type_: str) -> str:
    _code, p = raw("GET", f"/api/v1/namespaces/default/pods/{name}")
    return next((c["status"] for c in (p.get("status") or {}).get("conditions") or []
                 if c["type"] == type_), "")


def test_pods_of_a_deleted_node_are_garbage_collected(tmp_path: Any) -> None:
    proc = ControlPlaneProcess(tmp_path / "root", extra_args=["--pod-gc-period", "1"])
    proc.start()
    try:
        raw = Raw(proc)
        raw("POST", "/api/v1/nodes", node("gc-n1"))
        raw("POST", "/api/v1/namespaces/default/pods", pod("orphan", node="gc-n1"))
        raw("DELETE", "/api/v1/nodes/gc-n1")
        wait_for(lambda: raw("GET", "/api/v1/namespaces/default/pods/orphan")[0] == 404,
                 timeout=30, what="pod gc")
    finally:
        proc.stop()


def _ready(raw: Raw, name: str) -> str:
    _code, n = raw("GET", f"/api/v1/nodes/{name}")
    for c in (n.get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready":
            return str(c["status"])
    return ""


@pytest.mark.parametrize("path", ["/version", "/healthz", "/readyz", "/livez"])
def test_health_and_version_endpoints(cp: ControlPlaneProcess, path: str) -> None:
    code, _ = Raw(cp, token="")("GET", path)
    assert code == 200
