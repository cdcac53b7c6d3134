"""The pod spec users write, on real runtimes: resources to cgroups, hostNetwork,
hostname/subdomain, terminationGracePeriodSeconds with preStop, activeDeadlineSeconds,
imagePullPolicy against the node's image store."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from agent_harness import IMAGE, busybox_pod

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]


def _cgroup_dir(h, uid: str, controller: str) -> Path:
    _, out = h.exec(uid, "app", ["cat", "/proc/self/cgroup"])
    for line in out.splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return Path("/sys/fs/cgroup") / controller / path.lstrip("/")
    raise AssertionError(f"no {controller} cgroup in {out}")


def test_resources_to_cgroups(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("res", busybox_pod("res", "sleep 3600", container={"resources": {
        "requests": {"cpu": "250m", "memory": "32Mi"},
        "limits": {"cpu": "500m", "memory": "64Mi"},
    }}))
    p = h.wait_running("res")
    uid = p["metadata"]["uid"]
    assert p["status"]["qosClass"] == "Burstable"
    mem = _cgroup_dir(h, uid, "memory")
    assert f"/kubepods/burstable/pod{uid}/" in str(mem)
    assert int((mem / "memory.limit_in_bytes").read_text()) == 64 * 1024 * 1024
    cpu = _cgroup_dir(h, uid, "cpu")
    assert int((cpu / "cpu.cfs_quota_us").read_text()) == 50_000
    assert int((cpu / "cpu.cfs_period_us").read_text()) == 100_000
    assert int((cpu / "cpu.shares").read_text()) == 256
    # the pod's own cgroup (kubelet's pod container manager) carries the pod's limits
    pod_mem = Path(f"/sys/fs/cgroup/memory/kubepods/burstable/pod{uid}")
    assert pod_mem in mem.parents
    assert int((pod_mem / "memory.limit_in_bytes").read_text()) == 64 * 1024 * 1024
    pod_cpu = Path(f"/sys/fs/cgroup/cpu/kubepods/burstable/pod{uid}")
    assert int((pod_cpu / "cpu.cfs_quota_us").read_text()) == 50_000
    assert int((pod_cpu / "cpu.shares").read_text()) == 256
    h.remove("res")
    h.wait(lambda: not h.sandboxes(uid), 60, "removed")
    h.wait(lambda: not any(Path("/sys/fs/cgroup").glob(f"*/kubepods/burstable/pod{uid}")),
           10, "pod cgroups removed")


def test_host_network_and_hostname(agent_factory, endpoint):
    h = agent_factory(endpoint)
    agent = h.start()
    h.write("hostnet", busybox_pod("hostnet", "sleep 3600", hostNetwork=True))
    h.write("named", busybox_pod("named", "sleep 3600", hostname="myhost", subdomain="sub"))
    p = h.wait_running("hostnet")
    assert p["status"]["podIP"] == agent.host_ips[0]
    _, out = h.exec(p["metadata"]["uid"], "app", ["hostname"])
    assert out.strip() == socket.gethostname()
    p = h.wait_running("named")
    uid = p["metadata"]["uid"]
    _, out = h.exec(uid, "app", ["hostname"])
    assert out.strip() == "myhost"
    _, hosts = h.exec(uid, "app", ["cat", "/etc/hosts"])
    assert f"{p['status']['podIP']}\tmyhost.sub.default.svc.cluster.local\tmyhost" in hosts


def test_grace_period_and_prestop(agent_factory, endpoint, tmp_path):
    h = agent_factory(endpoint)
    h.start()
    shared = tmp_path / "shared"
    shared.mkdir()
    vol = {"volumes": [{"name": "s", "hostPath": {"path": str(shared)}}]}
    mount = {"volumeMounts": [{"name": "s", "mountPath": "/s"}]}
    # PID 1 ignores SIGTERM: stopping it takes the whole grace period (3 s), then SIGKILL
    h.write("stubborn", busybox_pod(
        "stubborn", "exec sleep 3600", terminationGracePeriodSeconds=3,
        container={**mount, "lifecycle": {"preStop": {"exec": {
            "command": ["sh", "-c", "echo prestop > /s/prestop"]}}}}, **vol))
    # handles SIGTERM: stops at once although the grace period is long
    h.write("polite", busybox_pod(
        "polite", "trap 'echo term > /s/term; exit 0' TERM; while true; do sleep 0.2; done",
        terminationGracePeriodSeconds=30, container=mount, **vol))
    stubborn = h.wait_running("stubborn")["metadata"]["uid"]
    polite = h.wait_running("polite")["metadata"]["uid"]

    t0 = time.monotonic()
    h.remove("polite")
    h.wait(lambda: not h.containers(polite), 30, "polite removed")
    assert time.monotonic() - t0 < 15
    assert (shared / "term").read_text() == "term\n"

    t0 = time.monotonic()
    h.remove("stubborn")
    h.wait(lambda: not h.containers(stubborn), 30, "stubborn removed")
    took = time.monotonic() - t0
    assert took >= 2.5, f"killed before its grace period ({took:.1f}s)"
    assert took < 20
    assert (shared / "prestop").read_text() == "prestop\n"


def test_active_deadline(agent_factory, endpoint):
    h = agent_factory(endpoint)
    h.start()
    h.write("deadline", busybox_pod("deadline", "sleep 3600", activeDeadlineSeconds=3))
    h.wait_running("deadline")
    t0 = time.monotonic()
    p = h.wait_phase("deadline", "Failed", 30)
    assert time.monotonic() - t0 < 15
    assert p["status"]["reason"] == "DeadlineExceeded"
    uid = p["metadata"]["uid"]
    h.wait(lambda: all(c.state != 1 for c in h.containers(uid)), 20, "containers stopped")
    time.sleep(2)
    assert h.pod("deadline")["status"]["phase"] == "Failed"
    assert all(c.state != 1 for c in h.containers(uid))


def _waiting_reason(h, name: str) -> str:
    p = h.pod(name)
    if p is None:
        return ""
    cs = p["status"].get("containerStatuses", [])
    return cs[0]["state"].get("waiting", {}).get("reason", "") if cs else ""


def test_image_pull_policy(agent_factory, endpoint):
    h = agent_factory(endpoint)
    agent = h.start()
    # Never, image absent from the node's store: ErrImageNeverPull, nothing pulled
    h.write("never", busybox_pod("never", "true", container={
        "image": "localhost/kle-absent:1", "imagePullPolicy": "Never"}))
    # Never and IfNotPresent, image present: run without a pull
    h.write("present", busybox_pod("present", "sleep 3600", pull_policy="Never"))
    h.write("ifnot", busybox_pod("ifnot", "sleep 3600", pull_policy="IfNotPresent"))
    h.wait(lambda: _waiting_reason(h, "never") == "ErrImageNeverPull", 30, "ErrImageNeverPull")
    h.wait_running("present")
    h.wait_running("ifnot")
    assert agent.cri.op_counts.get("PullImage", 0) == 0
    assert h.client().image_status("localhost/kle-absent:1") is None
    # Always: a pull is attempted although the image is present. containerd goes to the
    # registry (none here: ErrImagePull); a runtime may also answer from its store.
    h.write("always", busybox_pod("always", "sleep 3600", pull_policy="Always"))
    h.wait(lambda: agent.cri.op_counts.get("PullImage", 0) >= 1, 30, "PullImage called")
    h.wait(lambda: _waiting_reason(h, "always") in ("ErrImagePull", "ImagePullBackOff")
           or (h.pod("always") and h.pod("always")["status"]["phase"] == "Running"),
           60, "pull outcome")


def test_missing_host_path_waits_then_runs(agent_factory, endpoint, tmp_path):
    """A hostPath of type Directory that does not exist: nothing is created (FailedMount)
    until it appears, then the pod starts."""
    h = agent_factory(endpoint)
    h.start()
    missing = tmp_path / "later"
    h.write("hp", busybox_pod(
        "hp", "sleep 3600", container={"volumeMounts": [{"name": "d", "mountPath": "/d"}]},
        volumes=[{"name": "d", "hostPath": {"path": str(missing), "type": "Directory"}}]))
    p = h.wait(lambda: h.pod("hp"), 10, "pod known")
    time.sleep(3)
    p = h.pod("hp")
    assert p["status"]["phase"] == "Pending"
    assert not h.sandboxes(p["metadata"]["uid"])
    missing.mkdir()
    h.wait_running("hp", 30)


def test_termination_message(agent_factory, endpoint):
    """terminationMessagePath is backed by a host file kubelet reads at exit; with
    FallbackToLogsOnError an empty file gives the log's tail."""
    h = agent_factory(endpoint)
    h.start()
    h.write("msg", busybox_pod("msg", "echo 'bye now' > /dev/termination-log; exit 1",
                               restartPolicy="Never"))
    h.write("fallback", busybox_pod("fallback", "echo first; echo 'last words'; exit 2",
                                    restartPolicy="Never",
                                    container={"terminationMessagePolicy":
                                               "FallbackToLogsOnError"}))
    p = h.wait_phase("msg", "Failed", 60)
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 1
    assert term["message"] == "bye now\n"
    p = h.wait_phase("fallback", "Failed", 60)
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["message"] == "first\nlast words\n"


def test_a_sandbox_that_cannot_be_made_says_why(agent_factory, tmp_path):
    """A network whose plugin is not on the runtime's bin path (pycni-bridge, with only
    /usr/lib/cni searched): the pod waits in ContainerCreating, and its status reason and
    message, and a FailedCreatePodSandBox event, say why, rather than only a log. Once the
    network works the pod runs and no longer claims a failure."""
    import json

    from agent_harness import PykRuntime

    rt = PykRuntime(tmp_path / "rt", bridge="kle-br7", subnet="10.96.7.0/24",
                    netns_prefix="klesbf-")
    try:
        rt.base.mkdir()
        rt.write_conf()
        good = (rt.base / "net.d" / "10-kle.conflist").read_text()
        broken = json.loads(good)
        broken["plugins"][0]["type"] = "pycni-bridge"
        (rt.base / "net.d" / "10-kle.conflist").write_text(json.dumps(broken))
        rt.import_image()
        rt.start()
        h = agent_factory(rt.endpoint)
        h.start()
        h.write("sbf", busybox_pod("sbf", "sleep 3600"))
        p = h.wait(lambda: (q := h.pod("sbf")) and q["status"].get("reason") and q, 30,
                   "a reason")
        st = p["status"]
        assert st["phase"] == "Pending"
        assert st["reason"] == "CreatePodSandboxError"
        assert st["message"].startswith("Failed to create pod sandbox: ")
        assert 'failed to find plugin "pycni-bridge"' in st["message"]
        assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
        events = [e for e in h.agent.event_list()["items"]
                  if e["involvedObject"]["name"] == f"sbf-{h.node}"
                  and e["reason"] != "MissingClusterDNS"]
        assert [(e["type"], e["reason"], e["message"]) for e in events][:1] == [
            ("Warning", "FailedCreatePodSandBox", st["message"])]
        (rt.base / "net.d" / "10-kle.conflist").write_text(good)
        p = h.wait_running("sbf", 60)
        assert "reason" not in p["status"]
        assert "message" not in p["status"]
    finally:
        rt.destroy()


def test_downward_api_and_projected_volumes(agent_factory, endpoint):
    """A downwardAPI volume (and a projected one with downwardAPI items) holds the pod's
    fields and its container's resources, written as kubelet's atomic writer does, for the
    init container as for the app (the pod stayed Init:0/1 for ever)."""
    h = agent_factory(endpoint)
    h.start()
    items = [
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
        {"path": "uid", "fieldRef": {"fieldPath": "metadata.uid"}},
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}},
        {"path": "tier", "fieldRef": {"fieldPath": "metadata.labels['tier']"}},
        {"path": "cpu_limit", "resourceFieldRef": {"containerName": "app",
                                                  "resource": "limits.cpu",
                                                  "divisor": "1m"}},
        {"path": "mem_request", "resourceFieldRef": {"containerName": "app",
                                                    "resource": "requests.memory",
                                                    "divisor": "1Mi"}},
    ]
    mounts = [{"name": "podinfo", "mountPath": "/etc/podinfo"},
              {"name": "proj", "mountPath": "/etc/proj"}]
    pod = busybox_pod(
        "dapi", "sleep 3600",
        container={"volumeMounts": mounts,
                   "resources": {"requests": {"cpu": "250m", "memory": "32Mi"},
                                 "limits": {"cpu": "500m", "memory": "64Mi"}}},
        initContainers=[{"name": "init", "image": IMAGE,
                         "imagePullPolicy": "IfNotPresent",
                         "command": ["sh", "-c", "test -s /etc/podinfo/name"],
                         "volumeMounts": mounts}],
        volumes=[{"name": "podinfo", "downwardAPI": {"items": items}},
                 {"name": "proj", "projected": {"defaultMode": 0o600, "sources": [
                     {"downwardAPI": {"items": [
                         {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
                     {"serviceAccountToken": {"path": "token"}}]}}])
    pod["metadata"]["labels"] = {"tier": "web", "app": "dapi"}
    pod["metadata"]["annotations"] = {"note": 'say "hi"'}
    h.write("dapi", pod)
    p = h.wait_running("dapi")
    uid = p["metadata"]["uid"]

    def cat(path: str) -> str:
        code, out = h.exec(uid, "app", ["cat", path])
        assert code == 0, out
        return out

    assert cat("/etc/podinfo/name") == p["metadata"]["name"]
    assert cat("/etc/podinfo/namespace") == p["metadata"]["namespace"]
    assert cat("/etc/podinfo/uid") == uid
    assert 'app="dapi"\ntier="web"' in cat("/etc/podinfo/labels")
    assert 'note="say \\"hi\\""' in cat("/etc/podinfo/annotations")
    assert cat("/etc/podinfo/tier") == "web"
    assert cat("/etc/podinfo/cpu_limit") == "500"
    assert cat("/etc/podinfo/mem_request") == "32"
    assert cat("/etc/proj/ns") == p["metadata"]["namespace"]
    code, out = h.exec(uid, "app", ["sh", "-c", "ls -la /etc/proj/..data/; stat -L -c %a "
                                                "/etc/proj/ns; readlink /etc/podinfo/name"])
    assert code == 0, out
    assert "600" in out.split()  # the projected volume's defaultMode
    assert "..data/name" in out  # the atomic writer's layout
