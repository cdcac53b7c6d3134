"""apps/v1 StatefulSets through the unmodified kubectl against a real control plane process
(issue 19): pods started in order (web-1 is not created before web-0 is Running and Ready;
no node runs pods here, so the test makes them Ready through pods/status), stable names,
labels, hostname and subdomain, a failed pod recreated, scale down in reverse order,
Parallel, a rolling update with a partition, rollout status/history/undo, the Table
columns, explain, and a StatefulSet with volumeClaimTemplates refused with a 422 naming
spec.volumeClaimTemplates and nothing written."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config  # noqa: E402

CP_BACKENDS = ("sqlite",)  # the workload's API and controller: the store is not the point

STS = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {name}
spec:
  replicas: {replicas}
  serviceName: {name}
  podManagementPolicy: {policy}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: c
        image: busybox
"""

Obj = dict[str, Any]


def core(cp: ControlPlaneProcess) -> Any:
    return client.CoreV1Api(config.new_client_from_config(str(cp.kubeconfig)))


def pods(api: Any, ns: str) -> dict[str, Any]:
    """The live pods of ``ns`` by name."""
    return {p.metadata.name: p for p in api.list_namespaced_pod(ns).items
            if p.metadata.deletion_timestamp is None}


def uid_of(api: Any, ns: str, name: str) -> str | None:
    p = pods(api, ns).get(name)
    return p.metadata.uid if p is not None else None


def set_phase(api: Any, ns: str, name: str, phase: str = "Running",
              ready: bool = True) -> None:
    """What a kubelet would report: the pod Running and Ready (or ``phase``)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    body = {"status": {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False",
         "lastTransitionTime": now}]}}
    api.patch_namespaced_pod_status(name, ns, body)


def ready_all(api: Any, ns: str) -> None:
    for name, p in pods(api, ns).items():
        if p.status.phase != "Running":
            set_phase(api, ns, name)


def sts(cp: ControlPlaneProcess, ns: str, name: str) -> Obj:
    out = cp.kubectl("get", "sts", name, "-n", ns, "-o", "json").stdout
    return json.loads(out)  # type: ignore[no-any-return]


def still(predicate: Any, seconds: float = 1.5) -> bool:
    """``predicate`` holds for ``seconds`` (the controller had time to do otherwise)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not predicate():
            return False
        time.sleep(0.2)
    return True


def rollout(cp: ControlPlaneProcess, api: Any, ns: str, name: str) -> str:
    """kubectl rollout status sts/NAME, the pods made Ready meanwhile; its output."""
    proc = cp.kubectl_bg("rollout", "status", f"sts/{name}", "-n", ns, "--timeout=60s")
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            ready_all(api, ns)
            time.sleep(0.3)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    return out


def test_ordered_start_failed_pod_and_reverse_scale_down(cp: ControlPlaneProcess,
                                                         ns: str) -> None:
    api = core(cp)
    out = cp.kubectl("apply", "-n", ns, "-f", "-",
                     input=STS.format(name="web", replicas=3, policy="OrderedReady")).stdout
    assert out.strip() == "statefulset.apps/web created"
    wait_for(lambda: "web-0" in pods(api, ns), what="web-0 created")
    # web-1 waits for web-0 to be Running and Ready
    assert still(lambda: set(pods(api, ns)) == {"web-0"})
    set_phase(api, ns, "web-0", ready=False)
    assert still(lambda: set(pods(api, ns)) == {"web-0"})
    set_phase(api, ns, "web-0")
    wait_for(lambda: "web-1" in pods(api, ns), what="web-1 created")
    assert still(lambda: set(pods(api, ns)) == {"web-0", "web-1"})
    set_phase(api, ns, "web-1")
    wait_for(lambda: "web-2" in pods(api, ns), what="web-2 created")
    set_phase(api, ns, "web-2")
    out = rollout(cp, api, ns, "web")
    # the defaulted partition (0) makes kubectl report a partitioned roll out, as upstream
    assert out.strip() == "partitioned roll out complete: 3 new pods have been updated...", out
    web1 = pods(api, ns)["web-1"]
    status = sts(cp, ns, "web")["status"]
    assert web1.metadata.labels == {
        "app": "web", "statefulset.kubernetes.io/pod-name": "web-1",
        "apps.kubernetes.io/pod-index": "1",
        "controller-revision-hash": status["updateRevision"]}
    assert (web1.spec.hostname, web1.spec.subdomain) == ("web-1", "web")
    assert web1.metadata.owner_references[0].kind == "StatefulSet"
    assert status["replicas"] == status["readyReplicas"] == status["availableReplicas"] == 3
    assert status["currentReplicas"] == status["updatedReplicas"] == 3
    assert status["currentRevision"] == status["updateRevision"]
    assert status["observedGeneration"] == 1
    assert status["collisionCount"] == 0
    table = cp.kubectl("get", "sts", "-n", ns, "-o", "wide").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
    cells = table[1].split()
    assert (cells[0], cells[1], cells[3:]) == ("web", "3/3", ["c", "busybox"])
    described = cp.kubectl("describe", "sts", "web", "-n", ns).stdout
    assert "Pods Status:        3 Running / 0 Waiting / 0 Succeeded / 0 Failed" in described
    assert "SuccessfulCreate  " in described
    assert "create Pod web-2 in StatefulSet web successful" in described, described
    # a failed pod is deleted and made again under the same name
    uid = web1.metadata.uid
    set_phase(api, ns, "web-1", phase="Failed", ready=False)
    wait_for(lambda: uid_of(api, ns, "web-1") not in (None, uid), what="web-1 recreated")
    set_phase(api, ns, "web-1")
    # scale down: the highest ordinal first, one at a time
    watch = cp.kubectl_bg("get", "pods", "-n", ns, "-w", "--output-watch-events",
                          "--watch-only", "--no-headers")
    try:
        time.sleep(1)
        out = cp.kubectl("scale", "sts", "web", "--replicas=0", "-n", ns).stdout
        assert out.strip() == "statefulset.apps/web scaled"
        wait_for(lambda: not pods(api, ns), what="scaled to 0")
        time.sleep(0.5)
    finally:
        watch.terminate()
        events, _ = watch.communicate(timeout=5)
    deleted = [line.split()[1] for line in events.splitlines() if line.startswith("DELETED")]
    assert deleted == ["web-2", "web-1", "web-0"], events


def test_parallel_creates_all_at_once(cp: ControlPlaneProcess, ns: str) -> None:
    api = core(cp)
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=STS.format(name="db", replicas=3, policy="Parallel"))
    wait_for(lambda: set(pods(api, ns)) == {"db-0", "db-1", "db-2"}, what="3 pods, none ready")
    cp.kubectl("scale", "sts", "db", "--replicas=1", "-n", ns)
    wait_for(lambda: set(pods(api, ns)) == {"db-0"}, what="scaled to 1 though none is ready")
    # deleting the set takes its pods and revisions with it (the garbage collector)
    cp.kubectl("delete", "sts", "db", "-n", ns)
    wait_for(lambda: cp.kubectl("get", "pods,controllerrevisions", "-n", ns, "-o",
                                "name").stdout == "", what="pods and revisions collected")


def test_rolling_update_with_partition_history_and_undo(cp: ControlPlaneProcess,
                                                       ns: str) -> None:
    api = core(cp)
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=STS.format(name="web", replicas=3, policy="OrderedReady"))
    rollout(cp, api, ns, "web")
    first = sts(cp, ns, "web")["status"]["currentRevision"]
    cp.kubectl("patch", "sts", "web", "-n", ns, "--type=merge", "-p",
               json.dumps({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}))
    cp.kubectl("set", "image", "sts/web", "c=busybox:2", "-n", ns)
    out = rollout(cp, api, ns, "web")
    assert "partitioned roll out complete: 1 new pods have been updated" in out, out

    def images() -> dict[str, str]:
        return {n: p.spec.containers[0].image for n, p in pods(api, ns).items()}

    wait_for(lambda: images() == {"web-0": "busybox", "web-1": "busybox",
                                  "web-2": "busybox:2"}, what="web-2 updated alone")
    status = sts(cp, ns, "web")["status"]
    assert status["currentRevision"] == first
    assert status["updateRevision"] != first
    assert (status["updatedReplicas"], status["currentReplicas"]) == (1, 2)
    # partition 0: the rest, from the highest ordinal down
    uids = {n: p.metadata.uid for n, p in pods(api, ns).items()}
    cp.kubectl("patch", "sts", "web", "-n", ns, "--type=merge", "-p",
               json.dumps({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}))
    wait_for(lambda: uid_of(api, ns, "web-1") not in (None, uids["web-1"]),
             what="web-1 replaced")
    assert pods(api, ns)["web-0"].metadata.uid == uids["web-0"]  # web-1 is not Ready yet
    out = rollout(cp, api, ns, "web")
    assert "partitioned roll out complete: 3 new pods have been updated" in out, out
    assert set(images().values()) == {"busybox:2"}
    wait_for(lambda: sts(cp, ns, "web")["status"].get("currentRevision")
             == sts(cp, ns, "web")["status"]["updateRevision"], what="current = update")
    history = cp.kubectl("rollout", "history", "sts/web", "-n", ns).stdout.split()
    assert history == ["statefulset.apps/web", "REVISION", "CHANGE-CAUSE", "1", "<none>",
                       "2", "<none>"], history
    shown = cp.kubectl("rollout", "history", "sts/web", "-n", ns, "--revision=1").stdout
    assert re.search(r"Image:\s+busybox\n", shown), shown  # revision 1's template
    out = cp.kubectl("rollout", "undo", "sts/web", "-n", ns).stdout
    assert out.strip() == "statefulset.apps/web rolled back"
    rollout(cp, api, ns, "web")
    assert set(images().values()) == {"busybox"}
    status = sts(cp, ns, "web")["status"]
    assert status["updateRevision"] == first
    history = cp.kubectl("rollout", "history", "sts/web", "-n", ns).stdout.split()
    assert history[3:] == ["2", "<none>", "3", "<none>"], history
    revisions = cp.kubectl("get", "controllerrevisions", "-n", ns, "-o", "name").stdout.split()
    assert len(revisions) == 2


def test_volume_claim_templates_refused_nothing_written(cp: ControlPlaneProcess,
                                                       ns: str) -> None:
    manifest = STS.format(name="data", replicas=1, policy="OrderedReady") + """\
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""
    res = cp.kubectl("apply", "-n", ns, "-f", "-", input=manifest, check=False)
    assert res.returncode != 0
    assert 'The StatefulSet "data" is invalid' in res.stderr, res.stderr
    assert "spec.volumeClaimTemplates: Forbidden: volumeClaimTemplates are not supported" in (
        res.stderr)
    res = cp.kubectl("get", "sts", "data", "-n", ns, check=False)
    assert "NotFound" in res.stderr
    assert cp.kubectl("get", "pods,controllerrevisions", "-n", ns, "-o", "name").stdout == ""


def test_discovery_and_explain(cp: ControlPlaneProcess) -> None:
    resources = cp.kubectl("api-resources", "--api-group=apps").stdout
    row = next(line.split() for line in resources.splitlines() if line.startswith("statef"))
    assert row == ["statefulsets", "sts", "apps/v1", "true", "StatefulSet"]
    explain = cp.kubectl("explain", "statefulset.spec.updateStrategy").stdout
    assert "FIELD: updateStrategy <StatefulSetUpdateStrategy>" in explain
    assert "rollingUpdate" in explain
