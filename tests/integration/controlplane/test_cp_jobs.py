"""batch/v1 Jobs with the real kubectl against a real control plane process: kubectl
create job, a Job run to Complete and one to Failed (pods on no node do not run: the test
moves them to Succeeded or Failed through pods/status, as a kubelet would), the Table
columns, kubectl explain, and a bad Job refused with nothing written."""

from __future__ import annotations

import json
from typing import Any

from cp_process import ControlPlaneProcess, wait_for

CP_BACKENDS = ("sqlite",)  # the controller is the point, not the store

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  completions: {completions}
  parallelism: {parallelism}
  backoffLimit: {backoff}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
        command: ["true"]
"""


def get_json(cp: ControlPlaneProcess, *args: str) -> Any:
    return json.loads(cp.kubectl("get", *args, "-o", "json").stdout)


def job_pods(cp: ControlPlaneProcess, ns: str, job: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get_json(cp, "pods", "-n", ns, "-l",
                                           f"batch.kubernetes.io/job-name={job}")["items"]
    return items


def finish(cp: ControlPlaneProcess, ns: str, pod: str, phase: str) -> None:
    """What a kubelet reports for a pod that ran to its end."""
    code = 0 if phase == "Succeeded" else 1
    status = {"status": {"phase": phase, "containerStatuses": [{
        "name": "work", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0
                                 else "Error",
                                 "startedAt": "2026-01-01T00:00:00Z",
                                 "finishedAt": "2026-01-01T00:00:01Z"}}}]}}
    cp.kubectl("patch", "pod", pod, "-n", ns, "--subresource=status", "--type=merge",
               "-p", json.dumps(status))


def conditions(cp: ControlPlaneProcess, ns: str, job: str) -> list[tuple[str, str, str]]:
    status = get_json(cp, "job", job, "-n", ns).get("status") or {}
    return [(c["type"], c["status"], c.get("reason", "")) for c in status.get("conditions") or []]


def test_kubectl_create_job_makes_its_pod(cp: ControlPlaneProcess, ns: str) -> None:
    out = cp.kubectl("create", "job", "hello", "-n", ns, "--image=busybox", "--", "echo", "hi")
    assert out.stdout.strip() == "job.batch/hello created"
    job = get_json(cp, "job", "hello", "-n", ns)
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    wait_for(lambda: len(job_pods(cp, ns, "hello")) == 1, what="the job's pod")
    pod = job_pods(cp, ns, "hello")[0]
    assert pod["metadata"]["generateName"] == "hello-"
    assert pod["metadata"]["ownerReferences"] == [{
        "apiVersion": "batch/v1", "kind": "Job", "name": "hello",
        "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert pod["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert pod["spec"]["containers"][0]["command"] == ["echo", "hi"]
    events = cp.kubectl("get", "events", "-n", ns, "--field-selector",
                        "involvedObject.kind=Job").stdout
    assert f"Created pod: {pod['metadata']['name']}" in events


def test_job_runs_to_complete(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=JOB.format(name="three", completions=3, parallelism=2, backoff=6))
    wait_for(lambda: len(job_pods(cp, ns, "three")) == 2, what="two pods (parallelism 2)")
    done: set[str] = set()
    while len(done) < 3:
        pods = [p for p in job_pods(cp, ns, "three")
                if p["metadata"]["name"] not in done]
        assert pods, "the job has no pod left to run"
        for p in pods[:3 - len(done)]:
            finish(cp, ns, p["metadata"]["name"], "Succeeded")
            done.add(p["metadata"]["name"])
        wait_for(lambda: len(job_pods(cp, ns, "three")) >= min(len(done) + 1, 3)
                 or len(done) == 3, what="a replacement pod")
    wait_for(lambda: ("Complete", "True", "CompletionsReached") in conditions(cp, ns, "three"),
             what="Complete")
    job = get_json(cp, "job", "three", "-n", ns)
    assert job["status"]["succeeded"] == 3
    assert job["status"].get("active", 0) == 0
    assert job["status"]["completionTime"]
    assert ("SuccessCriteriaMet", "True", "CompletionsReached") in conditions(cp, ns, "three")
    assert len(job_pods(cp, ns, "three")) == 3
    for p in job_pods(cp, ns, "three"):  # counted: no finalizer holds them any more
        assert "batch.kubernetes.io/job-tracking" not in p["metadata"].get("finalizers", [])
    row = cp.kubectl("get", "job", "three", "-n", ns, "--no-headers").stdout.split()
    assert row[:3] == ["three", "Complete", "3/3"]
    cp.kubectl("wait", "--for=condition=complete", "job/three", "-n", ns, "--timeout=5s")


def test_job_fails_with_backoff_limit_exceeded(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=JOB.format(name="doomed", completions=2, parallelism=2, backoff=0))
    wait_for(lambda: len(job_pods(cp, ns, "doomed")) == 2, what="two pods")
    first, second = (p["metadata"]["name"] for p in job_pods(cp, ns, "doomed"))
    finish(cp, ns, first, "Failed")
    wait_for(lambda: ("Failed", "True", "BackoffLimitExceeded") in conditions(cp, ns, "doomed")
             or ("FailureTarget", "True", "BackoffLimitExceeded")
             in conditions(cp, ns, "doomed"), what="FailureTarget")
    # the controller deleted the other pod (never scheduled: gone at once); the job is
    # Failed once it is gone
    left = cp.kubectl("get", "pod", second, "-n", ns, "-o", "json", check=False)
    if left.returncode == 0:
        assert json.loads(left.stdout)["metadata"].get("deletionTimestamp")
    wait_for(lambda: ("Failed", "True", "BackoffLimitExceeded") in conditions(cp, ns, "doomed"),
             what="Failed")
    status = get_json(cp, "job", "doomed", "-n", ns)["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "Job has reached the specified backoff limit"
    assert status["failed"] >= 1
    assert "completionTime" not in status
    row = cp.kubectl("get", "job", "doomed", "-n", ns, "--no-headers").stdout.split()
    assert row[:3] == ["doomed", "Failed", "0/2"]
    events = cp.kubectl("get", "events", "-n", ns, "--field-selector",
                        "involvedObject.name=doomed").stdout
    assert "BackoffLimitExceeded" in events


def test_get_jobs_wide_columns(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "job", "wide", "-n", ns, "--image=busybox", "--", "true")
    out = cp.kubectl("get", "jobs", "-n", ns, "-o", "wide").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE",
                              "CONTAINERS", "IMAGES", "SELECTOR"]
    uid = get_json(cp, "job", "wide", "-n", ns)["metadata"]["uid"]
    cells = out[1].split()
    assert cells[:3] == ["wide", "Running", "0/1"]
    assert cells[-3:] == ["wide", "busybox", f"batch.kubernetes.io/controller-uid={uid}"]


def test_kubectl_explain_job_spec(cp: ControlPlaneProcess) -> None:
    out = cp.kubectl("explain", "job.spec").stdout
    assert "GROUP:      batch" in out
    assert "backoffLimit\t<integer>" in out
    assert "completionMode\t<string>" in out


def test_bad_job_is_422_and_nothing_written(cp: ControlPlaneProcess, ns: str) -> None:
    res = cp.kubectl("apply", "-n", ns, "-f", "-", check=False,
                     input=JOB.format(name="bad", completions=-1, parallelism=1, backoff=6))
    assert res.returncode != 0
    assert 'The Job "bad" is invalid: spec.completions: Invalid value: -1: must be greater ' \
        "than or equal to 0" in res.stderr
    assert cp.kubectl("get", "job", "bad", "-n", ns, check=False).returncode != 0


def test_kubectl_create_cronjob_and_get_jobs_and_cronjobs_wide(cp: ControlPlaneProcess,
                                                                ns: str) -> None:
    out = cp.kubectl("create", "cronjob", "tick", "-n", ns, "--image=busybox",
                     "--schedule=*/5 * * * *", "--", "date")
    assert out.stdout.strip() == "cronjob.batch/tick created"
    cj = get_json(cp, "cronjob", "tick", "-n", ns)
    assert cj["spec"]["concurrencyPolicy"] == "Allow"
    template = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert template["containers"][0]["command"] == ["date"]
    assert template["restartPolicy"] == "OnFailure"
    cp.kubectl("create", "job", "once", "-n", ns, "--image=busybox", "--", "true")
    out = cp.kubectl("get", "jobs,cronjobs", "-n", ns, "-o", "wide").stdout
    blocks = [b.splitlines() for b in out.strip().split("\n\n")]
    assert blocks[0][0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE",
                                    "CONTAINERS", "IMAGES", "SELECTOR"]
    assert blocks[0][1].split()[:3] == ["job.batch/once", "Running", "0/1"]
    assert blocks[1][0].split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE",
                                    "LAST", "SCHEDULE", "AGE", "CONTAINERS", "IMAGES",
                                    "SELECTOR"]
    cells = blocks[1][1].split()
    assert cells[0] == "cronjob.batch/tick"
    assert cells[1:6] == ["*/5", "*", "*", "*", "*"]
    assert cells[6:10] == ["<none>", "False", "0", "<none>"]
    assert cells[-3:] == ["tick", "busybox", "<none>"]


def test_bad_schedule_is_422_naming_spec_schedule(cp: ControlPlaneProcess, ns: str) -> None:
    res = cp.kubectl("create", "cronjob", "bad", "-n", ns, "--image=busybox",
                     "--schedule=61 * * * *", check=False)
    assert res.returncode != 0
    assert ('CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "61 * * * *": '
            "end of range (61) above maximum (59): 61") in res.stderr
    assert cp.kubectl("get", "cronjob", "bad", "-n", ns, check=False).returncode != 0
