"""Liveness, readiness and startup probes with exec, tcpSocket and httpGet, against real
containers: readiness drives the Ready condition, a failed liveness probe restarts."""

from __future__ import annotations

import time
from typing import Any

import pytest
from agent_harness import IMAGE

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]


def probe(kind: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {**kind, "periodSeconds": 1, "failureThreshold": 1, "timeoutSeconds": 2, **kw}


def probes_pod() -> dict[str, Any]:
    web = {
        "name": "web", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c",
                    "mkdir -p /www; echo ok > /www/ok.html; touch /tmp/alive; "
                    "(sleep 3; touch /tmp/started) & exec httpd -f -p 8080 -h /www"],
        "ports": [{"name": "http", "containerPort": 8080}],
        "startupProbe": probe({"exec": {"command": ["test", "-f", "/tmp/started"]}},
                              failureThreshold=30),
        "readinessProbe": probe({"httpGet": {"path": "/ok.html", "port": "http"}}),
        "livenessProbe": probe({"exec": {"command": ["test", "-f", "/tmp/alive"]}}),
    }
    tcp = {
        "name": "tcp", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", "sleep 2; exec httpd -f -p 9090 -h /tmp"],
        "readinessProbe": probe({"tcpSocket": {"port": 9090}}),
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probes"},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": [web, tcp]}}


def cstatus(p: dict[str, Any] | None, name: str) -> dict[str, Any]:
    if p is None:
        return {}
    for c in p["status"].get("containerStatuses", []):
        if c["name"] == name:
            return c
    return {}


def condition(p: dict[str, Any] | None, kind: str) -> str:
    if p is None:
        return ""
    return next((c["status"] for c in p["status"].get("conditions", []) if c["type"] == kind), "")


def test_probes_drive_ready_and_restarts(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("probes", probes_pod())

    # running, but not started (startup probe) and so not ready
    p = h.wait(lambda: (q := h.pod("probes")) and "running" in cstatus(q, "web").get("state", {})
               and q, 60, "web running")
    assert cstatus(p, "web")["started"] is False
    assert cstatus(p, "web")["ready"] is False
    assert condition(p, "Ready") == "False"
    t_running = time.monotonic()

    # startup succeeds after ~3 s, then httpGet and tcpSocket readiness: Ready
    p = h.wait(lambda: (q := h.pod("probes")) and condition(q, "Ready") == "True" and q,
               30, "pod ready")
    assert time.monotonic() - t_running >= 1.5
    assert cstatus(p, "web")["started"] is True
    assert cstatus(p, "tcp")["ready"] is True
    uid = p["metadata"]["uid"]

    # readiness (httpGet) fails on 404: not ready, not restarted
    h.exec(uid, "web", ["rm", "/www/ok.html"])
    p = h.wait(lambda: (q := h.pod("probes")) and condition(q, "Ready") == "False" and q,
               20, "pod not ready")
    assert cstatus(p, "web")["ready"] is False
    assert cstatus(p, "web")["restartCount"] == 0
    assert condition(p, "ContainersReady") == "False"

    # liveness (exec) fails: the container is killed and restarted
    h.exec(uid, "web", ["rm", "/tmp/alive"])
    p = h.wait(lambda: (q := h.pod("probes")) and cstatus(q, "web")["restartCount"] >= 1
               and "running" in cstatus(q, "web")["state"] and q, 40, "liveness restart")
    last = cstatus(p, "web")["lastState"]["terminated"]
    assert last["exitCode"] in (137, 143)
    # the new container starts over: startup, then readiness, then Ready again
    p = h.wait(lambda: (q := h.pod("probes")) and condition(q, "Ready") == "True" and q,
               40, "ready again")
    assert cstatus(p, "tcp")["restartCount"] == 0
    events = h.agent.recorder.list(uid)
    unhealthy = [e["message"] for e in events if e["reason"] == "Unhealthy"]
    assert any(m.startswith("Readiness probe failed: HTTP probe failed with statuscode: 404")
               for m in unhealthy), unhealthy
    assert any(m.startswith("Liveness probe failed") for m in unhealthy), unhealthy
    killing = [e["message"] for e in events if e["reason"] == "Killing"]
    assert "Container web failed liveness probe, will be restarted" in killing, killing
