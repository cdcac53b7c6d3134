"""pykubectl for DaemonSets, StatefulSets and ControllerRevisions (issue 19 item 4) next
to the real kubectl on one control plane process: ``rollout status|history|undo|restart``
on twin objects (one driven by pykubectl, one by kubectl, through the same steps),
``describe``, ``get`` and ``scale`` print what kubectl prints. No node runs pods: fake
nodes (loopback addresses) take the daemon pods, and the test plays the kubelets' part
through pods/status. Nothing needs root; no request leaves loopback."""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import time
from collections.abc import Iterator

import pytest
from cp_process import ControlPlaneProcess, FakeNode, wait_for
from test_pykubectl import PYKUBECTL, env_for, pk, same_as_kubectl

CP_BACKENDS = ("sqlite",)  # a client face: the store is not the point

DS = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: "busybox:1"}}]
"""
STS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}}}
spec:
  replicas: 2
  serviceName: {name}
  podManagementPolicy: Parallel
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: "busybox:1"}}]
"""


@pytest.fixture
def nodes(cp: ControlPlaneProcess) -> Iterator[list[FakeNode]]:
    made: list[FakeNode] = []
    try:
        for i in (1, 2):
            made.append(FakeNode(cp, f"apps-kinds-node-{i}"))
        yield made
    finally:
        for n in made:
            n.delete()


def _norm(text: str) -> str:
    """One twin's output in the other's names: the object, its label, and the hashes in
    its revisions' names."""
    text = text.replace("pykubectl", "kubectl").replace('"p"', '"k"').replace(
        "/p ", "/k ").replace("/p\n", "/k\n").replace("app=p", "app=k")
    text = re.sub(r"\b[pk]-[0-9a-f]{6,10}\b", "k-HASH", text)
    text = re.sub(r"(name|app|serviceName): p\n", r"\1: k\n", text)  # -o yaml
    text = re.sub(r'\\"(name|app|serviceName)\\":\\"p\\"', r'\\"\1\\":\\"k\\"', text)  # json
    text = re.sub(r'(creationTimestamp"?: )"[^"]+"', r"\1TS", text)
    text = re.sub(r'(resourceVersion"?: )"\d+"', r"\1RV", text)
    text = re.sub(r'(uid"?: )"?[0-9a-f-]{36}"?', r"\1UID", text)
    return re.sub(r"controller-revision-hash=\w+", "controller-revision-hash=HASH", text)


def _twin(cp: ControlPlaneProcess, ns: str, kind: str, *args: str) -> str:
    """``rollout ARGS KIND/p`` by pykubectl and ``KIND/k`` by kubectl: the same output,
    names aside."""
    mine = pk(cp, "rollout", *args, f"{kind}/p", "-n", ns, check=False)
    theirs = cp.kubectl("rollout", *args, f"{kind}/k", "-n", ns, check=False)
    got = (_norm(mine.stdout), _norm(mine.stderr), mine.returncode)
    want = (_norm(theirs.stdout), _norm(theirs.stderr), theirs.returncode)
    diff = difflib.unified_diff((want[0] + want[1]).splitlines(),
                                (got[0] + got[1]).splitlines(), "kubectl", "pykubectl",
                                lineterm="")
    assert got == want, f"{args}:\n" + "\n".join(diff)
    return mine.stdout


def _obj(cp: ControlPlaneProcess, ns: str, kind: str, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(cp.kubectl("get", kind, name, "-n", ns, "-o", "json").stdout)


def _image(cp: ControlPlaneProcess, ns: str, kind: str, name: str) -> str:
    return str(_obj(cp, ns, kind, name)["spec"]["template"]["spec"]["containers"][0]["image"])


def _kubelet_pass(cp: ControlPlaneProcess, ns: str, bound_only: bool) -> None:
    """What kubelets would do: pods (bound ones, for daemon pods) Running and Ready, pods
    being deleted gone."""
    for pod in json.loads(cp.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]:
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            cp.kubectl("delete", "pod", name, "-n", ns, "--grace-period=0", "--force",
                       "--wait=false", check=False)
        elif (pod["spec"].get("nodeName") or not bound_only) and (
                pod.get("status") or {}).get("phase") != "Running":
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            status = {"status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}
            cp.kubectl("patch", "pod", name, "-n", ns, "--subresource=status",
                       "--type=merge", "-p", json.dumps(status), check=False)


def _settled(cp: ControlPlaneProcess, ns: str, kind: str, partition: int = 0) -> None:
    """Both twins rolled out (the kubelets' part played meanwhile)."""
    def done() -> bool:
        _kubelet_pass(cp, ns, bound_only=kind == "ds")
        return all(_complete(cp, ns, kind, n, partition) for n in ("p", "k"))

    wait_for(done, timeout=60, interval=0.3, what=f"{kind} twins rolled out")


def _complete(cp: ControlPlaneProcess, ns: str, kind: str, name: str,
              partition: int = 0) -> bool:
    o = _obj(cp, ns, kind, name)
    status, spec = o.get("status") or {}, o["spec"]
    if status.get("observedGeneration", 0) < o["metadata"]["generation"]:
        return False
    if kind == "ds":
        want = status.get("desiredNumberScheduled", -1)
        return bool(want > 0 and status.get("updatedNumberScheduled") == want
                    and status.get("numberAvailable") == want)
    if status.get("readyReplicas") != spec["replicas"]:
        return False
    if partition:
        return bool(status.get("updatedReplicas") == spec["replicas"] - partition)
    return bool(status.get("updatedReplicas") == spec["replicas"]
                and status.get("currentRevision") == status.get("updateRevision"))


def _history_steps(cp: ControlPlaneProcess, ns: str, kind: str) -> None:
    """Two revisions on both twins, then kubectl's history, status, undo and restart."""
    manifest = DS if kind == "ds" else STS
    for name in ("p", "k"):
        cp.kubectl("apply", "-n", ns, "-f", "-", input=manifest.format(name=name))
    _settled(cp, ns, kind)
    assert _twin(cp, ns, kind, "history") == (f"{kind_word(kind)}.apps/p \nREVISION  "
                                              "CHANGE-CAUSE\n1         <none>\n\n")
    _twin(cp, ns, kind, "undo")  # nothing to go back to
    for name in ("p", "k"):
        cp.kubectl("set", "image", f"{kind}/{name}", "c=busybox:2", "-n", ns)
        cp.kubectl("annotate", kind, name, "-n", ns, "kubernetes.io/change-cause=to 2")
    _settled(cp, ns, kind)
    for args in (["history"], ["history", "--revision=1"], ["history", "--revision=2"],
                 ["history", "--revision=7"], ["history", "--revision=-1"],
                 ["history", "-o", "name"], ["history", "--revision=1", "-o", "yaml"],
                 ["history", "-o", "yaml"], ["history", "--revision=2", "-o", "json"],
                 ["history", "-o", "json"],
                 ["status", "--watch=false"], ["status"], ["status", "--revision=1"],
                 ["undo", "--dry-run=client"], ["undo", "--to-revision=9"],
                 ["undo", "--to-revision=2"], ["undo", "--to-revision=1", "--dry-run=server"],
                 ["pause"], ["resume"]):
        _twin(cp, ns, kind, *args)
    assert _image(cp, ns, kind, "p") == _image(cp, ns, kind, "k") == "busybox:2"
    # the revision's data is the bytes kubectl computes from the object: nothing to do
    assert _twin(cp, ns, kind, "undo", "--to-revision=2") == (
        f"{kind_word(kind)}.apps/p skipped rollback (current template already matches "
        "revision 2)\n")
    assert _twin(cp, ns, kind, "undo") == f"{kind_word(kind)}.apps/p rolled back\n"
    assert _image(cp, ns, kind, "p") == _image(cp, ns, kind, "k") == "busybox:1"
    _settled(cp, ns, kind)
    _twin(cp, ns, kind, "history")
    _twin(cp, ns, kind, "undo", "--to-revision=2")
    assert _image(cp, ns, kind, "p") == "busybox:2"
    assert _twin(cp, ns, kind, "restart") == f"{kind_word(kind)}.apps/p restarted\n"
    restarted = "kubectl.kubernetes.io/restartedAt"
    for name in ("p", "k"):
        assert restarted in _obj(cp, ns, kind, name)["spec"]["template"]["metadata"][
            "annotations"]
    _settled(cp, ns, kind)
    _twin(cp, ns, kind, "history")
    _twin(cp, ns, kind, "status", "--watch=false")


def kind_word(kind: str) -> str:
    return {"ds": "daemonset", "sts": "statefulset"}[kind]


def test_rollout_daemonset_as_kubectl(cp: ControlPlaneProcess, ns: str,
                                      nodes: list[FakeNode]) -> None:
    _history_steps(cp, ns, "ds")


def test_rollout_statefulset_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    _history_steps(cp, ns, "sts")
    # a partition: kubectl's partitioned roll out message while waiting and once done
    for name in ("p", "k"):
        cp.kubectl("patch", "sts", name, "-n", ns, "--type=merge", "-p", json.dumps(
            {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}}}}))
        cp.kubectl("set", "image", f"sts/{name}", "c=busybox:3", "-n", ns)
    time.sleep(0.5)
    _twin(cp, ns, "sts", "status", "--watch=false")
    _settled(cp, ns, "sts", partition=1)
    out = _twin(cp, ns, "sts", "status", "--watch=false")
    assert out == "partitioned roll out complete: 1 new pods have been updated...\n", out


def _same(cp: ControlPlaneProcess, *args: str) -> None:
    """same_as_kubectl, with the lines that differ in its message."""
    try:
        same_as_kubectl(cp, *args)
    except AssertionError:
        mine, theirs = pk(cp, *args, check=False), cp.kubectl(*args, check=False)
        diff = difflib.unified_diff((theirs.stdout + theirs.stderr).splitlines(),
                                    (mine.stdout + mine.stderr).splitlines(), "kubectl",
                                    "pykubectl", lineterm="")
        raise AssertionError(f"{args}:\n" + "\n".join(diff)) from None


SETS = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, labels: {team: a, tier: node}, annotations: {note: x}}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      tolerations: [{key: k, operator: Exists, effect: NoSchedule}]
      containers: [{name: c, image: "busybox:1", ports: [{containerPort: 80}],
                    env: [{name: A, value: "1"}]}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, labels: {team: b}}
spec:
  replicas: 2
  serviceName: web
  podManagementPolicy: Parallel
  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {a: b}}
    spec:
      containers: [{name: c, image: "busybox:1", command: [sleep, "3600"]},
                   {name: side, image: "busybox:2"}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  updateStrategy: {type: OnDelete}
  selector: {matchExpressions: [{key: app, operator: In, values: [db, db2]}]}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: "busybox:1"}]
"""


def test_describe_and_get_as_kubectl(cp: ControlPlaneProcess, ns: str,
                                     nodes: list[FakeNode]) -> None:
    cp.kubectl("apply", "-n", ns, "-f", "-", input=SETS)

    def placed() -> bool:
        _kubelet_pass(cp, ns, bound_only=True)
        return all(_complete(cp, ns, "ds", "agent") for _ in (1,)) and (
            _obj(cp, ns, "sts", "web").get("status") or {}).get("replicas") == 2

    wait_for(placed, timeout=60, interval=0.3, what="daemon pods on both nodes")
    for args in (["describe", "ds/agent"], ["describe", "daemonsets"],
                 ["describe", "sts/web"], ["describe", "statefulset", "db"],
                 ["describe", "sts"], ["describe", "sts/web", "--show-events=false"],
                 ["describe", "ds", "-l", "team=a"],
                 ["get", "ds"], ["get", "ds", "-o", "wide"], ["get", "sts"],
                 ["get", "sts", "-o", "wide"], ["get", "controllerrevisions"],
                 ["get", "controllerrevisions", "-o", "wide"], ["get", "ds,sts", "-o", "name"],
                 ["get", "sts", "web", "--show-labels"]):
        _same(cp, *args, "-n", ns)
    text = pk(cp, "describe", "sts/web", "-n", ns).stdout
    assert "Update Strategy:    RollingUpdate\n  Partition:        1\n" in text, text
    assert "Volume Claims:     <none>\n" in text, text
    text = pk(cp, "describe", "ds/agent", "-n", ns).stdout
    assert "Desired Number of Nodes Scheduled: 2\n" in text, text
    assert "Node-Selector:  kubernetes.io/os=linux\n" in text, text


def _scale_of(cp: ControlPlaneProcess, ns: str, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(cp.kubectl("get", "--raw", f"/apis/apps/v1/namespaces/{ns}/"
                                 f"statefulsets/{name}/scale").stdout)


def test_scale_statefulset_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    for name in ("web", "db"):
        cp.kubectl("apply", "-n", ns, "-f", "-", input=STS.format(name=name))
    # each is idempotent, so the second program sees what the first left
    for args in (["sts/web", "--replicas=3"],
                 ["statefulset", "web", "--replicas=3", "--current-replicas=3"],
                 ["sts/web", "--replicas=1", "--current-replicas=2"],
                 ["sts/web", "--replicas=1", "--resource-version=1"],
                 ["sts/nope", "--replicas=1"],
                 ["sts", "web", "db", "--replicas=4"],
                 ["sts", "-l", "app=db", "--replicas=0"],
                 ["sts", "--all", "--replicas=1", "-o", "name"],
                 ["sts/web", "--replicas=5", "--dry-run=server"],
                 ["sts/web", "--replicas=5", "--dry-run=client"],
                 ["sts/web", "--replicas=-1"]):
        _same(cp, "scale", *args, "-n", ns)
    assert [_scale_of(cp, ns, n)["spec"]["replicas"] for n in ("web", "db")] == [1, 1]
    assert [_obj(cp, ns, "sts", n)["spec"]["replicas"] for n in ("web", "db")] == [1, 1]
    # --timeout waits until the Scale's status shows the size (no node: pods exist at once)
    assert pk(cp, "scale", "sts/db", "--replicas=2", "--timeout=30s", "-n",
              ns).stdout == "statefulset.apps/db scaled\n"
    assert _scale_of(cp, ns, "db")["status"]["replicas"] == 2


def test_bare_rollout_prints_kubectls_help(cp: ControlPlaneProcess) -> None:
    mine = pk(cp, "rollout", check=False)
    theirs = cp.kubectl("rollout", check=False)
    assert theirs.returncode == 1  # cobra's DefaultSubCommandRun: the help, then ErrExit
    assert (mine.stdout.replace("pykubectl", "kubectl"), mine.stderr, mine.returncode) == (
        theirs.stdout, theirs.stderr, theirs.returncode)
    assert theirs.stdout.startswith("Manage the rollout of one or many resources.\n")


def _follow(cp: ControlPlaneProcess, ns: str, target: str, bound_only: bool) -> list[str]:
    """``pykubectl rollout status TARGET`` followed to its end while the kubelets' part is
    played; its lines."""
    proc = subprocess.Popen([PYKUBECTL, "rollout", "status", target, "-n", ns,
                             "--timeout=60s"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env_for(cp))
    try:
        deadline = time.monotonic() + 60
        time.sleep(0.5)
        while proc.poll() is None and time.monotonic() < deadline:
            _kubelet_pass(cp, ns, bound_only)
            time.sleep(0.3)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, err) == (0, ""), out + err
    return out.splitlines()


def test_rollout_status_follows_and_refuses_on_delete(cp: ControlPlaneProcess, ns: str,
                                                     nodes: list[FakeNode]) -> None:
    cp.kubectl("apply", "-n", ns, "-f", "-", input=DS.format(name="agent"))
    lines = _follow(cp, ns, "ds/agent", bound_only=True)
    assert lines[-1] == 'daemon set "agent" successfully rolled out', lines
    waiting = re.compile(r'Waiting for daemon set "agent" rollout to finish: (\d+ out of 2 new '
                         r"pods have been updated|\d+ of 2 updated pods are available)\.\.\.$")
    assert all(waiting.match(line) or line == "Waiting for daemon set spec update to be "
               "observed..." for line in lines[:-1]), lines
    cp.kubectl("apply", "-n", ns, "-f", "-", input=STS.format(name="web"))
    lines = _follow(cp, ns, "sts/web", bound_only=False)
    assert lines[-1] == "partitioned roll out complete: 2 new pods have been updated...", lines
    waiting = re.compile(r"Waiting for (\d pods to be ready|statefulset spec update to be "
                         r"observed|partitioned roll out to finish: \d out of 2 new pods have "
                         r"been updated)\.\.\.$")
    assert all(waiting.match(line) for line in lines[:-1]), lines
    # the status viewers refuse what is not a rolling update, in kubectl's words
    for kind, name in (("ds", "agent"), ("sts", "web")):
        cp.kubectl("patch", kind, name, "-n", ns, "--type=merge", "-p", json.dumps(
            {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}}))
        _same(cp, "rollout", "status", f"{kind}/{name}", "-n", ns)
        _same(cp, "rollout", "status", f"{kind}/{name}", "--watch=false", "-n", ns)
