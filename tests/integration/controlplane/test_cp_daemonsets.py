"""apps/v1 DaemonSets through the unmodified kubectl against a real control plane process
with fake nodes (issue 19): one pod per node, bound by the scheduler through the pod's
node affinity; a new node gets one, a node tainted NoSchedule keeps its pod unless
NoExecute (tolerated: kept); an image update rolled out one node at a time
(maxUnavailable 1) with ``kubectl rollout status``; ``rollout history`` lists the
ControllerRevisions and ``rollout undo`` restores the previous template; a bad DaemonSet
is a 422 naming the field with nothing written. No node runs pods: the test makes them
Running and Ready through pods/status, and finishes their deletion as a kubelet would."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from cp_process import ControlPlaneProcess, FakeNode, wait_for

CP_BACKENDS = ("sqlite",)  # the workload's API and controller: the store is not the point

DS = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {labels}}}
    spec:
      {extra}
      containers:
      - name: c
        image: busybox:1
"""


@pytest.fixture
def nodes(cp: ControlPlaneProcess) -> Iterator[list[FakeNode]]:
    made: list[FakeNode] = []
    try:
        for i in (1, 2, 3):
            made.append(FakeNode(cp, f"ds-node-{i}"))
        yield made
    finally:
        for n in made:
            n.delete()


def _pods(cp: ControlPlaneProcess, ns: str, app: str) -> list[dict]:  # type: ignore[type-arg]
    out = cp.kubectl("get", "pods", "-n", ns, "-l", f"app={app}", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def _placement(cp: ControlPlaneProcess, ns: str, app: str) -> dict[str, str]:
    """node -> image of its live, bound daemon pod."""
    return {p["spec"].get("nodeName", ""): p["spec"]["containers"][0]["image"]
            for p in _pods(cp, ns, app)}


def _kubelet_pass(cp: ControlPlaneProcess, ns: str) -> None:
    """What the nodes' kubelets would do: bound pods Running and Ready, pods being
    deleted gone."""
    out = json.loads(cp.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)
    for pod in out["items"]:
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            cp.kubectl("delete", "pod", name, "-n", ns, "--grace-period=0", "--force",
                       "--wait=false", check=False)
            continue
        if not pod["spec"].get("nodeName") or pod.get("status", {}).get("phase") == "Running":
            continue
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}
        cp.kubectl("patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge",
                   "-p", json.dumps(status), check=False)


def _rollout(cp: ControlPlaneProcess, ns: str, name: str) -> str:
    """kubectl rollout status, the kubelets' part played meanwhile; its output."""
    proc = cp.kubectl_bg("rollout", "status", f"ds/{name}", "-n", ns, "--timeout=60s")
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            _kubelet_pass(cp, ns)
            time.sleep(0.3)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    return out


def _settle(cp: ControlPlaneProcess, ns: str, app: str, want: dict[str, str]) -> None:
    def settled() -> bool:
        _kubelet_pass(cp, ns)
        return _placement(cp, ns, app) == want

    wait_for(settled, timeout=30, interval=0.3, what=f"daemon pods {want}")


def test_daemon_set_with_kubectl(cp: ControlPlaneProcess, ns: str,
                                 nodes: list[FakeNode]) -> None:
    out = cp.kubectl("apply", "-n", ns, "-f", "-",
                     input=DS.format(name="agent", labels="agent", extra="")).stdout
    assert out.strip() == "daemonset.apps/agent created"
    out = _rollout(cp, ns, "agent")
    assert out.strip().endswith('daemon set "agent" successfully rolled out'), out
    all_v1 = {f"ds-node-{i}": "busybox:1" for i in (1, 2, 3)}
    assert _placement(cp, ns, "agent") == all_v1
    pod = _pods(cp, ns, "agent")[0]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                       "values": [pod["spec"]["nodeName"]]}]}]
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
            "effect": "NoSchedule"} in pod["spec"]["tolerations"]

    wide = cp.kubectl("get", "ds", "-n", ns, "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE",
                               "AVAILABLE", "NODE", "SELECTOR", "AGE", "CONTAINERS", "IMAGES",
                               "SELECTOR"]
    cells = wide[1].split()
    assert cells[:7] == ["agent", "3", "3", "3", "3", "3", "<none>"]
    assert cells[8:] == ["c", "busybox:1", "app=agent"]
    described = cp.kubectl("describe", "ds", "agent", "-n", ns).stdout
    for line in ("Desired Number of Nodes Scheduled: 3",
                 "Number of Nodes Scheduled with Up-to-date Pods: 3",
                 "Number of Nodes Scheduled with Available Pods: 3",
                 "Number of Nodes Misscheduled: 0",
                 "Pods Status:  3 Running / 0 Waiting / 0 Succeeded / 0 Failed"):
        assert line in described, described
    assert "SuccessfulCreate" in described, described
    assert "Created pod: agent-" in described, described
    revs = cp.kubectl("get", "controllerrevisions", "-n", ns).stdout.splitlines()
    assert revs[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert revs[1].split()[1:3] == ["daemonset.apps/agent", "1"]

    # a new node gets a pod
    nodes.append(FakeNode(cp, "ds-node-4"))
    _settle(cp, ns, "agent", {**all_v1, "ds-node-4": "busybox:1"})
    # NoSchedule keeps the pod a node has; an untolerated NoExecute takes it away
    cp.kubectl("taint", "node", "ds-node-4", "dedicated=x:NoSchedule")
    time.sleep(1)
    assert "ds-node-4" in _placement(cp, ns, "agent")
    cp.kubectl("taint", "node", "ds-node-4", "dedicated=x:NoExecute")
    _settle(cp, ns, "agent", all_v1)
    # cordoned (unschedulable): daemon pods tolerate it
    cp.kubectl("cordon", "ds-node-3")
    time.sleep(1)
    assert _placement(cp, ns, "agent") == all_v1
    status = json.loads(cp.kubectl("get", "ds", "agent", "-n", ns, "-o", "json").stdout)[
        "status"]
    assert (status["desiredNumberScheduled"], status["numberMisscheduled"]) == (3, 0)

    # an update, one node at a time (maxUnavailable 1)
    cp.kubectl("set", "image", "ds/agent", "c=busybox:2", "-n", ns)
    seen_unavailable = []
    proc = cp.kubectl_bg("rollout", "status", "ds/agent", "-n", ns, "--timeout=60s")
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            placement = _placement(cp, ns, "agent")
            seen_unavailable.append(3 - len(placement))
            _kubelet_pass(cp, ns)
            time.sleep(0.3)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    assert "successfully rolled out" in out
    assert max(seen_unavailable) <= 1, seen_unavailable
    assert _placement(cp, ns, "agent") == {n: "busybox:2" for n in all_v1}

    history = cp.kubectl("rollout", "history", "ds/agent", "-n", ns).stdout.split()
    assert history == ["daemonset.apps/agent", "REVISION", "CHANGE-CAUSE", "1", "<none>",
                       "2", "<none>"]
    detail = cp.kubectl("rollout", "history", "ds/agent", "-n", ns, "--revision=1").stdout
    assert "busybox:1" in detail, detail
    out = cp.kubectl("rollout", "undo", "ds/agent", "-n", ns).stdout
    assert out.strip() == "daemonset.apps/agent rolled back"
    _rollout(cp, ns, "agent")
    _settle(cp, ns, "agent", all_v1)
    history = cp.kubectl("rollout", "history", "ds/agent", "-n", ns).stdout.split()
    assert history[3:] == ["2", "<none>", "3", "<none>"]
    # kubectl compares the revision's bytes with the template's: nothing to undo
    out = cp.kubectl("rollout", "undo", "ds/agent", "-n", ns, "--to-revision=3").stdout
    assert out.strip() == ("daemonset.apps/agent skipped rollback (current template "
                           "already matches revision 3)"), out

    # deleted: the garbage collector takes its pods and its revisions
    cp.kubectl("delete", "ds", "agent", "-n", ns, "--wait=false")

    def collected() -> bool:
        _kubelet_pass(cp, ns)
        return cp.kubectl("get", "pods,controllerrevisions", "-n", ns, "-o",
                          "name").stdout == ""

    wait_for(collected, timeout=30, interval=0.3, what="pods and revisions collected")


def test_bad_daemon_set_is_refused(cp: ControlPlaneProcess, ns: str) -> None:
    res = cp.kubectl("apply", "-n", ns, "-f", "-", check=False,
                     input=DS.format(name="bad", labels="other", extra=""))
    assert res.returncode != 0
    assert res.stderr.startswith('The DaemonSet "bad" is invalid: spec.template.metadata.'
                                 'labels: Invalid value: '), res.stderr
    assert "`selector` does not match template `labels`" in res.stderr
    res = cp.kubectl("apply", "-n", ns, "-f", "-", check=False,
                     input=DS.format(name="never", labels="never",
                                     extra="restartPolicy: Never"))
    assert res.returncode != 0
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never"' in res.stderr
    assert "NotFound" in cp.kubectl("get", "ds", "bad", "-n", ns, check=False).stderr
    assert cp.kubectl("get", "ds,controllerrevisions", "-n", ns, "-o", "name").stdout == ""


def test_explain_daemonset_spec(cp: ControlPlaneProcess) -> None:
    out = cp.kubectl("explain", "daemonset.spec.updateStrategy").stdout
    assert "FIELD: updateStrategy <DaemonSetUpdateStrategy>" in out, out
    assert "rollingUpdate" in out
    assert "ds" in cp.kubectl("api-resources", "--api-group=apps").stdout.split()


def test_no_execute_taint_evicts_unless_tolerated(cp: ControlPlaneProcess, ns: str,
                                                  nodes: list[FakeNode]) -> None:
    tolerant = "tolerations: [{key: dedicated, operator: Exists, effect: NoExecute}]"
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=DS.format(name="plain", labels="plain", extra=""))
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=DS.format(name="tolerant", labels="tolerant", extra=tolerant))
    everywhere = {f"ds-node-{i}": "busybox:1" for i in (1, 2, 3)}
    _settle(cp, ns, "plain", everywhere)
    _settle(cp, ns, "tolerant", everywhere)
    try:
        cp.kubectl("taint", "node", "ds-node-1", "dedicated=x:NoExecute")
        _settle(cp, ns, "plain", {f"ds-node-{i}": "busybox:1" for i in (2, 3)})
        time.sleep(1)
        assert _placement(cp, ns, "tolerant") == everywhere
        cp.kubectl("taint", "node", "ds-node-1", "dedicated-")
        _settle(cp, ns, "plain", everywhere)
    finally:
        cp.kubectl("taint", "node", "ds-node-1", "dedicated-", check=False)
