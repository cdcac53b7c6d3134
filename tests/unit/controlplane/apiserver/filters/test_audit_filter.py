"""The audit log of an in-process control plane started with an audit policy and log path
(kube-apiserver's --audit-policy-file/--audit-log-path): the lines requests leave, at the
stages the policy keeps, with the Audit-Id the response carries, who authenticated and
whom they impersonated, bodies by level and never a Secret's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykubelet.controlplane.server import ControlPlaneThread, Options

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: RequestResponse
  resources: [{group: "", resources: ["secrets"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["pods"]}]
- level: Metadata
  omitStages: [RequestReceived]
"""


@pytest.fixture(scope="module")
def cp_thread(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlaneThread]:
    """The conftest's control plane, with the audit log on."""
    root: Path = tmp_path_factory.mktemp("cp")
    (root.parent / "policy.yaml").write_text(POLICY)
    thread = ControlPlaneThread(Options(
        root=root, listen="127.0.0.1:0", scheduler=False, controllers=False,
        audit_log_path=str(root.parent / "audit" / "audit.log"),
        audit_policy_file=root.parent / "policy.yaml"))
    try:
        thread.start()
        yield thread
    finally:
        thread.stop()


def lines(cluster: Any) -> list[dict[str, Any]]:
    path = Path(cluster.cp.options.audit_log_path)
    return [json.loads(x) for x in path.read_text().splitlines()]


def by_id(cluster: Any, audit_id: str) -> list[dict[str, Any]]:
    return [e for e in lines(cluster) if e["auditID"] == audit_id]


def request(cluster: Any, method: str, path: str, body: Any = None,
            headers: dict[str, str] | None = None, token: str | None = None) -> Any:
    """A request whose response headers are kept (the Audit-Id)."""
    raw = cluster.admin
    h = {"Content-Type": "application/json",
         "Authorization": f"Bearer {cluster.tokens.admin if token is None else token}",
         **(headers or {})}
    return raw.pool.request(method, raw.base + path,
                            body=None if body is None else json.dumps(body), headers=h)


def test_a_pod_at_request_response(cluster: Any) -> None:
    ns = cluster.namespace("audit-pods")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    resp = request(cluster, "POST", f"/api/v1/namespaces/{ns}/pods", pod)
    assert resp.status == 201
    audit_id = resp.headers["Audit-Id"]
    received, complete = by_id(cluster, audit_id)
    assert received["stage"] == "RequestReceived"
    assert "responseStatus" not in received
    assert complete["stage"] == "ResponseComplete"
    for ev in (received, complete):
        assert ev["kind"] == "Event"
        assert ev["apiVersion"] == "audit.k8s.io/v1"
        assert ev["level"] == "RequestResponse"
        assert ev["verb"] == "create"
        assert ev["requestURI"] == f"/api/v1/namespaces/{ns}/pods"
        assert ev["user"] == {"username": "system:admin",
                              "groups": ["system:masters", "system:authenticated"]}
        assert ev["sourceIPs"] == ["127.0.0.1"]
        assert ev["objectRef"] == {"resource": "pods", "namespace": ns, "apiVersion": "v1"}
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert complete["requestObject"] == pod
    assert complete["responseObject"]["metadata"]["uid"]
    assert complete["requestReceivedTimestamp"] <= complete["stageTimestamp"]


def test_a_secret_never_above_metadata(cluster: Any) -> None:
    ns = cluster.namespace("audit-secrets")
    resp = request(cluster, "POST", f"/api/v1/namespaces/{ns}/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "stringData": {"password": "hunter2"}})
    assert resp.status == 201
    events = by_id(cluster, resp.headers["Audit-Id"])
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseComplete"]
    assert all(e["level"] == "Metadata" for e in events)
    assert "hunter2" not in Path(cluster.cp.options.audit_log_path).read_text()
    assert not any("requestObject" in e or "responseObject" in e for e in events)


def test_impersonation_refusals_and_levels(cluster: Any) -> None:
    resp = request(cluster, "GET", "/api/v1/nodes", headers={"Impersonate-User": "jane"})
    assert resp.status == 403
    (ev,) = by_id(cluster, resp.headers["Audit-Id"])  # Metadata omits RequestReceived
    assert ev["stage"] == "ResponseComplete"
    assert ev["level"] == "Metadata"
    assert ev["user"]["username"] == "system:admin"
    assert ev["impersonatedUser"] == {"username": "jane", "groups": ["system:authenticated"]}
    status = ev["responseStatus"]
    assert (status["code"], status["reason"], status["status"]) == (403, "Forbidden", "Failure")
    assert status["message"].startswith('nodes is forbidden: User "jane" cannot list')
    # no credentials that hold: no user, a 401
    resp = request(cluster, "GET", "/api/v1/nodes", token="nobody")
    assert resp.status == 401
    (ev,) = by_id(cluster, resp.headers["Audit-Id"])
    assert ev["user"] == {}
    assert ev["responseStatus"]["code"] == 401
    # level None: nothing written, the Audit-Id still sent
    before = len(lines(cluster))
    resp = request(cluster, "GET", "/healthz")
    assert resp.status == 200
    assert resp.headers["Audit-Id"]
    assert len(lines(cluster)) == before


def test_a_watch_is_started_then_complete(cluster: Any) -> None:
    ns = cluster.namespace("audit-watch")
    resp = request(cluster, "GET", f"/api/v1/namespaces/{ns}/pods?watch=true&timeoutSeconds=1")
    assert resp.status == 200
    audit_id = resp.headers["Audit-Id"]
    end = time.monotonic() + 5  # the last chunk may reach us before the line is written
    while len(events := by_id(cluster, audit_id)) < 3 and time.monotonic() < end:
        time.sleep(0.05)
    assert [e["stage"] for e in events] == ["RequestReceived", "ResponseStarted",
                                            "ResponseComplete"]
    assert events[1]["responseStatus"] == {"metadata": {}, "code": 200}
    assert events[0]["verb"] == "watch"



def test_a_request_the_client_leaves_is_complete(tmp_path: Path) -> None:
    """A handler cancelled (the client left a watch) still leaves its ResponseComplete."""
    import asyncio

    from aiohttp import web
    from aiohttp.test_utils import make_mocked_request

    from pykubelet.controlplane.apiserver.audit.backend import LogBackend, LogOptions
    from pykubelet.controlplane.apiserver.audit.policy import decode_policy
    from pykubelet.controlplane.apiserver.filters.audit import AuditFilter

    log = tmp_path / "audit.log"
    backend = LogBackend(LogOptions(str(log)))
    audit = AuditFilter(backend, decode_policy({"apiVersion": "audit.k8s.io/v1",
                                                "kind": "Policy",
                                                "rules": [{"level": "Metadata"}]}),
                        lambda _r: None)

    async def handler(request: web.Request) -> web.StreamResponse:
        raise asyncio.CancelledError

    async def run() -> None:
        request = make_mocked_request("GET", "/api/v1/pods?watch=true")
        with pytest.raises(asyncio.CancelledError):
            await audit.middleware(request, handler)

    try:
        asyncio.run(run())
    finally:
        backend.close()
    stages = [json.loads(x)["stage"] for x in log.read_text().splitlines()]
    assert stages == ["RequestReceived", "ResponseComplete"]
