"""The audit log of a real control plane process started as kube-apiserver is
(``--audit-policy-file``, ``--audit-log-path``, the rotation flags), read after requests
the unmodified kubectl makes (issue 21): one audit.k8s.io/v1 Event per line at the
policy's levels, kubectl's user agent and identity, a Secret's data never in the log."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, control_plane

CP_BACKENDS = ("sqlite",)
POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*", "/api*"]
- level: RequestResponse
  resources: [{group: "", resources: [secrets, configmaps]}]
- level: Metadata
"""


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
       ) -> Iterator[ControlPlaneProcess]:
    root = tmp_path_factory.mktemp("cp") / "root"
    policy = root.parent / "audit-policy.yaml"
    policy.write_text(POLICY)
    with control_plane(root, request.param, [
            "--audit-policy-file", str(policy),
            "--audit-log-path", str(root.parent / "audit" / "audit.log"),
            "--audit-log-maxage", "7", "--audit-log-maxbackup", "3",
            "--audit-log-maxsize", "10"]) as proc:
        yield proc


def events(cp: ControlPlaneProcess) -> list[dict[str, Any]]:
    path = cp.root.parent / "audit" / "audit.log"
    return [json.loads(line) for line in path.read_text().splitlines()]


def wait_events(cp: ControlPlaneProcess, want: Any, timeout: float = 10) -> list[dict[str, Any]]:
    end = time.monotonic() + timeout
    while True:
        found = [e for e in events(cp) if want(e)]
        if found or time.monotonic() > end:
            return found
        time.sleep(0.1)


def test_kubectl_requests_in_the_log(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "secret", "generic", "s", "-n", ns, "--from-literal=pw=hunter2")
    cp.kubectl("create", "configmap", "c", "-n", ns, "--from-literal=k=visible-value")
    cp.kubectl("get", "pods", "-n", ns)
    secret = wait_events(cp, lambda e: e.get("objectRef", {}).get("resource") == "secrets"
                         and e.get("objectRef", {}).get("namespace") == ns)
    assert [(e["verb"], e["level"], e["stage"]) for e in secret] == [
        ("create", "Metadata", "ResponseComplete")]
    assert "hunter2" not in (cp.root.parent / "audit" / "audit.log").read_text()
    assert "aHVudGVyMg" not in (cp.root.parent / "audit" / "audit.log").read_text()
    (cm,) = wait_events(cp, lambda e: e.get("objectRef", {}).get("resource") == "configmaps"
                        and e.get("objectRef", {}).get("namespace") == ns)
    assert cm["level"] == "RequestResponse"
    assert cm["requestObject"]["data"] == {"k": "visible-value"}
    assert cm["responseObject"]["metadata"]["name"] == "c"
    (listed,) = wait_events(cp, lambda e: e["verb"] == "list"
                            and e.get("objectRef", {}) == {"resource": "pods", "namespace": ns,
                                                           "apiVersion": "v1"})
    assert listed["level"] == "Metadata"
    assert listed["user"]["groups"][0] == "system:masters"
    assert listed["userAgent"].startswith("kubectl")
    assert listed["sourceIPs"] == ["127.0.0.1"]
    assert listed["responseStatus"] == {"metadata": {}, "code": 200}
    assert "requestObject" not in listed
    assert not [e for e in events(cp) if e["requestURI"].startswith("/readyz")]


def test_a_bad_policy_refuses_to_start(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
    proc = ControlPlaneProcess(tmp_path / "root", extra_args=[
        "--audit-policy-file", str(bad), "--audit-log-path", str(tmp_path / "a.log")])
    with pytest.raises(RuntimeError, match="control plane exited 1") as exc:
        proc.start(timeout=20)
    assert 'rules[0].level: Unsupported value: "Loud"' in str(exc.value)
