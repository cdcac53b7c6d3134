"""Sidecar containers on real runc containers (our runtime and the containerd peer): a
restartable init container serves a file the app container reads over localhost; it
starts (startup probe) before the app, restarts after it exits although the pod's
restartPolicy is Never, while the app keeps running; killing the pod stops the app
before the sidecar; the legacy log links follow the containers."""

from __future__ import annotations

import os
from typing import Any

import pytest
from agent_harness import IMAGE

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]

PORT = 18081
URL = f"http://127.0.0.1:{PORT}/data.txt"


def sidecar_pod() -> dict[str, Any]:
    sidecar = {
        "name": "server",
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always",
        "command": [
            "sh",
            "-c",
            # httpd daemonizes; the shell stays PID 1 until told to stop (exit 3)
            f"mkdir -p /www; echo served-by-sidecar > /www/data.txt; "
            f"httpd -p 127.0.0.1:{PORT} -h /www; "
            "while [ ! -f /tmp/stop ]; do sleep 0.2; done; exit 3",
        ],
        "startupProbe": {
            "exec": {"command": ["wget", "-q", "-O", "/dev/null", URL]},
            "periodSeconds": 1,
            "failureThreshold": 30,
        },
    }
    app = {
        "name": "app",
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        # the first read must work (the sidecar started before), else the pod fails
        "command": [
            "sh",
            "-c",
            f"wget -q -O /tmp/got {URL} || exit 7; cat /tmp/got; "
            f"while true; do wget -q -O /tmp/next {URL} && mv /tmp/next /tmp/got; sleep 0.5; "
            "done",
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sidecars"},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 2,
            "initContainers": [sidecar],
            "containers": [app],
        },
    }


def status_of(p: dict[str, Any] | None, name: str, key: str = "containerStatuses") -> dict:
    if p is None:
        return {}
    return next((c for c in p["status"].get(key, []) if c["name"] == name), {})


def condition(p: dict[str, Any] | None, kind: str) -> str:
    if p is None:
        return ""
    return next((c["status"] for c in p["status"].get("conditions", []) if c["type"] == kind), "")


def test_sidecar_serves_app_and_restarts_under_never(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("sidecars", sidecar_pod())

    def settled() -> dict[str, Any] | None:
        q = h.pod("sidecars")
        server = status_of(q, "server", "initContainerStatuses")
        app = status_of(q, "app")
        if (
            q is not None
            and q["status"].get("phase") == "Running"
            and "running" in app.get("state", {})
            and server.get("started") is True
            and server.get("ready") is True
            and condition(q, "ContainersReady") == "True"
        ):
            return q
        return None

    p = h.wait(settled, 90, "sidecar started and app running")
    uid = p["metadata"]["uid"]
    assert condition(p, "Initialized") == "True"
    assert condition(p, "Ready") == "True"
    server = status_of(p, "server", "initContainerStatuses")
    assert "running" in server["state"]
    assert server["restartCount"] == 0
    # the app read the sidecar's file over localhost
    code, out = h.exec(uid, "app", ["cat", "/tmp/got"])
    assert (code, out.strip()) == (0, "served-by-sidecar")
    app_id = status_of(p, "app")["containerID"]
    # the legacy log links: <podLogsDir>/../containers/<pod>_<ns>_<ctr>-<id>.log -> its log
    links = h.base / "containers"
    pod_name = p["metadata"]["name"]
    app_link = links / f"{pod_name}_default_app-{app_id.split('://', 1)[1]}.log"
    assert app_link.is_symlink()
    assert os.readlink(app_link).startswith(str(h.base / "logs"))
    h.wait(lambda: "served-by-sidecar" in app_link.read_text(), 10, "app log via the link")
    server_id = server["containerID"].split("://", 1)[1]
    assert (links / f"{pod_name}_default_server-{server_id}.log").is_symlink()

    # the sidecar exits (code 3): it is restarted although the pod's policy is Never,
    # and the app keeps running in the same container
    h.exec(uid, "server", ["touch", "/tmp/stop"])

    def restarted() -> dict[str, Any] | None:
        q = h.pod("sidecars")
        s = status_of(q, "server", "initContainerStatuses")
        if s.get("restartCount", 0) >= 1 and "running" in s.get("state", {}) and s.get("started"):
            return q
        return None

    p = h.wait(restarted, 60, "sidecar restarted")
    server = status_of(p, "server", "initContainerStatuses")
    assert server["lastState"]["terminated"]["exitCode"] == 3
    app = status_of(p, "app")
    assert app["containerID"] == app_id
    assert app["restartCount"] == 0
    assert "running" in app["state"]
    assert p["status"]["phase"] == "Running"
    # the app reads from the new sidecar instance
    h.exec(uid, "app", ["rm", "-f", "/tmp/got"])
    h.wait(
        lambda: h.exec(uid, "app", ["cat", "/tmp/got"])[1].strip() == "served-by-sidecar",
        20,
        "app reads from the restarted sidecar",
    )

    # deletion: the app stops before the sidecar (terminationOrdering)
    agent_pod = next(x for x in h.agent.pod_manager.pods().values() if x.uid == uid)
    observed = h.agent.manager.get_pod_status(uid, agent_pod.name, agent_pod.namespace)
    h.agent.manager.kill_pod(agent_pod, observed)
    after = h.agent.manager.get_pod_status(uid, agent_pod.name, agent_pod.namespace)
    app_end = after.find_container("app").finished_at
    server_end = after.find_container("server").finished_at
    assert app_end > 0
    # both ignore SIGTERM (shell as PID 1): the app is killed after its grace period,
    # and only then is the sidecar asked to stop (killed after the 2 s minimum)
    assert server_end - app_end >= 1.0, (app_end, server_end)

    # deleting the pod removes its containers and their log links
    h.remove("sidecars")
    h.wait(lambda: h.pod("sidecars") is None and not h.containers(uid), 60, "pod removed")
    h.wait(lambda: not any(links.glob(f"{pod_name}_default_*.log")), 10, "links removed")
