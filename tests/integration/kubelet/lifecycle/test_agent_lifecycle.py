"""The agent's core lifecycle on real runtimes: the same agent, unchanged, on containerd and
on ``pykubelet runtime`` (parametrised), with real runc containers."""

from __future__ import annotations

import ipaddress
import time
from pathlib import Path

import pytest
from agent_harness import IMAGE, SUBNETS, busybox_pod

from pykubelet.kubelet.kuberuntime.labels import (
    CONTAINER_HASH_ANNOTATION,
    CONTAINER_NAME_LABEL,
    CONTAINER_RESTART_COUNT_ANNOTATION,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]


def test_pod_lifecycle(agent_factory, endpoint, runtime_name, tmp_path):
    """Init container to success, then the app: env with fieldRef, emptyDir (Memory) and
    hostPath volumes, kubelet's labels and log paths; removal leaves nothing behind."""
    h = agent_factory(endpoint)
    host_dir = tmp_path / "hostdir"
    host_dir.mkdir()
    pod = busybox_pod(
        "life",
        'cat /work/from-init; echo "name=$MY_NAME ns=$MY_NS ip=$MY_IP x=$(X)"; '
        "echo hello > /host/out; grep -q ' /work tmpfs ' /proc/mounts && echo tmpfs-ok; "
        "sleep 3600",
        initContainers=[{
            "name": "init", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", "echo from-init > /work/from-init"],
            "volumeMounts": [{"name": "work", "mountPath": "/work"}],
        }],
        container={
            "env": [
                {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "MY_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "X", "value": "x-is-$(MY_NS)"},
            ],
            "volumeMounts": [
                {"name": "work", "mountPath": "/work"},
                {"name": "host", "mountPath": "/host"},
            ],
        },
        volumes=[
            {"name": "work", "emptyDir": {"medium": "Memory"}},
            {"name": "host", "hostPath": {"path": str(host_dir), "type": "Directory"}},
        ],
    )
    h.start()
    h.write("life", pod)
    p = h.wait_running("life", 60)
    uid = p["metadata"]["uid"]
    status = p["status"]
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(SUBNETS[runtime_name])
    init = status["initContainerStatuses"][0]
    assert init["state"]["terminated"]["exitCode"] == 0
    assert init["state"]["terminated"]["reason"] == "Completed"
    conds = {c["type"]: c["status"] for c in status["conditions"]}
    assert conds["Initialized"] == "True"
    assert conds["Ready"] == "True"

    # kubelet's labels and annotations on the CRI objects
    sandboxes = h.sandboxes(uid)
    assert len(sandboxes) == 1
    sb = sandboxes[0]
    assert sb.labels[POD_NAME_LABEL] == "life-" + h.node
    assert sb.labels[POD_NAMESPACE_LABEL] == "default"
    assert sb.metadata.name == "life-" + h.node
    assert sb.metadata.uid == uid
    ctrs = {c.metadata.name: c for c in h.containers(uid)}
    assert set(ctrs) == {"init", "app"}
    app = ctrs["app"]
    assert app.labels[CONTAINER_NAME_LABEL] == "app"
    assert app.labels[POD_UID_LABEL] == uid
    assert app.annotations[CONTAINER_RESTART_COUNT_ANNOTATION] == "0"
    assert app.annotations[CONTAINER_HASH_ANNOTATION]

    # logs at <podLogsDir>/<ns>_<pod>_<uid>/<container>/<restart>.log, CRI format
    log_file = Path(h.config().podLogsDir) / f"default_life-{h.node}_{uid}" / "app" / "0.log"

    def log_has_all() -> str | None:
        text = log_file.read_text() if log_file.exists() else ""
        return text if "tmpfs-ok" in text else None

    text = h.wait(log_has_all, 20, "app log")
    assert " stdout F from-init" in text
    assert f"name=life-{h.node} ns=default ip={status['podIP']} x=x-is-default" in text
    assert (host_dir / "out").read_text() == "hello\n"
    code, out = h.exec(uid, "app", ["hostname"])
    assert code == 0
    assert out.strip() == f"life-{h.node}"

    # removing the manifest kills and removes everything of the pod
    h.remove("life")
    pod_dir = Path(h.config().rootDir) / "pods" / uid
    # the pod's directory goes right after its sandbox (terminate_pod: remove, then tear down)
    h.wait(lambda: h.pod("life") is None and not h.sandboxes(uid) and not h.containers(uid)
           and not pod_dir.exists(), 60, "pod removed")


def test_restart_policy_and_backoff(agent_factory, endpoint):
    """A crashing container restarts with kubelet's back-off (10 s, then 20 s) and shows
    CrashLoopBackOff; restartCount comes from the runtime's annotations."""
    h = agent_factory(endpoint)
    h.start()
    h.write("crash", busybox_pod("crash", "echo boom; exit 3"))

    def restarts(n: int) -> dict | None:
        p = h.pod("crash")
        if p is None:
            return None
        cs = p["status"].get("containerStatuses", [])
        return p if cs and cs[0]["restartCount"] >= n else None

    t0 = time.monotonic()
    p = h.wait(lambda: restarts(1), 40, "first restart")
    cs = p["status"]["containerStatuses"][0]
    assert cs["lastState"]["terminated"]["exitCode"] == 3
    assert cs["lastState"]["terminated"]["reason"] == "Error"
    # the second exit is followed by a 10 s back-off, shown as CrashLoopBackOff
    p = h.wait(lambda: (q := h.pod("crash")) and q["status"]["containerStatuses"][0]["state"]
               .get("waiting", {}).get("reason") == "CrashLoopBackOff" and q, 30, "backoff")
    t1 = time.monotonic()
    p = h.wait(lambda: restarts(2), 30, "second restart")
    t2 = time.monotonic()
    assert t2 - t1 >= 5, "restarted without backing off"
    p = h.wait(lambda: restarts(3), 45, "third restart")
    t3 = time.monotonic()
    # the back-off doubled: 20 s between the 2nd and 3rd restart
    assert t3 - t2 >= 15, f"back-off did not double ({t3 - t2:.1f}s)"
    assert t3 - t0 < 90
    uid = p["metadata"]["uid"]
    backoff = [e for e in h.agent.recorder.list(uid) if e["reason"] == "BackOff"]
    assert backoff
    assert backoff[0]["type"] == "Warning"
    assert backoff[0]["message"].startswith("Back-off restarting failed container app in pod")
    counts = sorted(int(c.annotations[CONTAINER_RESTART_COUNT_ANNOTATION])
                    for c in h.containers(uid))
    assert counts[-1] == 3, counts  # the newest instance is attempt 3; older ones collected
    assert len(counts) <= 2


def test_restart_never_init_failure_fails_pod(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("initfail", busybox_pod(
        "initfail", "sleep 3600", restartPolicy="Never",
        initContainers=[{"name": "init", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                         "command": ["sh", "-c", "exit 7"]}],
    ))
    p = h.wait_phase("initfail", "Failed", 60)
    init = p["status"]["initContainerStatuses"][0]
    assert init["state"]["terminated"]["exitCode"] == 7
    app = p["status"]["containerStatuses"][0]
    assert "running" not in app["state"]
    uid = p["metadata"]["uid"]
    assert [c.metadata.name for c in h.containers(uid)] == ["init"]


def test_init_failure_restarts_under_onfailure(agent_factory, endpoint):
    """An init container that fails first and succeeds on retry: restartCount 1, then the
    second init container and the app run, strictly in order."""
    h = agent_factory(endpoint)
    h.start()
    h.write("initretry", busybox_pod(
        "initretry", "cat /w/order; sleep 3600", restartPolicy="OnFailure",
        initContainers=[
            {"name": "first", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
             "command": ["sh", "-c",
                         "echo first >> /w/order; test -f /w/again || { touch /w/again; exit 1; }"],
             "volumeMounts": [{"name": "w", "mountPath": "/w"}]},
            {"name": "second", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
             "command": ["sh", "-c", "echo second >> /w/order"],
             "volumeMounts": [{"name": "w", "mountPath": "/w"}]},
        ],
        container={"volumeMounts": [{"name": "w", "mountPath": "/w"}]},
        volumes=[{"name": "w", "emptyDir": {}}],
    ))
    p = h.wait_running("initretry", 60)
    inits = {c["name"]: c for c in p["status"]["initContainerStatuses"]}
    assert inits["first"]["restartCount"] == 1
    assert inits["second"]["restartCount"] == 0
    _code, out = h.exec(p["metadata"]["uid"], "app", ["cat", "/w/order"])
    assert out.split() == ["first", "first", "second"]


def test_pod_succeeds_with_restart_never(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("done", busybox_pod("done", "exit 0", restartPolicy="Never"))
    p = h.wait_phase("done", "Succeeded", 60)
    cs = p["status"]["containerStatuses"][0]
    assert cs["state"]["terminated"]["reason"] == "Completed"
    assert cs["restartCount"] == 0
    time.sleep(3)
    assert h.pod("done")["status"]["containerStatuses"][0]["restartCount"] == 0
