"""The sync loop around SyncPod: PLEG relisting notices a container the runtime stopped,
admission rejects what does not fit, a bad manifest changes nothing, and the local HTTP
port serves /healthz, /pods and /metrics."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from agent_harness import busybox_pod, free_port
from prometheus_client.parser import text_string_to_metric_families

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]


def test_pleg_notices_external_stop(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("pleg", busybox_pod("pleg", "exec sleep 3600"))
    p = h.wait_running("pleg")
    uid = p["metadata"]["uid"]
    [c] = [c for c in h.containers(uid) if c.state == 1]
    t0 = time.monotonic()
    h.client().stop_container(c.id, 0)  # behind the agent's back
    p = h.wait(lambda: (q := h.pod("pleg")) and q["status"]["containerStatuses"][0]
               ["restartCount"] == 1 and "running" in q["status"]["containerStatuses"][0]
               ["state"] and q, 20, "restarted")
    assert time.monotonic() - t0 < 8  # relist every second, no back-off on the first restart
    assert p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 137


def test_admission_and_bad_manifest(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("huge", busybox_pod("huge", "sleep 3600", container={
        "resources": {"requests": {"cpu": "1000"}}}))
    (h.manifests / "broken.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\n"
        "spec: {containers: [{name: a, image: b, bogusField: 1}]}\n")
    h.write("fine", busybox_pod("fine", "sleep 3600"))
    h.wait_running("fine")
    p = h.wait_phase("huge", "Failed", 10)
    assert p["status"]["reason"] == "OutOfcpu"
    assert not h.sandboxes(p["metadata"]["uid"])
    assert h.pod("broken") is None
    errors = h.agent.static_source.errors
    assert any("bogusField" in e.message for e in errors), errors


def test_http_endpoints(agent_factory, containerd_endpoint):
    h = agent_factory(containerd_endpoint)
    port = free_port()
    from pykubelet.kubelet.agent import Kubelet

    h.manifests.mkdir(parents=True, exist_ok=True)
    h.agent = Kubelet(h.config(healthzPort=port))
    h.agent.start()
    h.write("http", busybox_pod("http", "sleep 3600"))
    h.wait_running("http")
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
        assert r.read() == b"ok"
    with urllib.request.urlopen(base + "/pods", timeout=5) as r:
        body = json.load(r)
    assert body["kind"] == "PodList"
    [pod] = body["items"]
    assert pod["metadata"]["name"] == f"http-{h.node}"
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["podIP"]
    with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        exposed = {(x.name, tuple(sorted(x.labels.items()))): x.value
                   for f in text_string_to_metric_families(r.read().decode())
                   for x in f.samples}
    assert exposed[("kubelet_running_pods", ())] == 1
    assert exposed[("kubelet_started_pods_total", ())] == 1
    assert exposed[("kubelet_pod_start_duration_seconds_count", ())] == 1
    assert exposed[("kubelet_runtime_operations_duration_seconds_count",
                    (("operation_type", "run_podsandbox"),))] == 1
    assert exposed[("process_resident_memory_bytes", ())] > 0
    with urllib.request.urlopen(base + "/events", timeout=5) as r:
        events = json.load(r)["items"]
    seen = {(e["reason"], e["involvedObject"].get("fieldPath", "")) for e in events}
    assert ("Pulled", "spec.containers{app}") in seen  # already present on machine
    assert ("Created", "spec.containers{app}") in seen
    assert ("Started", "spec.containers{app}") in seen
    started = next(e for e in events if e["reason"] == "Started")
    assert started["message"] == "Started container app"
    assert started["source"] == {"component": "kubelet", "host": h.node}
    assert started["involvedObject"]["name"] == f"http-{h.node}"


def test_runtime_restart_under_the_agent(agent_factory, tmp_path):
    """`pykubelet runtime` stopped and started again under a running agent: pods keep
    running, the agent rides out the outage and keeps syncing (a pod added meanwhile
    starts once the runtime is back)."""
    import tempfile
    from pathlib import Path

    from agent_harness import PykRuntime

    rt = PykRuntime(Path(tempfile.mkdtemp(prefix="kle-rt2-", dir="/tmp")),
                    bridge="kle-br2", subnet="10.96.2.0/24", netns_prefix="kle2-")
    try:
        rt.write_conf()
        rt.import_image()
        rt.start()
        h = agent_factory(rt.endpoint)
        h.start()
        h.write("before", busybox_pod("before", "exec sleep 3600"))
        uid = h.wait_running("before")["metadata"]["uid"]
        ids = {c.id for c in h.containers(uid)}
        assert rt.proc is not None
        rt.proc.terminate()
        rt.proc.wait(30)
        h.write("during", busybox_pod("during", "exec sleep 3600"))
        time.sleep(3)  # relists and syncs fail meanwhile
        rt.start()
        h.wait_running("during", 60)
        p = h.wait_running("before", 30)
        assert {c.id for c in h.containers(uid)} == ids
        assert p["status"]["containerStatuses"][0]["restartCount"] == 0
        h.cleanup()
    finally:
        rt.destroy()


def test_api_source_update_and_delete(agent_factory, endpoint):
    """Pods from an API source (the control plane's watch calls these): an update that
    changes a container's spec hash restarts that container; a deletionTimestamp
    terminates the pod."""
    import copy

    from pykubelet.api.decode import decode_pod
    from pykubelet.api.defaults import set_defaults_pod

    h = agent_factory(endpoint)
    agent = h.start()
    obj = busybox_pod(f"api-{h.node}", "exec sleep 3600")
    obj["metadata"].update(uid=f"uid-{h.node}", namespace="default")
    obj["spec"]["nodeName"] = h.node
    pod = decode_pod(obj)
    set_defaults_pod(pod)
    agent.handle_pod_additions([pod])
    p = h.wait_running("api")
    uid = p["metadata"]["uid"]
    [old] = h.containers(uid)

    changed = copy.deepcopy(pod)
    changed.spec.containers[0].image = "localhost/busybox"  # same image, another spelling
    agent.handle_pod_updates([changed])
    p = h.wait(lambda: (q := h.pod("api")) and q["status"]["containerStatuses"][0]
               ["restartCount"] == 1 and "running" in q["status"]["containerStatuses"][0]
               ["state"] and q, 30, "restarted for the new spec")
    running = [c for c in h.containers(uid) if c.state == 1]
    assert len(running) == 1
    assert running[0].id != old.id
    assert running[0].annotations["io.kubernetes.container.hash"] != \
        old.annotations["io.kubernetes.container.hash"]

    gone = copy.deepcopy(changed)
    gone.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    gone.metadata.deletion_grace_period_seconds = 0
    agent.handle_pod_updates([gone])
    h.wait(lambda: not h.sandboxes(uid) and not h.containers(uid), 30, "terminated")
    # deleted and stopped: terminal although restartPolicy is Always (SIGKILLed: Failed);
    # listed until the API removes the object
    p = h.wait_phase("api", "Failed", 10)
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    agent.handle_pod_removes([uid])
    assert h.pod("api") is None


def test_api_pod_deleted_reaches_succeeded(agent_factory, endpoint):
    """upstream syncTerminatingPod: once a deleted pod's containers stopped, its phase is
    terminal whatever the restartPolicy; all exited 0 on SIGTERM: Succeeded."""
    from pykubelet.api.decode import decode_pod
    from pykubelet.api.defaults import set_defaults_pod

    h = agent_factory(endpoint)
    agent = h.start()
    obj = busybox_pod(f"del-{h.node}", "trap 'exit 0' TERM; while true; do sleep 0.2; done")
    obj["metadata"].update(uid=f"uid-del-{h.node}", namespace="default")
    obj["spec"].update(nodeName=h.node, terminationGracePeriodSeconds=10)
    pod = set_defaults_pod(decode_pod(obj))
    agent.handle_pod_additions([pod])
    uid = h.wait_running("del")["metadata"]["uid"]
    pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    pod.metadata.deletion_grace_period_seconds = 10
    agent.handle_pod_updates([pod])
    p = h.wait_phase("del", "Succeeded", 30)
    cs = p["status"]["containerStatuses"][0]
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert cs["restartCount"] == 0
    h.wait(lambda: not h.sandboxes(uid) and not h.containers(uid), 30, "removed")
    agent.handle_pod_removes([uid])
    assert h.pod("del") is None


def test_container_log_rotation(agent_factory, endpoint):
    """A container's log is rotated at the size limit (rename + ReopenContainerLog), older
    rotations are gzipped and at most containerLogMaxFiles files are kept; the container
    keeps logging into the live file."""
    import gzip
    from pathlib import Path

    h = agent_factory(endpoint)
    h.manifests.mkdir(parents=True, exist_ok=True)
    from pykubelet.kubelet.agent import Kubelet

    h.agent = Kubelet(h.config(), container_log_max_size=50_000, container_log_max_files=4,
                      log_monitor_period=0.5)
    h.agent.start()
    h.write("chatty", busybox_pod(
        "chatty", "for i in 1 2 3 4; do yes abcdefghij | head -c 100000; sleep 2; done; "
                  "echo done-marker; exec sleep 3600"))
    uid = h.wait_running("chatty")["metadata"]["uid"]
    log_dir = Path(h.config().podLogsDir) / f"default_chatty-{h.node}_{uid}" / "app"
    live = log_dir / "0.log"
    h.wait(lambda: live.exists() and "done-marker" in live.read_text(), 40, "marker logged")
    files = sorted(p.name for p in log_dir.iterdir())
    assert len(files) <= 4, files
    gz = [f for f in files if f.endswith(".gz")]
    assert gz, files
    rotated_plain = [f for f in files if f not in ("0.log", *gz)]
    assert len(rotated_plain) <= 2, files
    with gzip.open(log_dir / gz[0], "rt") as f:
        first = f.readline()
    assert " stdout " in first
    assert "abcdefghij" in first


def test_orphaned_pod_dirs_are_removed(agent_factory, endpoint):
    """A pod directory of no wanted and no running pod (removed while the agent was down)
    is torn down by housekeeping; a running pod's directory stays."""
    from pathlib import Path

    h = agent_factory(endpoint)
    orphan = Path(h.config().rootDir) / "pods" / "kle-orphan-uid"
    (orphan / "volumes" / "kubernetes.io~empty-dir" / "v").mkdir(parents=True)
    (orphan / "etc-hosts").write_text("x\n")
    h.start()
    h.write("keep", busybox_pod("keep", "sleep 3600"))
    uid = h.wait_running("keep")["metadata"]["uid"]
    h.wait(lambda: not orphan.exists(), 15, "orphan dir removed")
    assert (Path(h.config().rootDir) / "pods" / uid / "etc-hosts").exists()
