"""apps/v1 workloads through the unmodified kubectl against a real control plane process
(issue 19): ReplicaSets applied, listed with upstream's columns, scaled, explained; a bad
one refused with a 422 naming the field and nothing written."""

from __future__ import annotations

import json

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
