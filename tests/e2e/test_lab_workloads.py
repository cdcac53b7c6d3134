"""Applications on a 3-node lab through the real kubectl (issue 19 item 5): a Deployment
rolled out over the nodes, scaled up and down, updated to the lab registry's image (a new
ReplicaSet, the old one at 0) and undone; orphan and foreground deletes (an orphaned Job's
pod too); a Job of four completions two at a time; a Job whose pod fails ending
BackoffLimitExceeded, and one a podFailurePolicy FailJob rule ends; a CronJob firing every
minute (and a Job made from it by hand, which is not one of its runs); a DaemonSet with a
pod on every node, a deleted pod replaced on its node and a new image rolled over the
nodes; a StatefulSet started in order (each pod created only once the one before is Ready,
as a watch of its pods sees), its pods' hostnames their names, scaled down in reverse.

One lab for the module. The CronJob is created as soon as the lab is up, so its first run
(at the next minute) happens while the other tests run and the last test only waits for
what is left of that minute. Pods exit on SIGTERM at once, so deletes and rollouts do not
wait out grace periods. Marker ``root``: real namespaces, runc containers on three nodes.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PYKUBELET = str(REPO / ".venv" / "bin" / "pykubelet")
LAB = "e2ewl"
IMAGE = "localhost/busybox:1.35"  # on every node: IfNotPresent starts at once
SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]  # leaves on SIGTERM


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``predicate`` until it returns something truthy (which is returned)."""
    end = time.monotonic() + timeout
    while not (got := predicate()):
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.5)
    return got


class Lab:
    """The lab's kubectl, with a kubeconfig and discovery cache of the module's own."""

    def __init__(self, kubeconfig: Path, registry: str) -> None:
        self.registry = registry
        self.env = dict(os.environ, KUBECONFIG=str(kubeconfig),
                        KUBECACHEDIR=str(kubeconfig.parent / "cache"))

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(["kubectl", *args], capture_output=True, text=True,
                             env=self.env, input=input, timeout=timeout, check=False)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}):\n"
                                 f"{res.stdout}\n{res.stderr}")
        return res

    def items(self, kind: str, *selector: str) -> list[dict[str, Any]]:
        out = self.kubectl("get", kind, *selector, "-o", "json").stdout
        return list(json.loads(out)["items"])

    def get(self, kind: str, name: str) -> dict[str, Any]:
        res = self.kubectl("get", kind, name, "-o", "json", check=False)
        return dict(json.loads(res.stdout)) if res.returncode == 0 else {}

    def apply(self, obj: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj))

    def rollout_status(self, name: str, kind: str = "deployment") -> str:
        return self.kubectl("rollout", "status", f"{kind}/{name}", "--timeout=90s",
                            timeout=100).stdout

    def watch_pods(self, selector: str, out: Path) -> subprocess.Popen[bytes]:
        """``kubectl get pods -w`` of the selector into ``out``, one line per event:
        ``name|deletionTimestamp|Ready status`` (empty when unset); the caller stops it."""
        template = ('{.metadata.name}|{.metadata.deletionTimestamp}|'
                    '{.status.conditions[?(@.type=="Ready")].status}{"\\n"}')
        with out.open("wb") as sink:
            return subprocess.Popen(["kubectl", "get", "pods", "-l", selector, "-w",
                                     "-o", f"jsonpath={template}"], env=self.env,
                                    stdout=sink, stderr=subprocess.DEVNULL)

    def live_pods(self, selector: str) -> list[dict[str, Any]]:
        """Pods of the selector not being deleted."""
        return [p for p in self.items("pods", "-l", selector)
                if not p["metadata"].get("deletionTimestamp")]


def pod_template(app: str, image: str = IMAGE,
                 command: list[str] | None = None) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"terminationGracePeriodSeconds": 5, "containers": [{
                "name": "c", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": command or SLEEPER,
                "resources": {"requests": {"cpu": "10m"}}}]}}


def deployment(name: str, replicas: int, spread: bool = False) -> dict[str, Any]:
    template = pod_template(name)
    if spread:  # one per node while there are at most three
        template["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": name}}}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": template}}


def job(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    template = pod_template(name, command=command)
    template["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {**spec, "template": template}}


def daemonset(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": pod_template(name)}}


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    """Pods Ready two seconds after they start, so OrderedReady has something to wait for."""
    template = pod_template(name)
    template["spec"]["containers"][0]["readinessProbe"] = {
        "exec": {"command": ["true"]}, "initialDelaySeconds": 2, "periodSeconds": 1}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app": name}}, "template": template}}


def watched(out: Path) -> list[tuple[str, bool, bool]]:
    """What ``Lab.watch_pods`` wrote: (name, being deleted, Ready) per event, in order."""
    rows = []
    for line in out.read_text().splitlines():
        name, deleting, ready = [*line.split("|"), "", ""][:3]
        rows.append((name, bool(deleting), ready == "True"))
    return rows


NODES = ["node1", "node2", "node3"]


CRON = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
        "spec": {"schedule": "*/1 * * * *", "successfulJobsHistoryLimit": 3,
                 "jobTemplate": {"spec": {"template": {
                     "spec": {**pod_template("tick", command=["echo", "tick"])["spec"],
                              "restartPolicy": "Never"}}}}}}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    kubeconfig = tmp_path_factory.mktemp("workloads") / "kubeconfig"
    env = dict(os.environ, KUBECONFIG=str(kubeconfig))

    def down() -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYKUBELET, "lab", "down", "--name", LAB], env=env,
                              capture_output=True, text=True, timeout=300, check=False)

    down()
    up = subprocess.run([PYKUBELET, "lab", "up", "--nodes", "3", "--name", LAB], env=env,
                        capture_output=True, text=True, timeout=300, check=False)
    try:
        assert up.returncode == 0, f"lab up failed:\n{up.stdout}\n{up.stderr}"
        status = json.loads(subprocess.run(
            [PYKUBELET, "lab", "status", "--name", LAB, "-o", "json"], env=env,
            capture_output=True, text=True, timeout=60, check=True).stdout)
        lab = Lab(kubeconfig, status["registry"])
        lab.apply(CRON)  # fires at the next minute, while the other tests run
        yield lab
    finally:
        gone = down()
        assert gone.returncode == 0, gone.stderr


def test_deployment_rolls_out_scales_updates_and_undoes(lab: Lab) -> None:
    lab.apply(deployment("web", 3, spread=True))
    try:
        assert 'deployment "web" successfully rolled out' in lab.rollout_status("web")
        pods = lab.live_pods("app=web")
        assert sorted(p["spec"]["nodeName"] for p in pods) == ["node1", "node2", "node3"]
        first = lab.items("rs", "-l", "app=web")
        assert len(first) == 1
        old_rs = first[0]["metadata"]["name"]

        lab.kubectl("scale", "deployment/web", "--replicas=5")
        lab.rollout_status("web")
        wait_for(lambda: len(lab.live_pods("app=web")) == 5, 60, "5 pods")
        lab.kubectl("scale", "deployment/web", "--replicas=2")
        lab.rollout_status("web")
        wait_for(lambda: len(lab.live_pods("app=web")) == 2, 60, "2 pods")
        assert lab.get("rs", old_rs)["spec"]["replicas"] == 2

        # an update to the lab registry's image: a new ReplicaSet, the old one at 0
        new_image = f"{lab.registry}/library/busybox:latest"
        lab.kubectl("set", "image", "deployment/web", f"c={new_image}")
        lab.rollout_status("web")
        sets = {rs["metadata"]["name"]: rs for rs in lab.items("rs", "-l", "app=web")}
        assert len(sets) == 2
        new_rs = next(n for n in sets if n != old_rs)
        assert sets[old_rs]["spec"]["replicas"] == 0
        assert sets[new_rs]["spec"]["replicas"] == 2
        assert sets[new_rs]["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"] == "2"
        pods = wait_for(lambda: (p := lab.live_pods("app=web")) and len(p) == 2 and p,
                        60, "the old pods gone")
        assert {p["spec"]["containers"][0]["image"] for p in pods} == {new_image}
        assert {p["metadata"]["ownerReferences"][0]["name"] for p in pods} == {new_rs}

        # undone: the first ReplicaSet back at 2 (as revision 3), the second at 0
        lab.kubectl("rollout", "undo", "deployment/web")
        lab.rollout_status("web")
        sets = {rs["metadata"]["name"]: rs for rs in lab.items("rs", "-l", "app=web")}
        assert sets[old_rs]["spec"]["replicas"] == 2
        assert sets[new_rs]["spec"]["replicas"] == 0
        assert sets[old_rs]["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"] == "3"
        dep = lab.get("deployment", "web")
        assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE
        assert dep["status"]["updatedReplicas"] == dep["status"]["availableReplicas"] == 2
        history = lab.kubectl("rollout", "history", "deployment/web").stdout
        assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == [
            "2", "3"]
    finally:
        lab.kubectl("delete", "deployment", "web", "--ignore-not-found", check=False)


def test_orphan_delete_keeps_replicaset_and_pods_foreground_removes_all(lab: Lab) -> None:
    lab.apply(deployment("keep", 2))
    lab.apply(deployment("gone", 2))
    try:
        lab.rollout_status("keep")
        lab.rollout_status("gone")
        keep_pods = {p["metadata"]["name"] for p in lab.live_pods("app=keep")}
        lab.kubectl("delete", "deployment", "keep", "--cascade=orphan")
        # the ReplicaSet loses its owner reference (the collector's orphaning) and stays,
        # with its pods
        rs = wait_for(lambda: next((r for r in lab.items("rs", "-l", "app=keep")
                                    if not r["metadata"].get("ownerReferences")), None),
                      30, "the ReplicaSet orphaned")
        assert not lab.get("deployment", "keep")
        assert {p["metadata"]["name"] for p in lab.live_pods("app=keep")} == keep_pods
        assert rs["spec"]["replicas"] == 2

        # foreground: kubectl returns once the Deployment is gone, which is after its
        # ReplicaSet and the ReplicaSet's pods
        lab.kubectl("delete", "deployment", "gone", "--cascade=foreground", "--wait=true",
                    timeout=90)
        assert not lab.items("rs", "-l", "app=gone")
        assert not lab.items("pods", "-l", "app=gone")
    finally:
        lab.kubectl("delete", "deployment", "keep", "gone", "--ignore-not-found",
                    check=False)
        lab.kubectl("delete", "rs", "-l", "app in (keep,gone)", check=False)


def test_job_deleted_with_orphan_cascade_leaves_pods_that_can_be_deleted(lab: Lab) -> None:
    """The orphaned pod loses its owner reference and the Job's tracking finalizer (the Job
    controller's orphan-pod sync), so deleting it later does not hang."""
    lab.apply(job("long", SLEEPER))
    try:
        wait_for(lambda: lab.live_pods("job-name=long"), 60, "the Job's pod")
        lab.kubectl("delete", "job", "long", "--cascade=orphan")
        wait_for(lambda: (p := lab.live_pods("job-name=long")) and not p[0]["metadata"].get(
            "ownerReferences") and not p[0]["metadata"].get("finalizers"), 30,
            "the pod orphaned, without the tracking finalizer")
        lab.kubectl("delete", "pods", "-l", "job-name=long", "--wait=true", timeout=60)
        assert not lab.items("pods", "-l", "job-name=long")
    finally:
        lab.kubectl("delete", "job", "long", "--ignore-not-found", check=False)


def test_job_of_four_completions_two_at_a_time_completes(lab: Lab) -> None:
    lab.apply(job("four", ["sh", "-c", "sleep 1; echo done"], completions=4, parallelism=2))
    try:
        lab.kubectl("wait", "--for=condition=Complete", "job/four", "--timeout=90s",
                    timeout=100)
        status = lab.get("job", "four")["status"]
        assert status["succeeded"] == 4
        assert not status.get("failed")
        pods = lab.items("pods", "-l", "job-name=four")
        assert [p["status"]["phase"] for p in pods] == ["Succeeded"] * 4
        # never more than parallelism (2) running at once: when any container started,
        # at most one other had started and not yet finished (times are whole seconds)
        runs = [(c["state"]["terminated"]["startedAt"], c["state"]["terminated"]["finishedAt"])
                for p in pods for c in p["status"]["containerStatuses"]]
        assert all(sum(s <= start < f for s, f in runs) <= 2 for start, _ in runs), runs
        row = lab.kubectl("get", "job", "four").stdout.splitlines()[1].split()
        assert row[:3] == ["four", "Complete", "4/4"], row
    finally:
        lab.kubectl("delete", "job", "four", "--cascade=background", check=False)


def test_job_whose_pod_fails_ends_backoff_limit_exceeded(lab: Lab) -> None:
    lab.apply(job("fails", ["sh", "-c", "exit 1"], backoffLimit=1))
    try:
        lab.kubectl("wait", "--for=condition=Failed", "job/fails", "--timeout=90s",
                    timeout=100)
        status = lab.get("job", "fails")["status"]
        failed = next(c for c in status["conditions"] if c["type"] == "Failed")
        assert failed["status"] == "True"
        assert failed["reason"] == "BackoffLimitExceeded"
        assert failed["message"] == "Job has reached the specified backoff limit"
        assert status["failed"] == 2  # the first pod and one retry
        assert not status.get("active")
        pods = lab.items("pods", "-l", "job-name=fails")
        assert [p["status"]["phase"] for p in pods] == ["Failed"] * 2
        events = lab.kubectl("get", "events", "--field-selector",
                             "involvedObject.name=fails,reason=BackoffLimitExceeded").stdout
        assert "Job has reached the specified backoff limit" in events
    finally:
        lab.kubectl("delete", "job", "fails", "--cascade=background", check=False)


def test_job_pod_failure_policy_fail_job_ends_it_at_the_first_match(lab: Lab) -> None:
    """A FailJob rule on exit code 42: the first such pod fails the Job at once (reason
    PodFailurePolicy), however many retries backoffLimit would allow."""
    body = job("policy", ["sh", "-c", "exit 42"], backoffLimit=6)
    body["spec"]["podFailurePolicy"] = {"rules": [{"action": "FailJob", "onExitCodes": {
        "containerName": "c", "operator": "In", "values": [42]}}]}
    lab.apply(body)
    try:
        lab.kubectl("wait", "--for=condition=Failed", "job/policy", "--timeout=60s",
                    timeout=70)
        status = lab.get("job", "policy")["status"]
        failed = next(c for c in status["conditions"] if c["type"] == "Failed")
        [pod] = lab.items("pods", "-l", "job-name=policy")
        assert (failed["reason"], failed["message"]) == (
            "PodFailurePolicy", f"Container c for pod default/{pod['metadata']['name']} "
            "failed with exit code 42 matching FailJob rule at index 0")
        assert status["failed"] == 1
    finally:
        lab.kubectl("delete", "job", "policy", "--cascade=background", check=False)


def test_daemonset_runs_on_every_node_replaces_a_deleted_pod_and_rolls(lab: Lab) -> None:
    lab.apply(daemonset("every"))
    try:
        assert 'daemon set "every" successfully rolled out' in lab.rollout_status(
            "every", "daemonset")
        pods = lab.live_pods("app=every")
        assert sorted(p["spec"]["nodeName"] for p in pods) == NODES
        assert {p["status"]["phase"] for p in pods} == {"Running"}

        # a pod deleted by hand: the controller makes another on the same node
        [victim] = [p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == "node2"]
        lab.kubectl("delete", "pod", victim, "--wait=true", timeout=60)
        again = wait_for(lambda: [p for p in lab.live_pods("app=every")
                                  if p["spec"]["nodeName"] == "node2"
                                  and p["status"].get("phase") == "Running"],
                         60, "a new pod Running on node2")
        assert [p["metadata"]["name"] for p in again] != [victim]
        lab.rollout_status("every", "daemonset")
        assert sorted(p["spec"]["nodeName"] for p in lab.live_pods("app=every")) == NODES

        # a new image rolls every node's pod (maxUnavailable 1: one node at a time)
        before = {p["metadata"]["name"] for p in lab.live_pods("app=every")}
        new_image = f"{lab.registry}/library/busybox:latest"
        lab.kubectl("set", "image", "daemonset/every", f"c={new_image}")
        assert 'daemon set "every" successfully rolled out' in lab.rollout_status(
            "every", "daemonset")
        pods = wait_for(lambda: (p := lab.live_pods("app=every")) and len(p) == 3 and p,
                        60, "three pods")
        assert sorted(p["spec"]["nodeName"] for p in pods) == NODES
        assert {p["spec"]["containers"][0]["image"] for p in pods} == {new_image}
        assert not before & {p["metadata"]["name"] for p in pods}
        status = lab.get("daemonset", "every")["status"]
        assert status["updatedNumberScheduled"] == status["numberAvailable"] == 3
    finally:
        lab.kubectl("delete", "daemonset", "every", "--ignore-not-found", check=False)


def test_statefulset_starts_in_order_keeps_names_and_scales_down_in_reverse(
        lab: Lab, tmp_path: Path) -> None:
    """OrderedReady: db-1 is created only once db-0 is Ready (the watch sees db-0 Ready
    before it sees db-1 at all), and so on; scaling to 1 deletes db-2, and db-1 only once
    db-2 is gone."""
    seen = tmp_path / "pods.watch"
    watch = lab.watch_pods("app=db", seen)
    try:
        lab.apply(statefulset("db", 3))
        lab.rollout_status("db", "statefulset")
        pods = {p["metadata"]["name"]: p for p in lab.live_pods("app=db")}
        assert sorted(pods) == ["db-0", "db-1", "db-2"]
        rows = wait_for(lambda: (r := watched(seen)) and any(n == "db-2" and ready
                                                             for n, _, ready in r) and r,
                        30, "the watch to see db-2 Ready")
        for prev, nxt in (("db-0", "db-1"), ("db-1", "db-2")):
            ready = next(i for i, (n, _, r) in enumerate(rows) if n == prev and r)
            first = next(i for i, (n, _, _) in enumerate(rows) if n == nxt)
            assert ready < first, rows
            ready_at = next(c["lastTransitionTime"] for c in pods[prev]["status"]["conditions"]
                            if c["type"] == "Ready")
            assert ready_at <= pods[nxt]["metadata"]["creationTimestamp"]

        # stable identities: the pod's hostname is its name, in the service's subdomain
        for name, pod in pods.items():
            assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (name, "db")
        assert lab.kubectl("exec", "db-1", "--", "hostname").stdout.strip() == "db-1"

        mark = len(watched(seen))
        lab.kubectl("scale", "statefulset/db", "--replicas=1")
        wait_for(lambda: [p["metadata"]["name"] for p in lab.items("pods", "-l", "app=db")]
                 == ["db-0"], 60, "only db-0 left")
        rows = wait_for(lambda: (r := watched(seen)[mark:]) and any(
            n == "db-1" and deleting for n, deleting, _ in r) and r, 30,
            "the watch to see db-1 deleted")
        last_of_2 = max(i for i, (n, _, _) in enumerate(rows) if n == "db-2")  # DELETED
        first_deleting_1 = next(i for i, (n, d, _) in enumerate(rows) if n == "db-1" and d)
        assert last_of_2 < first_deleting_1, rows
        assert lab.get("statefulset", "db")["status"]["replicas"] == 1
    finally:
        watch.terminate()
        watch.wait(10)
        lab.kubectl("delete", "statefulset", "db", "--ignore-not-found", check=False)


def test_cronjob_fires_within_its_minute(lab: Lab) -> None:
    """The CronJob the fixture made: a Job named tick-<minutes since the epoch> owned by
    it, run to Complete, with lastScheduleTime and lastSuccessfulTime on the CronJob."""
    cron = lab.get("cronjob", "tick")
    created = cron["metadata"]["creationTimestamp"]
    jobs = wait_for(lambda: [j for j in lab.items("jobs")
                             if j["metadata"]["name"].startswith("tick-")],
                    75, "the CronJob's first Job")
    first = min(jobs, key=lambda j: j["metadata"]["name"])
    assert first["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert first["metadata"]["ownerReferences"][0]["controller"] is True
    minutes = int(first["metadata"]["name"].removeprefix("tick-"))
    scheduled = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(minutes * 60))
    assert scheduled > created  # the first minute boundary after creation
    lab.kubectl("wait", "--for=condition=Complete", f"job/{first['metadata']['name']}",
                "--timeout=60s", timeout=70)
    status = wait_for(lambda: (s := lab.get("cronjob", "tick").get("status", {}))
                      .get("lastSuccessfulTime") and s, 30, "lastSuccessfulTime")
    assert status["lastScheduleTime"] >= scheduled
    assert status["lastSuccessfulTime"] >= scheduled
    name = first["metadata"]["name"]
    assert lab.kubectl("logs", f"job/{name}").stdout.strip() == "tick"

    # a Job made from it by hand runs, and is no run of the CronJob's own: an UnexpectedJob
    # warning, never in its active list, so no SawCompletedJob either
    lab.kubectl("create", "job", "by-hand", "--from=cronjob/tick")
    lab.kubectl("wait", "--for=condition=Complete", "job/by-hand", "--timeout=60s",
                timeout=70)
    events = lab.kubectl("get", "events", "--field-selector", "involvedObject.name=tick",
                         "-o", "json").stdout
    said = [(e["reason"], e["message"]) for e in json.loads(events)["items"]]
    assert ("UnexpectedJob",
            "Saw a job that the controller did not create or forgot: by-hand") in said, said
    assert not [m for r, m in said if r == "SawCompletedJob" and "by-hand" in m], said
    lab.kubectl("delete", "cronjob", "tick")
    lab.kubectl("delete", "job", "by-hand", "--ignore-not-found")
