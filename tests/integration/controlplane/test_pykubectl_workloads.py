"""pykubectl's workload commands (issue 19 item 4) next to the real kubectl on one control
plane process: ``create deployment|job|cronjob``, ``scale``, ``rollout`` and ``describe``
of the workload kinds print what kubectl prints and make the objects kubectl makes. No
node runs pods here: where a rollout must finish, pods are made Ready through pods/status
(as test_cp_apps does). Nothing needs root; no request leaves loopback."""

from __future__ import annotations

import json
import re
import subprocess
import time

from cp_process import ControlPlaneProcess, wait_for
from test_cp_apps import _ready_pods
from test_pykubectl import PYKUBECTL, env_for, pk, same_as_kubectl

CP_BACKENDS = ("sqlite",)  # a client face: the store is not the point


def _first_error(stderr: str) -> str:
    """kubectl's error line: cobra's required-flag errors come through klog
    (``E1203 ... "command failed" err="required flag(s) \\"image\\" not set"``)."""
    for line in stderr.splitlines():
        m = re.search(r'"command failed" err="(.*)"$', line)
        if m:
            return "error: " + m.group(1).replace('\\"', '"')
        if line.startswith(("error:", "Error from server")):
            return line
    return stderr


# ---------------------------------------------------------------------------- create


def test_create_dry_run_prints_kubectls_objects(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "cronjob", "nightly", "-n", ns, "--image=busybox",
               "--schedule=0 3 * * *", "--", "date")
    for args in (
        ["deployment", "web", "--image=busybox:1.36", "--image=nginx", "--port=80", "-r",
         "3", "-o", "yaml"],
        ["deploy", "web", "--image=reg.local:5000/lib/busybox@sha256:abc", "-o", "json",
         "--", "sleep", "3600"],
        ["deployment", "web", "--image=busybox", "--replicas=2", "-n", ns, "-o", "json"],
        ["deployment", "web", "--image=busybox"],
        ["job", "once", "--image=busybox", "-o", "yaml", "--", "sh", "-c", "echo hi"],
        ["job", "once", "--image=busybox", "-o", "json", "-n", ns],
        ["job", "once", "--image=busybox", "-o", "name"],
        ["cronjob", "tick", "--image=busybox", "--schedule=*/1 * * * *", "-o", "yaml",
         "--", "date"],
        ["cj", "tick", "--image=busybox", "--schedule=@hourly", "--restart=Never", "-o",
         "json"],
        ["job", "manual", "--from=cronjob/nightly", "-n", ns, "-o", "json"],
        ["job", "manual", "--from=cronjob/nightly", "-n", ns, "-o", "yaml"],
    ):
        same_as_kubectl(cp, "create", *args, "--dry-run=client")
    # a name with dots or underscores gets a random suffix: only its shape can be compared
    obj = json.loads(pk(cp, "create", "deployment", "x", "--image=reg/my_img.v2:1",
                        "--dry-run=client", "-o", "json").stdout)
    assert re.fullmatch(r"my-img-v2-[a-z0-9]{5}",
                        obj["spec"]["template"]["spec"]["containers"][0]["name"])


def _comparable(obj: dict, old: str, new: str) -> dict:  # type: ignore[type-arg]
    """An object with what differs between any two creations cleared, and one name
    replaced by another."""
    meta = obj["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        meta.pop(key, None)
    obj.pop("status", None)
    return json.loads(json.dumps(obj).replace(f'"{old}"', f'"{new}"')
                      .replace(f'"{old}-', f'"{new}-'))


def test_create_makes_kubectls_objects(cp: ControlPlaneProcess, ns: str) -> None:
    for kind, resource, flags in (
        ("deployment", "deployments", ["--image=busybox", "-r", "2", "--port=8080",
                                       "--", "sleep", "3600"]),
        ("job", "jobs", ["--image=busybox", "--", "echo", "hi"]),
        ("cronjob", "cronjobs", ["--image=busybox", "--schedule=*/5 * * * *",
                                 "--restart=Never"]),
    ):
        group = "apps" if kind == "deployment" else "batch"
        mine = pk(cp, "create", kind, f"p-{kind}", "-n", ns, *flags)
        assert mine.stdout == f"{kind}.{group}/p-{kind} created\n"
        cp.kubectl("create", kind, f"k-{kind}", "-n", ns, *flags)
        got = json.loads(cp.kubectl("get", resource, f"p-{kind}", "-n", ns, "-o",
                                    "json").stdout)
        want = json.loads(cp.kubectl("get", resource, f"k-{kind}", "-n", ns, "-o",
                                     "json").stdout)
        if kind == "job":  # the generated selector and its labels hold the Job's uid
            for o in (got, want):
                o["spec"].pop("selector")
                o["spec"]["template"]["metadata"].pop("labels")
                o["metadata"].pop("labels", None)
        assert _comparable(got, f"p-{kind}", "x") == _comparable(want, f"k-{kind}", "x")
    # from a CronJob: its template, the manual annotation, the CronJob as controller
    pk(cp, "create", "job", "p-manual", "--from=cronjob/p-cronjob", "-n", ns)
    job = json.loads(cp.kubectl("get", "job", "p-manual", "-n", ns, "-o", "json").stdout)
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "p-cronjob",
                                                                   True)
    assert "blockOwnerDeletion" not in owner
    # server dry run: validated and defaulted, nothing written
    out = pk(cp, "create", "deployment", "dry", "--image=busybox", "-n", ns,
             "--dry-run=server", "-o", "yaml").stdout
    assert "progressDeadlineSeconds: 600" in out
    assert pk(cp, "create", "deployment", "dry", "--image=busybox", "-n", ns,
              "--dry-run=server").stdout == "deployment.apps/dry created (server dry run)\n"
    assert cp.kubectl("get", "deploy", "dry", "-n", ns, check=False).returncode == 1


CREATE_ERRORS = (
    ["deployment", "x"],
    ["deploy"],
    ["deployment", "--image=busybox"],
    ["deployment", "a", "b", "--image=busybox"],
    ["deployment", "x", "--image=a", "--image=b", "--", "sleep", "1"],
    ["deployment", "x", "--image=busybox", "-r", "-1"],
    ["deployment", "x", "--image=busybox", "--port=70000"],
    ["job", "x"],
    ["job", "--image=busybox"],
    ["job", "x", "--image=busybox", "--from=cronjob/nope"],
    ["job", "x", "--from=cronjob/nope"],
    ["job", "x", "--from=nope/x"],
    ["job", "x", "--from=cronjob"],
    ["cronjob", "x", "--image=busybox"],
    ["cronjob", "x", "--schedule=* * * * *"],
    ["cronjob", "x", "--image=busybox", "--schedule=*", "--restart=Always"],
    ["deployment", "x", "--image=busybox", "-o", "wide"],
    [],
)


def test_create_errors_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    for args in CREATE_ERRORS:
        mine = pk(cp, "create", *args, "-n", ns, check=False)
        theirs = cp.kubectl("create", *args, "-n", ns, check=False)
        assert mine.returncode == theirs.returncode == 1, args
        assert mine.stdout == theirs.stdout == "", args
        if "E1" in theirs.stderr or "wide" in args:  # klog noise; kubectl's longer list
            want = _first_error(theirs.stderr).split(", allowed")[0]
            assert mine.stderr.strip().startswith(want), args
        else:
            assert mine.stderr.replace("pykubectl", "kubectl") == theirs.stderr, args
    assert cp.kubectl("get", "deploy,job,cronjob", "-n", ns, "-o", "name").stdout == ""


def test_create_existing_is_refused_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "deployment", "web", "--image=busybox", "-n", ns)
    same_as_kubectl(cp, "create", "deployment", "web", "--image=busybox", "-n", ns)


# ---------------------------------------------------------------------------- scale


def _scale_of(cp: ControlPlaneProcess, ns: str, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(cp.kubectl("get", "--raw", f"/apis/apps/v1/namespaces/{ns}/deployments/"
                                 f"{name}/scale").stdout)


def test_scale_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    for name in ("web", "db"):
        cp.kubectl("create", "deployment", name, "--image=busybox", "-n", ns)
    cp.kubectl("create", "job", "once", "--image=busybox", "-n", ns)
    cp.kubectl("create", "configmap", "cfg", "-n", ns)
    # each is idempotent, so the second program sees what the first left
    for args in (
        ["deploy/web", "--replicas=2"],
        ["deploy", "web", "--replicas=2", "--current-replicas=2"],
        ["deploy/web", "--replicas=3", "--current-replicas=5"],
        ["deploy/web", "--replicas=3", "--resource-version=1"],
        ["deploy/web", "--replicas=-1"],
        ["deploy/web", "--replicas=1", "--current-replicas=-2"],
        ["deploy/nope", "--replicas=1"],
        ["deploy/web", "deploy/nope", "deploy/db", "--replicas=2"],
        ["deploy", "web", "db", "--replicas=2", "--resource-version=5"],
        ["job/once", "--replicas=2"],
        ["cm/cfg", "--replicas=1"],
        ["deploy", "--replicas=2"],
        ["--replicas=2"],
        ["deploy", "--all", "--replicas=2"],
        ["deploy", "-l", "app=db", "--replicas=3"],
        ["deploy", "-l", "app=none", "--replicas=3"],
        ["deploy/web", "--replicas=4", "-o", "name"],
        ["deploy/web", "--replicas=5", "--dry-run=server"],
        ["deploy/web", "--replicas=5", "--dry-run=client"],
    ):
        same_as_kubectl(cp, "scale", *args, "-n", ns)
    assert [_scale_of(cp, ns, n)["spec"]["replicas"] for n in ("web", "db")] == [4, 3]
    # the object printed is the one read, with the new size
    out = pk(cp, "scale", "deploy/web", "--replicas=5", "--dry-run=client", "-o", "yaml",
             "-n", ns).stdout
    assert "\n  replicas: 5\n" in out
    assert _scale_of(cp, ns, "web")["spec"]["replicas"] == 4
    # --timeout waits until the Scale's status shows the size
    assert pk(cp, "scale", "deploy/db", "--replicas=1", "--timeout=30s", "-n",
              ns).stdout == "deployment.apps/db scaled\n"
    assert _scale_of(cp, ns, "db")["status"]["replicas"] == 1
    missing = pk(cp, "scale", "deploy/web", "-n", ns, check=False)
    assert (missing.returncode, missing.stderr) == (1, 'error: required flag(s) "replicas" '
                                                       "not set\n")
    assert _first_error(cp.kubectl("scale", "deploy/web", "-n", ns,
                                   check=False).stderr) == missing.stderr.strip()


# ---------------------------------------------------------------------------- rollout


def _twin(cp: ControlPlaneProcess, ns: str, *args: str) -> str:
    """``rollout ARGS deploy/p`` by pykubectl and ``deploy/k`` by kubectl, on two
    Deployments that went through the same steps: the same output, names aside."""
    mine = pk(cp, "rollout", *args, "deploy/p", "-n", ns, check=False)
    theirs = cp.kubectl("rollout", *args, "deploy/k", "-n", ns, check=False)

    def norm(text: str) -> str:
        text = text.replace("pykubectl", "kubectl").replace('"p"', '"k"').replace(
            "/p ", "/k ").replace("/p\n", "/k\n").replace("app=p\n", "app=k\n")
        text = re.sub(r"pod-template-hash=\w+", "pod-template-hash=HASH", text)
        return re.sub(r"replicaset\.apps/[pk]-\w+", "replicaset.apps/RS", text)
    assert (norm(mine.stdout), norm(mine.stderr), mine.returncode) == (
        norm(theirs.stdout), norm(theirs.stderr), theirs.returncode), args
    return mine.stdout


def _template(cp: ControlPlaneProcess, ns: str, name: str) -> dict:  # type: ignore[type-arg]
    d = json.loads(cp.kubectl("get", "deploy", name, "-n", ns, "-o", "json").stdout)
    return {"template": d["spec"]["template"]["spec"]["containers"][0]["image"],
            "paused": d["spec"].get("paused", False),
            "restarted": RESTARTED in (d["spec"]["template"]["metadata"].get("annotations")
                                       or {}),
            "revision": d["metadata"]["annotations"]["deployment.kubernetes.io/revision"]}


RESTARTED = "kubectl.kubernetes.io/restartedAt"


def test_rollout_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    for name in ("p", "k"):
        cp.kubectl("create", "deployment", name, "--image=busybox:1", "-n", ns)
    wait_for(lambda: all(_template(cp, ns, n)["revision"] == "1" for n in ("p", "k")),
             what="revision 1")
    assert _twin(cp, ns, "history") == ("deployment.apps/p \nREVISION  CHANGE-CAUSE\n"
                                        "1         <none>\n\n")
    _twin(cp, ns, "undo")  # no history to go back to
    for name in ("p", "k"):
        cp.kubectl("set", "image", f"deploy/{name}", "busybox=busybox:2", "-n", ns)
    wait_for(lambda: all(_template(cp, ns, n)["revision"] == "2" for n in ("p", "k")),
             what="revision 2")
    _twin(cp, ns, "history")
    out = _twin(cp, ns, "history", "--revision=1")
    assert out.startswith("deployment.apps/p with revision #1\nPod Template:\n  Labels:\tapp=p\n")
    assert "    Image:\tbusybox:1\n" in out
    for args in (["history", "--revision=7"], ["history", "--revision=-1"],
                 ["status", "--watch=false"], ["status", "--revision=1", "--watch=false"],
                 ["undo", "--dry-run=client"], ["undo", "--to-revision=9"],
                 ["undo", "--to-revision=2"], ["history", "-o", "name"],
                 ["pause"], ["pause"], ["restart"], ["undo"], ["resume"], ["resume"]):
        _twin(cp, ns, *args)
    assert _template(cp, ns, "p") == _template(cp, ns, "k") == {
        "template": "busybox:2", "paused": False, "restarted": False, "revision": "2"}
    assert _twin(cp, ns, "undo") == "deployment.apps/p rolled back\n"
    wait_for(lambda: _template(cp, ns, "p")["revision"] == "3", what="revision 3")
    assert _template(cp, ns, "p")["template"] == "busybox:1"
    assert _twin(cp, ns, "restart") == "deployment.apps/p restarted\n"
    assert _template(cp, ns, "p")["restarted"]
    assert _template(cp, ns, "k")["restarted"]
    _twin(cp, ns, "undo", "--to-revision=2", "--dry-run=server")
    assert _template(cp, ns, "p")["template"] == "busybox:1"
    _twin(cp, ns, "pause", "-o", "name")
    # what kubectl refuses, and what it cannot find, in its words
    cp.kubectl("create", "job", "once", "--image=busybox", "-n", ns)
    for args in (["rollout", "history"], ["rollout", "status", "deploy/nope"],
                 ["rollout", "status", "rs", "--watch=false"],
                 ["rollout", "history", "deploy/nope", "deploy/p"],
                 ["rollout", "pause", "job/once", "deploy/nope"],
                 ["rollout", "restart", "job/once"], ["rollout", "undo", "job/once"],
                 ["rollout", "restart", "deploy", "-l", "app=none"],
                 ["rollout", "status", "deploy", "--watch=false"],
                 ["rollout", "history", "deploy"], ["rollout", "foo", "deploy/p"]):
        same_as_kubectl(cp, *args, "-n", ns)


def test_rollout_status_follows_the_rollout(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=3", "-n", ns)
    # nothing is Ready: kubectl's timeout, word for word
    same_as_kubectl(cp, "rollout", "status", "deploy/web", "-n", ns, "--timeout=1s")
    proc = subprocess.Popen([PYKUBECTL, "rollout", "status", "deployment/web", "-n", ns,
                             "--timeout=60s"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env_for(cp))
    try:
        deadline = time.monotonic() + 60
        time.sleep(0.5)
        while proc.poll() is None and time.monotonic() < deadline:
            _ready_pods(cp, ns)
            time.sleep(0.3)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, err) == (0, ""), out + err
    lines = out.splitlines()
    assert lines[-1] == 'deployment "web" successfully rolled out'
    assert lines[0].startswith('Waiting for deployment "web" rollout to finish: ')
    waiting = re.compile(r'Waiting for deployment "web" rollout to finish: (\d+ out of 3 new '
                         r"replicas have been updated|\d+ of 3 updated replicas are available|"
                         r"\d+ old replicas are pending termination)\.\.\.$")
    assert all(waiting.match(line) or line == "Waiting for deployment spec update to be "
               "observed..." for line in lines[:-1]), lines
    # once done, both print the one line
    same_as_kubectl(cp, "rollout", "status", "deploy/web", "-n", ns)


# ---------------------------------------------------------------------------- describe

JOBS = """
apiVersion: batch/v1
kind: Job
metadata: {name: indexed, labels: {team: a}, annotations: {note: x}}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  ttlSecondsAfterFinished: 100
  activeDeadlineSeconds: 50
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, env: [{name: A, value: "1"}],
                    ports: [{containerPort: 80}, {containerPort: 81}]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  timeZone: Europe/Paris
  suspend: true
  startingDeadlineSeconds: 30
  jobTemplate:
    spec:
      parallelism: 2
      completions: 4
      activeDeadlineSeconds: 100
      template:
        metadata: {annotations: {a: b}}
        spec:
          restartPolicy: Never
          nodeSelector: {zone: a}
          tolerations: [{key: k, operator: Exists, effect: NoSchedule}]
          volumes: [{name: scratch, emptyDir: {}}]
          containers: [{name: c, image: busybox, command: [sleep, "5"],
                        volumeMounts: [{name: scratch, mountPath: /tmp}]}]
"""


def test_describe_workloads_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "deployment", "web", "--image=busybox:1", "--replicas=2", "-n", ns)
    proc = cp.kubectl_bg("rollout", "status", "deploy/web", "-n", ns, "--timeout=60s")
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            _ready_pods(cp, ns)
            time.sleep(0.3)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)  # closes its pipes
    assert proc.returncode == 0
    cp.kubectl("set", "image", "deploy/web", "busybox=busybox:2", "-n", ns)
    wait_for(lambda: len(json.loads(cp.kubectl("get", "rs", "-n", ns, "-o", "json").stdout)[
        "items"]) == 2, what="a second ReplicaSet")
    cp.kubectl("apply", "-n", ns, "-f", "-", input=JOBS)
    cp.kubectl("create", "job", "plain", "--image=busybox", "-n", ns)
    for args in (["deploy/web"], ["deployments"], ["rs"], ["replicaset", "-l", "app=web"],
                 ["job/indexed"], ["jobs"], ["cronjob", "nightly"],
                 ["deploy/web", "--show-events=false"], ["cj/nope"]):
        same_as_kubectl(cp, "describe", *args, "-n", ns)
    text = pk(cp, "describe", "deploy/web", "-n", ns).stdout
    assert re.search(r"\nReplicas: +2 desired \| \d updated \| \d total \| \d available \| "
                     r"\d unavailable\n", text)
    assert "RollingUpdateStrategy:  25% max unavailable, 25% max surge\n" in text
    assert "ScalingReplicaSet" in text
