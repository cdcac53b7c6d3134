"""apps/v1 workloads through the unmodified kubectl against a real control plane process
(issue 19): ReplicaSets applied, listed with upstream's columns, scaled, explained;
Deployments created, rolled out (pods made Ready through pods/status: no node runs them),
scaled, updated, undone, paused, resumed and restarted; bad ones refused with a 422
naming the field and nothing written."""

from __future__ import annotations

import json
import time

from cp_process import ControlPlaneProcess, wait_for

CP_BACKENDS = ("sqlite",)  # the workloads' API and controllers: the store is not the point

RS = """
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {labels}}}
    spec:
      containers:
      - name: c
        image: busybox
"""


def _pods(cp: ControlPlaneProcess, ns: str, selector: str) -> list[dict]:  # type: ignore[type-arg]
    out = cp.kubectl("get", "pods", "-n", ns, "-l", selector, "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def test_replica_set_with_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("apply", "-n", ns, "-f", "-", input=RS.format(name="web", replicas=3,
                                                              labels="web"))
    wait_for(lambda: len(_pods(cp, ns, "app=web")) == 3, what="3 pods")
    wait_for(lambda: "3         3         0" in cp.kubectl("get", "rs", "-n", ns).stdout,
             what="status counted")
    out = cp.kubectl("get", "rs", "-n", ns, "-o", "wide").stdout.splitlines()
    assert out[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS",
                              "IMAGES", "SELECTOR"]
    cells = out[1].split()
    assert cells[:4] == ["web", "3", "3", "0"]
    assert cells[5:] == ["c", "busybox", "app=web"]
    got = cp.kubectl("scale", "rs", "web", "-n", ns, "--replicas=1").stdout
    assert got.strip() == "replicaset.apps/web scaled"
    wait_for(lambda: len(_pods(cp, ns, "app=web")) == 1, what="scaled to 1")
    assert "rs" in cp.kubectl("api-resources", "--api-group=apps").stdout.split()
    explain = cp.kubectl("explain", "replicaset.spec.selector").stdout
    assert "FIELD: selector <LabelSelector>" in explain
    names = cp.kubectl("get", "all", "-n", ns, "-o", "name").stdout.split()
    assert "replicaset.apps/web" in names


def test_bad_replica_set_is_refused(cp: ControlPlaneProcess, ns: str) -> None:
    res = cp.kubectl("apply", "-n", ns, "-f", "-", check=False,
                     input=RS.format(name="bad", replicas=1, labels="other"))
    assert res.returncode != 0
    assert "spec.template.metadata.labels: Invalid value" in res.stderr, res.stderr
    assert "`selector` does not match template `labels`" in res.stderr
    res = cp.kubectl("get", "rs", "bad", "-n", ns, check=False)
    assert "NotFound" in res.stderr


def _ready_pods(cp: ControlPlaneProcess, ns: str) -> None:
    """Every live, not yet Running pod of ``ns`` made Running and Ready through
    pods/status (no node runs pods here)."""
    out = cp.kubectl("get", "pods", "-n", ns, "-o", "json").stdout
    for pod in json.loads(out)["items"]:
        if pod["metadata"].get("deletionTimestamp") or pod.get("status", {}).get(
                "phase") == "Running":
            continue
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}
        cp.kubectl("patch", "pod", pod["metadata"]["name"], "-n", ns, "--subresource=status",
                   "--type=merge", "-p", json.dumps(status), check=False)


def _rollout(cp: ControlPlaneProcess, ns: str, name: str) -> str:
    """kubectl rollout status, the pods made Ready meanwhile; its output."""
    proc = cp.kubectl_bg("rollout", "status", f"deployment/{name}", "-n", ns,
                         "--timeout=60s")
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            _ready_pods(cp, ns)
            time.sleep(0.2)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    return out


def _rs_sizes(cp: ControlPlaneProcess, ns: str) -> dict[str, tuple[str, int]]:
    items = json.loads(cp.kubectl("get", "rs", "-n", ns, "-o", "json").stdout)["items"]
    return {rs["metadata"]["name"]: (
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        rs["spec"]["replicas"]) for rs in items}


def test_deployment_with_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    out = cp.kubectl("create", "deployment", "web", "--image=busybox:1", "--replicas=3",
                     "-n", ns).stdout
    assert out.strip() == "deployment.apps/web created"
    out = _rollout(cp, ns, "web")
    assert out.strip().endswith('deployment "web" successfully rolled out'), out
    # scale
    cp.kubectl("scale", "deploy", "web", "--replicas=4", "-n", ns)
    _rollout(cp, ns, "web")
    assert sorted(_rs_sizes(cp, ns).values()) == [("1", 4)]
    # a new image: a new ReplicaSet, the old one at 0
    cp.kubectl("set", "image", "deploy/web", "busybox=busybox:2", "-n", ns)
    _rollout(cp, ns, "web")
    assert sorted(_rs_sizes(cp, ns).values()) == [("1", 0), ("2", 4)]
    wide = cp.kubectl("get", "deploy,rs", "-n", ns, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE",
                               "CONTAINERS", "IMAGES", "SELECTOR"]
    cells = wide[1].split()
    assert cells[:4] == ["deployment.apps/web", "4/4", "4", "4"]
    assert cells[5:] == ["busybox", "busybox:2", "app=web"]
    rs_header = next(i for i, line in enumerate(wide) if line.startswith("NAME") and i > 0)
    assert wide[rs_header].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE",
                                       "CONTAINERS", "IMAGES", "SELECTOR"]
    history = cp.kubectl("rollout", "history", "deploy/web", "-n", ns).stdout.split()
    assert history[:3] == ["deployment.apps/web", "REVISION", "CHANGE-CAUSE"]
    assert history[3:] == ["1", "<none>", "2", "<none>"]
    # undo: the first ReplicaSet back, at revision 3
    out = cp.kubectl("rollout", "undo", "deploy/web", "-n", ns).stdout
    assert out.strip() == "deployment.apps/web rolled back"
    _rollout(cp, ns, "web")
    assert sorted(_rs_sizes(cp, ns).values()) == [("2", 0), ("3", 4)]
    image = cp.kubectl("get", "deploy", "web", "-n", ns, "-o",
                       "jsonpath={.spec.template.spec.containers[0].image}").stdout
    assert image == "busybox:1"
    # pause: a change waits; resume rolls it out; restart makes another ReplicaSet
    assert cp.kubectl("rollout", "pause", "deploy/web", "-n", ns).stdout.strip() == (
        "deployment.apps/web paused")
    cp.kubectl("set", "image", "deploy/web", "busybox=busybox:3", "-n", ns)
    time.sleep(1)
    assert len(_rs_sizes(cp, ns)) == 2
    assert cp.kubectl("rollout", "resume", "deploy/web", "-n", ns).stdout.strip() == (
        "deployment.apps/web resumed")
    _rollout(cp, ns, "web")
    assert sorted(_rs_sizes(cp, ns).values()) == [("2", 0), ("3", 0), ("4", 4)]
    assert cp.kubectl("rollout", "restart", "deploy/web", "-n", ns).stdout.strip() == (
        "deployment.apps/web restarted")
    _rollout(cp, ns, "web")
    assert sorted(_rs_sizes(cp, ns).values())[-1] == ("5", 4)
    events = cp.kubectl("get", "events", "-n", ns, "--field-selector",
                        "reason=ScalingReplicaSet", "-o", "json").stdout
    msgs = [e["message"] for e in json.loads(events)["items"]]
    assert any(m.startswith("Scaled up replica set web-") and m.endswith("from 0 to 3")
               for m in msgs), msgs


def test_bad_deployment_is_refused(cp: ControlPlaneProcess, ns: str) -> None:
    bad = RS.format(name="bad", replicas=1, labels="other").replace(
        "kind: ReplicaSet", "kind: Deployment")
    res = cp.kubectl("apply", "-n", ns, "-f", "-", check=False, input=bad)
    assert res.returncode != 0
    assert res.stderr.startswith('The Deployment "bad" is invalid: spec.template.metadata.'
                                 'labels: Invalid value: '), res.stderr
    assert "NotFound" in cp.kubectl("get", "deploy", "bad", "-n", ns, check=False).stderr
    assert cp.kubectl("get", "rs", "-n", ns, "-o", "name").stdout == ""
    explain = cp.kubectl("explain", "deployment.spec.strategy").stdout
    assert "FIELD: strategy <DeploymentStrategy>" in explain
    assert "rollingUpdate\t<RollingUpdateDeployment>" in explain
