"""pykubectl describe pod shows ephemeral containers as kubectl does: their own section after
Containers, with their state from ephemeralContainerStatuses."""

from __future__ import annotations

from pykubelet.cli.kubectl.describe import describe_pod

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "nodeName": "node1",
        "containers": [{"name": "c", "image": "localhost/busybox:1.35"}],
        "ephemeralContainers": [{"name": "debugger-x", "image": "localhost/busybox:1.35",
                                 "command": ["sh"], "targetContainerName": "c"}],
    },
    "status": {
        "phase": "Running",
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                               "state": {"running": {"startedAt": "2026-12-03T10:00:00Z"}}}],
        "ephemeralContainerStatuses": [
            {"name": "debugger-x", "ready": False, "restartCount": 0,
             "containerID": "pykubelet://abc",
             "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                      "startedAt": "2026-12-03T10:01:00Z",
                                      "finishedAt": "2026-12-03T10:01:02Z"}}}],
    },
}


def test_ephemeral_containers_have_their_section() -> None:
    text = describe_pod(POD, None)
    containers = text.index("Containers:")
    ephemeral = text.index("Ephemeral Containers:")
    assert containers < ephemeral
    section = text[ephemeral:].split("Conditions:")[0]
    assert "  debugger-x:" in section
    assert "pykubelet://abc" in section
    assert "Terminated" in section
    assert "Completed" in section
