"""pykubectl against a real control plane process, next to the real kubectl on the same
objects: where kubectl's output is the contract (tables, ``-o name|json|yaml``, describe,
messages and error lines) the two must print the same bytes; elsewhere (``why``) pykubectl
is checked on its own. One control plane for the module; nothing here needs root, and no
request leaves loopback (logs are only read from pods no node runs)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cp_process import ControlPlaneProcess, FakeNode, free_port, wait_for

PYKUBECTL = str(Path(sys.executable).parent / "pykubectl")

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: {app}}}
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "3600"]
    resources: {{requests: {{cpu: 100m, memory: 64Mi}}, limits: {{memory: 128Mi}}}}
"""
TWO = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, annotations: {{note: two}}}}
spec:
  nodeSelector: {{zone: nowhere}}
  containers:
  - {{name: main, image: busybox, env: [{{name: A, value: "1"}}], ports: [{{containerPort: 80}}]}}
  - {{name: side, image: busybox, args: ["x"]}}
"""

CP_BACKENDS = ("sqlite",)  # a client face / the process's metrics: the store is not the point


def env_for(cp: ControlPlaneProcess, **extra: str) -> dict[str, str]:
    env = dict(os.environ, KUBECONFIG=str(cp.kubeconfig),
               KUBECACHEDIR=str(cp.root.parent / "kubectl-cache"))
    env.update(extra)
    return env


def pk(cp: ControlPlaneProcess, *args: str, input: str | None = None, check: bool = True,
       env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([PYKUBECTL, *args], input=input, capture_output=True, text=True,
                         env=env or env_for(cp), timeout=timeout)
    assert "Traceback" not in res.stderr, res.stderr
    if check and res.returncode != 0:
        raise AssertionError(f"pykubectl {' '.join(args)} failed ({res.returncode}):\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def same_as_kubectl(cp: ControlPlaneProcess, *args: str, input: str | None = None,
                    attempts: int = 5) -> subprocess.CompletedProcess[str]:
    """pykubectl and kubectl print the same stdout, stderr and exit status. Ages tick
    between the two runs, so a difference is tried again a few times before it counts."""
    for _ in range(attempts):
        mine = pk(cp, *args, input=input, check=False)
        theirs = cp.kubectl(*args, input=input, check=False)
        got = (mine.stdout, mine.stderr.replace("pykubectl", "kubectl"), mine.returncode)
        want = (theirs.stdout, theirs.stderr, theirs.returncode)
        if got == want:
            return mine
        time.sleep(0.2)
    assert got == want, f"pykubectl {' '.join(args)} differs from kubectl"
    return mine


@pytest.fixture(scope="module")
def nodes(cp: ControlPlaneProcess) -> Iterator[list[FakeNode]]:
    made = [FakeNode(cp, "pk-n1", labels={"zone": "a",
                                          "node-role.kubernetes.io/control-plane": ""}),
            FakeNode(cp, "pk-n2", cpu="2", memory="2Gi"),
            # drain tests only: nothing is scheduled here by accident
            FakeNode(cp, "pk-drain", taints=[{"key": "pk", "value": "drain",
                                               "effect": "NoSchedule"}])]
    yield made
    for n in made:
        n.delete()


def create(cp: ControlPlaneProcess, ns: str, text: str) -> None:
    cp.kubectl("create", "-n", ns, "-f", "-", input=text)


def bound(cp: ControlPlaneProcess, ns: str, *names: str) -> None:
    def all_bound() -> bool:
        out = cp.kubectl("get", "pods", "-n", ns, "-o", "json").stdout
        got = {p["metadata"]["name"]: p["spec"].get("nodeName")
               for p in json.loads(out)["items"]}
        return all(got.get(n) for n in names)
    wait_for(all_bound, what=f"pods {names} bound")


# ---------------------------------------------------------------------------- get


def test_get_tables_match_kubectl(cp: ControlPlaneProcess, ns: str,
                                  nodes: list[FakeNode]) -> None:
    for i in (1, 2):
        create(cp, ns, POD.format(name=f"web-{i}", app="web"))
    create(cp, ns, POD.format(name="db", app="db"))
    create(cp, ns, TWO.format(name="stuck"))
    cp.kubectl("create", "configmap", "cfg", "-n", ns, "--from-literal=a=1")
    bound(cp, ns, "web-1", "web-2", "db")
    empty = f"{ns}-empty"
    cp.kubectl("create", "namespace", empty)
    try:
        for args in (
            ["get", "pods", "-n", ns],
            ["get", "po", "-n", ns, "-o", "wide"],
            ["get", "pods", "-n", ns, "-l", "app=web"],
            ["get", "pods", "-n", ns, "-l", "app in (db,web)", "--show-labels"],
            ["get", "pods", "-n", ns, "-L", "app"],
            ["get", "pods", "-n", ns, "--field-selector", "spec.nodeName="],
            ["get", "pods", "-n", ns, "--no-headers"],
            ["get", "pods,cm", "-n", ns],
            ["get", "pod/db", "configmap/cfg", "node/pk-n1", "-n", ns],
            ["get", "pod", "web-1", "web-2", "-n", ns],
            ["get", "nodes"],
            ["get", "no", "-o", "wide", "-l", "zone=a"],
            ["get", "ns", ns],
            ["get", "pc"],
            ["get", "events", "-n", ns, "--field-selector", "reason=FailedScheduling"],
            ["get", "pods", "-n", empty],
            ["get", "pdb,pods", "-n", empty],
            ["get", "pods", "-A", "--field-selector", f"metadata.namespace={ns}"],
            ["get", "pod", "nope", "-n", ns],
            ["get", "pod", "web-1", "nope", "-n", ns],
            ["get", "pod", "nope", "-n", ns, "--ignore-not-found"],
            ["get", "widgets"],
            ["get", "pods", "-n", ns, "--field-selector", "spec.bogus=x"],
            ["get", "pods", "-n", ns, "-l", "app=="],
        ):
            same_as_kubectl(cp, *args)
    finally:
        cp.kubectl("delete", "namespace", empty, "--wait=false")


def test_get_objects_match_kubectl(cp: ControlPlaneProcess, ns: str,
                                   nodes: list[FakeNode]) -> None:
    create(cp, ns, POD.format(name="one", app="x"))
    create(cp, ns, TWO.format(name="two"))
    bound(cp, ns, "one")
    for args in (
        ["get", "pods", "-n", ns, "-o", "json"],
        ["get", "pod", "one", "-n", ns, "-o", "json"],
        ["get", "pod/two", "-n", ns, "-o", "yaml"],
        ["get", "pods", "-n", ns, "-o", "yaml"],
        ["get", "pods,nodes", "-n", ns, "-o", "name"],
        ["get", "node", "pk-n1", "-o", "yaml"],
        ["get", "pod", "one", "nope", "-n", ns, "-o", "name"],
        ["get", "pod", "nope", "-n", ns, "-o", "json"],
    ):
        same_as_kubectl(cp, *args)
    bad = pk(cp, "get", "pods", "-n", ns, "-o", "jsonpath={.items}", check=False)
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: unable to match a printer suitable for the output "
                                 'format "jsonpath={.items}"')


def _rows(out: str) -> list[list[str]]:
    """Watch output without the AGE cells (the two clients start at different moments)."""
    return [[c for c in line.split() if not re.fullmatch(r"(\d+[smhd])+|<unknown>", c)]
            for line in out.splitlines()]


def test_get_watch_prints_as_kubectl(cp: ControlPlaneProcess, ns: str,
                                     nodes: list[FakeNode]) -> None:
    create(cp, ns, POD.format(name="w1", app="w"))
    bound(cp, ns, "w1")  # both watchers start from the same state
    env = env_for(cp)
    procs = {
        (tool, mode): subprocess.Popen(
            [tool, "get", *target, "-n", ns, "-w"], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env)
        for tool in (PYKUBECTL, "kubectl")
        for mode, target in (("list", ["pods"]), ("one", ["pod", "w1"]),
                             ("name", ["pods", "-o", "name"]))
    }
    try:
        time.sleep(2.0)
        cp.kubectl("label", "pod", "w1", "-n", ns, "changed=yes")
        create(cp, ns, POD.format(name="a-longer-name", app="w"))
        cp.kubectl("delete", "pod", "a-longer-name", "-n", ns, "--force", "--grace-period=0")
        time.sleep(2.0)
    finally:
        for p in procs.values():
            p.terminate()
    outs = {k: p.communicate(timeout=10) for k, p in procs.items()}
    for mode in ("list", "one", "name"):
        mine, _ = outs[(PYKUBECTL, mode)]
        theirs, _ = outs[("kubectl", mode)]
        assert _rows(mine) == _rows(theirs), mode
    lines = outs[(PYKUBECTL, "list")][0].splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [line.split()[0] for line in lines[1:3]] == ["w1", "w1"]  # listed, then labelled
    assert "a-longer-name" in lines[3]
    assert len(outs[(PYKUBECTL, "one")][0].splitlines()) == 3  # row, label change, header


# ---------------------------------------------------------------------------- apply/create


def _api_access(obj: Any) -> Any:
    """``obj`` with the random suffix of ServiceAccount admission's kube-api-access-XXXXX
    volume replaced, so two pods made alike compare equal."""
    return json.loads(re.sub(r"kube-api-access-[a-z0-9]{5}", "kube-api-access-XXXXX",
                             json.dumps(obj)))


def _comparable(obj: dict, ns: str) -> dict:
    obj = _api_access(obj)
    meta = obj["metadata"]
    for k in ("uid", "resourceVersion", "creationTimestamp", "namespace", "managedFields"):
        meta.pop(k, None)
    ann = meta.get("annotations") or {}
    key = "kubectl.kubernetes.io/last-applied-configuration"
    if key in ann:
        ann[key] = ann[key].replace(f'"namespace":"{ns}"', '"namespace":"NS"')
    obj.pop("status", None)
    obj["spec"].pop("nodeName", None)
    return obj


def test_server_side_apply_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    """apply --server-side: created and updated as an apply patch under manager kubectl,
    another manager's conflict with kubectl's advice, --force-conflicts, the flag errors;
    the same bytes as kubectl's, each in its own namespace."""
    other = f"{ns}-k"
    cp.kubectl("create", "namespace", other)
    cm = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ssa, labels: {labels}}}\n"
          "data: {{k: '{value}'}}\n")

    def same(text: str, namespace: str) -> str:
        """What differs between two objects alike: namespace, uid, version, time."""
        text = text.replace(namespace, "NS")
        return re.sub(r'(uid|resourceVersion|creationTimestamp): "?[^"\n]*"?', r"\1: X", text)

    def both(*args: str, input: str | None = None) -> str:
        mine = pk(cp, *args, "-n", ns, input=input, check=False)
        theirs = cp.kubectl(*args, "-n", other, input=input, check=False)
        assert (same(mine.stdout, ns), same(mine.stderr, ns), mine.returncode) == (
            same(theirs.stdout, other), same(theirs.stderr, other), theirs.returncode), args
        return mine.stdout + mine.stderr

    try:
        first = cm.format(labels="{a: x, b: w}", value="1")
        assert both("apply", "--server-side", "-f", "-", input=first) == (
            "configmap/ssa serverside-applied\n")
        out = both("apply", "--server-side", "-f", "-",
                   input=cm.format(labels="{a: x}", value="1"))
        assert out == "configmap/ssa serverside-applied\n"
        got = json.loads(cp.kubectl("get", "cm", "ssa", "-n", ns, "-o", "json",
                                    "--show-managed-fields").stdout)
        assert got["metadata"]["labels"] == {"a": "x"}  # the label the manifest dropped
        assert [(e["manager"], e["operation"]) for e in got["metadata"]["managedFields"]] == [
            ("kubectl", "Apply")]
        out = both("apply", "--server-side", "--field-manager=other", "-f", "-",
                   input=cm.format(labels="{a: x}", value="2"))
        assert out.startswith('error: Apply failed with 1 conflict: conflict with "kubectl": '
                              ".data.k\nPlease review the fields above"), out
        both("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-o",
             "yaml", "-f", "-", input=cm.format(labels="{a: x}", value="2"))
        assert json.loads(cp.kubectl("get", "cm", "ssa", "-n", ns, "-o", "json").stdout)[
            "data"] == {"k": "2"}
        both("apply", "--server-side", "--dry-run=server", "-f", "-",
             input=cm.format(labels="{a: z}", value="2"))
        both("apply", "--server-side", "--dry-run=client", "-f", "-", input=first)
        both("apply", "--force-conflicts", "-f", "-", input=first)
        both("apply", "--server-side", "-f", "-", input=first.replace("'{value}'", "3").replace(
            "ConfigMap", "Pod"))
    finally:
        cp.kubectl("delete", "namespace", other, "--wait=false", check=False)


def test_apply_and_create_as_kubectl(cp: ControlPlaneProcess, ns: str,
                                     tmp_path: Path) -> None:
    other = f"{ns}-k"
    cp.kubectl("create", "namespace", other)
    manifests = tmp_path / "m"
    manifests.mkdir()
    (manifests / "a.yaml").write_text(POD.format(name="ap", app="v1") + "---\n"
                                      + TWO.format(name="ap2"))
    (manifests / "b.json").write_text(json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
        "data": {"k": "v"}}))
    try:
        def both(*args: str, input: str | None = None) -> str:
            mine = pk(cp, *args, "-n", ns, input=input, check=False)
            theirs = cp.kubectl(*args, "-n", other, input=input, check=False)
            assert (mine.stdout, mine.stderr.replace(ns, "NS"), mine.returncode) == (
                theirs.stdout, theirs.stderr.replace(other, "NS"), theirs.returncode), args
            return mine.stdout

        assert both("apply", "-f", str(manifests)) == (
            "pod/ap created\npod/ap2 created\nconfigmap/cm created\n")
        assert both("apply", "-f", str(manifests)) == (
            "pod/ap unchanged\npod/ap2 unchanged\nconfigmap/cm unchanged\n")
        changed = (POD.format(name="ap", app="v2").replace("busybox", "busybox:1.36")
                   + "---\n" + TWO.format(name="ap2").replace("note: two", "other: x"))
        (manifests / "a.yaml").write_text(changed)
        (manifests / "b.json").write_text(json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
            "data": {"k2": "v2"}}))
        assert both("apply", "-f", str(manifests)) == (
            "pod/ap configured\npod/ap2 configured\nconfigmap/cm configured\n")
        for kind, name in (("pod", "ap"), ("pod", "ap2"), ("configmap", "cm")):
            mine = json.loads(cp.kubectl("get", kind, name, "-n", ns, "-o", "json").stdout)
            theirs = json.loads(cp.kubectl("get", kind, name, "-n", other, "-o",
                                           "json").stdout)
            if kind == "configmap":
                mine["spec"] = theirs["spec"] = {}
            assert _comparable(mine, ns) == _comparable(theirs, other)
        ap = json.loads(cp.kubectl("get", "pod", "ap", "-n", ns, "-o", "json").stdout)
        assert ap["spec"]["containers"][0]["command"] == ["sleep", "3600"]  # merged, not replaced
        cm = json.loads(cp.kubectl("get", "cm", "cm", "-n", ns, "-o", "json").stdout)
        assert cm["data"] == {"k2": "v2"}  # the key the last apply had is gone

        # stdin, create, and the errors kubectl prints for them
        both("create", "-f", "-", input=POD.format(name="ap", app="v1"))
        both("create", "-f", "-", input=POD.format(name="Bad_Name", app="v1"))
        both("create", "-f", "-", input=POD.format(name="uf", app="v").replace("image:",
                                                                                "imagee:"))
        both("apply", "-f", "-", input=POD.format(name="ap", app="v1").replace(
            "busybox", "busybox:9").replace("sleep", "sh"))
        both("create", "-f", str(tmp_path / "missing.yaml"))
        both("apply", "-f", "-", input="")
        mine = pk(cp, "create", "-n", ns, "-f", "-", check=False,
                  input=POD.format(name="made", app="x") + "---\n" + POD.format(name="ap",
                                                                                 app="x"))
        assert mine.stdout == "pod/made created\n"
        assert mine.stderr == ('Error from server (AlreadyExists): error when creating "STDIN": '
                               'pods "ap" already exists\n')
        assert mine.returncode == 1
        wrong = pk(cp, "apply", "-n", ns, "-f", "-", check=False,
                   input=POD.format(name="z", app="x").replace("name: z",
                                                               "name: z\n  namespace: other"))
        assert wrong.stderr.startswith('error: the namespace from the provided object "other" '
                                       f'does not match the namespace "{ns}"')
        bad_yaml = pk(cp, "apply", "-n", ns, "-f", "-", check=False, input="a: [\n")
        assert bad_yaml.returncode == 1
        assert bad_yaml.stderr.startswith(
            "error: error parsing STDIN:")
        # an object created without apply gets the annotation on its first apply
        create(cp, ns, POD.format(name="plain", app="x"))
        first = pk(cp, "apply", "-n", ns, "-f", "-", input=POD.format(name="plain", app="y"))
        assert first.stdout == "pod/plain configured\n"
        assert first.stderr.startswith("Warning: resource pods/plain is missing the "
                                       "kubectl.kubernetes.io/last-applied-configuration")
    finally:
        cp.kubectl("delete", "namespace", other, "--wait=false")


def test_run_creates_kubectls_pod(cp: ControlPlaneProcess, ns: str) -> None:
    args = ["--image=busybox", "--restart=Never", "--labels=a=b,c=d", "--env=A=1",
            "--env=B=2", "--port=80", "--", "sleep", "10"]
    assert pk(cp, "run", "r1", "-n", ns, *args).stdout == "pod/r1 created\n"
    cp.kubectl("run", "r2", "-n", ns, *args)
    mine = json.loads(cp.kubectl("get", "pod", "r1", "-n", ns, "-o", "json").stdout)
    theirs = json.loads(cp.kubectl("get", "pod", "r2", "-n", ns, "-o", "json").stdout)
    theirs["spec"]["containers"][0]["name"] = "r1"
    assert mine["metadata"]["labels"] == theirs["metadata"]["labels"] == {"a": "b", "c": "d"}
    assert _api_access(mine["spec"]["containers"]) == _api_access(theirs["spec"]["containers"])
    assert mine["spec"]["restartPolicy"] == "Never"
    cmd = json.loads(pk(cp, "run", "r3", "-n", ns, "--image=busybox", "--command",
                        "--dry-run=client", "-o", "json", "--", "sh", "-c", "true").stdout)
    assert cmd["spec"]["containers"][0]["command"] == ["sh", "-c", "true"]
    assert cmd["metadata"]["labels"] == {"run": "r3"}
    for bad in (["r4"], ["r4", "--image=b", "--restart=Bad"], ["r4", "--image=b", "--env=FOO"],
                ["r4", "--image=b", "--labels=bad"], ["--image=b"], ["r1", "--image=b"]):
        mine_r = pk(cp, "run", *bad, "-n", ns, check=False)
        theirs_r = cp.kubectl("run", *bad, "-n", ns, check=False)
        assert mine_r.returncode == theirs_r.returncode == 1
        # kubectl adds "See 'kubectl run -h' for help" lines and klog noise: the first
        # error line is the contract
        their_line = next(x for x in theirs_r.stderr.splitlines()
                          if x.startswith(("error:", "Error from server")) or "failed" in x)
        assert mine_r.stderr.count("\n") == 1
        if "required flag" in their_line:
            assert mine_r.stderr.strip() == 'error: required flag(s) "image" not set'
        else:
            assert mine_r.stderr.strip() == their_line


# ---------------------------------------------------------------------------- describe, logs


def test_describe_matches_kubectl(cp: ControlPlaneProcess, ns: str,
                                  nodes: list[FakeNode]) -> None:
    create(cp, ns, POD.format(name="d1", app="d"))
    create(cp, ns, TWO.format(name="d2"))
    bound(cp, ns, "d1")
    wait_for(lambda: "FailedScheduling" in cp.kubectl("get", "events", "-n", ns).stdout,
             what="FailedScheduling for d2")
    for args in (["describe", "pod", "d1", "-n", ns], ["describe", "pod/d2", "-n", ns],
                 ["describe", "pods", "-n", ns, "-l", "app=d"],
                 ["describe", "node", "pk-n1"], ["describe", "no", "pk-n2", "pk-drain"],
                 ["describe", "pod", "nope", "-n", ns]):
        same_as_kubectl(cp, *args)
    text = pk(cp, "describe", "pod", "d2", "-n", ns).stdout
    assert "Warning  FailedScheduling" in text
    assert re.search(r"Node-Selectors: +zone=nowhere\n", text), text


def test_logs_choose_containers_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    # pods no node runs: the API answers without asking a node, so nothing leaves loopback
    create(cp, ns, TWO.format(name="lg"))
    create(cp, ns, POD.format(name="solo", app="s").replace(
        "spec:\n", "spec:\n  nodeSelector: {zone: nowhere}\n"))
    for args in (["logs", "lg", "-n", ns], ["logs", "pod/lg", "-c", "side", "-n", ns],
                 ["logs", "lg", "-c", "nope", "-n", ns], ["logs", "nope", "-n", ns],
                 ["logs", "solo", "-n", ns, "--tail=5", "--timestamps"],
                 ["logs", "lg", "side", "-n", ns]):
        same_as_kubectl(cp, *args)
    noted = pk(cp, "logs", "lg", "-n", ns)
    assert noted.stderr == 'Defaulted container "main" out of: main, side\n'
    assert noted.stdout == ""


# ---------------------------------------------------------------------------- delete, wait


def test_delete_as_kubectl(cp: ControlPlaneProcess, ns: str, nodes: list[FakeNode],
                           tmp_path: Path) -> None:
    other = f"{ns}-k"
    cp.kubectl("create", "namespace", other)
    try:
        for n in (ns, other):
            for name in ("g1", "g2", "g3"):
                create(cp, n, POD.format(name=name, app="g"))
            create(cp, n, TWO.format(name="u1"))
            bound(cp, n, "g1", "g2", "g3")

        def both(*args: str) -> str:
            mine = pk(cp, *args, "-n", ns, check=False)
            theirs = cp.kubectl(*args, "-n", other, check=False)
            assert (mine.stdout, mine.stderr, mine.returncode) == (
                theirs.stdout, theirs.stderr, theirs.returncode), args
            return mine.stdout

        assert both("delete", "pod", "g1", "--grace-period=30", "--wait=false") == (
            'pod "g1" deleted\n')
        row = cp.kubectl("get", "pod", "g1", "-n", ns).stdout.splitlines()[1].split()
        assert row[2] == "Terminating"
        assert both("delete", "pod", "g1", "--force", "--grace-period=0") == (
            'pod "g1" force deleted\n')
        both("delete", "pod", "g2", "--grace-period=5", "--force")
        both("delete", "pod", "nope")
        both("delete", "pod", "nope", "g2", "--ignore-not-found", "--now", "--wait=false")
        both("delete", "pods", "-l", "app=g", "--force", "--grace-period=0", "-o", "name")
        both("delete", "pods", "-l", "app=none")
        both("delete", "pod")
        t0 = time.monotonic()
        assert both("delete", "pod", "u1") == 'pod "u1" deleted\n'  # unbound: gone at once
        assert time.monotonic() - t0 < 10
        f = tmp_path / "cm.yaml"
        f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fcm}\n")
        cp.kubectl("create", "-n", ns, "-f", str(f))
        cp.kubectl("create", "-n", other, "-f", str(f))
        assert both("delete", "-f", str(f)) == 'configmap "fcm" deleted\n'
    finally:
        cp.kubectl("delete", "namespace", other, "--wait=false")


def test_wait_as_kubectl(cp: ControlPlaneProcess, ns: str, nodes: list[FakeNode]) -> None:
    create(cp, ns, POD.format(name="wt", app="w"))
    for args in (["wait", "--for=condition=PodScheduled", "pod/wt", "--timeout=20s"],
                 ["wait", "--for=condition=Ready", "pod/wt", "--timeout=1s"],
                 ["wait", "--for=condition=Ready", "pod/wt", "--timeout=0"],
                 ["wait", "--for=condition=Ready", "pod/missing"],
                 ["wait", "--for=delete", "pod/missing"],
                 ["wait", "--for=bogus", "pod/wt"],
                 ["wait", "--for=condition=Ready", "pods", "-l", "app=none"]):
        same_as_kubectl(cp, *args, "-n", ns)
    # a condition that becomes true while waiting ends the wait at once
    api = cp.kubectl("get", "pod", "wt", "-n", ns, "-o", "json").stdout
    pod = json.loads(api)

    def make_ready() -> None:
        time.sleep(1.0)
        pod["status"]["conditions"].append({"type": "Ready", "status": "True"})
        _status_update(cp, ns, pod)

    threading.Thread(target=make_ready, daemon=True).start()
    t0 = time.monotonic()
    out = pk(cp, "wait", "--for=condition=Ready", "pod/wt", "-n", ns, "--timeout=30s")
    assert out.stdout == "pod/wt condition met\n"
    assert time.monotonic() - t0 < 15
    # and --for=delete returns once the object is gone
    threading.Thread(target=lambda: (time.sleep(1.0), cp.kubectl(
        "delete", "pod", "wt", "-n", ns, "--force", "--grace-period=0")), daemon=True).start()
    gone = pk(cp, "wait", "--for=delete", "pod/wt", "-n", ns, "--timeout=30s")
    assert gone.stdout == "pod/wt condition met\n"


def _status_update(cp: ControlPlaneProcess, ns: str, pod: dict) -> None:
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(str(cp.kubeconfig)))
    api.replace_namespaced_pod_status(pod["metadata"]["name"], ns, pod)


# ---------------------------------------------------------------------------- nodes


def test_cordon_uncordon_as_kubectl(cp: ControlPlaneProcess, nodes: list[FakeNode]) -> None:
    for tool in ("pk", "kubectl"):
        run = (lambda *a: pk(cp, *a, check=False)) if tool == "pk" else (
            lambda *a: cp.kubectl(*a, check=False))
        assert run("cordon", "pk-n2").stdout == "node/pk-n2 cordoned\n"
        assert run("cordon", "pk-n2").stdout == "node/pk-n2 already cordoned\n"
        row = cp.kubectl("get", "node", "pk-n2").stdout.splitlines()[1].split()
        assert row[1] == "Ready,SchedulingDisabled"
        assert run("uncordon", "pk-n2").stdout == "node/pk-n2 uncordoned\n"
        assert run("uncordon", "pk-n2").stdout == "node/pk-n2 already uncordoned\n"
    same_as_kubectl(cp, "cordon", "nope")
    same_as_kubectl(cp, "uncordon", "-l", "zone=a")
    same_as_kubectl(cp, "drain", "nope")


def _pod_on(name: str, node: str, extra: str = "") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: dr}}}}\n"
            f"spec:\n  nodeName: {node}\n  containers: [{{name: c, image: busybox}}]\n{extra}")


def test_drain_refuses_what_kubectl_refuses(cp: ControlPlaneProcess, ns: str,
                                            nodes: list[FakeNode]) -> None:
    # one refusal at a time: kubectl lists several in Go's random map order
    create(cp, ns, _pod_on("bare", "pk-drain"))
    try:
        for force, pod in (([], ""), (["--force"], "scratch")):
            if pod:
                create(cp, ns, _pod_on(pod, "pk-drain",
                                       "  volumes: [{name: v, emptyDir: {}}]\n"))
            mine = pk(cp, "drain", "pk-drain", *force, check=False)
            cp.kubectl("uncordon", "pk-drain")
            theirs = cp.kubectl("drain", "pk-drain", *force, check=False)
            cp.kubectl("uncordon", "pk-drain")
            assert (mine.stdout, mine.stderr, mine.returncode) == (
                theirs.stdout, theirs.stderr, theirs.returncode)
            assert mine.returncode == 1
            assert mine.stderr.splitlines()[-1] == (
                f"cannot delete Pods with local storage (use --delete-emptydir-data to "
                f"override): {ns}/scratch" if pod else
                "cannot delete cannot delete Pods that declare no controller (use --force to "
                f"override): {ns}/bare")
        out = pk(cp, "drain", "pk-drain", "--force", "--delete-emptydir-data",
                 "--grace-period=0")
        lines = out.stdout.splitlines()
        assert lines[0] == "node/pk-drain cordoned"
        assert sorted(lines[1:-1]) == sorted([f"evicting pod {ns}/bare",
                                              f"evicting pod {ns}/scratch",
                                              "pod/bare evicted", "pod/scratch evicted"])
        assert lines[-1] == "node/pk-drain drained"
        assert out.stderr == (f"Warning: deleting Pods that declare no controller: {ns}/bare, "
                              f"{ns}/scratch\n")
        assert "No resources found" in cp.kubectl("get", "pods", "-n", ns).stderr
    finally:
        cp.kubectl("uncordon", "pk-drain")


def test_drain_retries_while_a_budget_forbids(cp: ControlPlaneProcess, ns: str,
                                              nodes: list[FakeNode]) -> None:
    create(cp, ns, _pod_on("guarded", "pk-drain"))
    pod = json.loads(cp.kubectl("get", "pod", "guarded", "-n", ns, "-o", "json").stdout)
    pod["status"]["phase"] = "Running"  # a running pod is what a budget protects
    _status_update(cp, ns, pod)
    create(cp, ns, "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep}\n"
                   "spec: {minAvailable: 1, selector: {matchLabels: {app: dr}}}\n")
    wait_for(lambda: cp.kubectl("get", "pdb", "keep", "-n", ns, "-o",
                                       "jsonpath={.status.disruptionsAllowed}").stdout == "0",
             what="the budget's status")
    try:
        late = pk(cp, "drain", "pk-drain", "--force", "--grace-period=0", "--timeout=2s",
                  check=False)
        assert late.returncode == 1
        assert (f'error when evicting pods/"guarded" -n "{ns}" (will retry after 5s): Cannot '
                "evict pod as it would violate the pod's disruption budget.") in late.stderr
        assert f'error when evicting pods/"guarded" -n "{ns}": global timeout reached: 2s' in (
            late.stderr)
        threading.Thread(target=lambda: (time.sleep(2.0), cp.kubectl(
            "delete", "pdb", "keep", "-n", ns)), daemon=True).start()
        t0 = time.monotonic()
        out = pk(cp, "drain", "pk-drain", "--force", "--grace-period=0")
        assert time.monotonic() - t0 >= 4.5  # one 429, then the retry after 5 s
        assert out.stdout.splitlines()[-2:] == ["pod/guarded evicted", "node/pk-drain drained"]
        assert out.stdout.count(f"evicting pod {ns}/guarded") == 2
        assert "will retry after 5s" in out.stderr
    finally:
        cp.kubectl("uncordon", "pk-drain")


# ---------------------------------------------------------------------------- the rest


def test_version_and_api_resources(cp: ControlPlaneProcess) -> None:
    for args in (["api-resources"], ["api-resources", "-o", "wide"],
                 ["api-resources", "-o", "name"], ["api-resources", "--namespaced=false"],
                 ["api-resources", "--api-group=policy"], ["api-resources", "--verbs=watch"]):
        same_as_kubectl(cp, *args)
    lines = pk(cp, "version").stdout.splitlines()
    assert lines[0].startswith("Client Version: v")
    assert lines[0].endswith("+pykubectl")
    assert lines[1] == "Server Version: " + json.loads(
        cp.kubectl("get", "--raw", "/version").stdout)["gitVersion"]
    both = json.loads(pk(cp, "version", "-o", "json").stdout)
    assert both["serverVersion"]["major"] == "1"
    assert "serverVersion" not in json.loads(pk(cp, "version", "--client", "-o",
                                                "json").stdout)


def test_why_explains_pending_and_placed_pods(cp: ControlPlaneProcess, ns: str,
                                              nodes: list[FakeNode]) -> None:
    create(cp, ns, TWO.format(name="lost"))
    create(cp, ns, POD.format(name="placed", app="p"))
    bound(cp, ns, "placed")
    wait_for(lambda: "FailedScheduling" in cp.kubectl("get", "events", "-n", ns).stdout,
             what="FailedScheduling")
    served = cp.kubectl("get", "--raw",
                        f"/api/v1/namespaces/{ns}/pods/lost/scheduling", check=False)
    lost = pk(cp, "why", "lost", "-n", ns).stdout
    placed = pk(cp, "why", "pod/placed", "-n", ns).stdout
    if served.returncode == 0:  # the scheduler keeps decisions: the full explanation
        assert lost.startswith(f"Pod {ns}/lost is Pending: no node fits it.\n")
        rows = {line.split()[0]: line for line in lost.splitlines()
                if line.startswith("pk-")}
        assert set(rows) == {"pk-n1", "pk-n2", "pk-drain"}
        assert "NodeAffinity" in rows["pk-n1"]
        assert "rejected" in rows["pk-n1"]
        assert "TaintToleration" in rows["pk-drain"]
        node = cp.kubectl("get", "pod", "placed", "-n", ns, "-o",
                          "jsonpath={.spec.nodeName}").stdout
        assert placed.startswith(f"Pod {ns}/placed was scheduled to {node}.")
        assert "SCORES" in placed
        assert f"{node} (chosen)" in placed
        decision = json.loads(pk(cp, "why", "lost", "-n", ns, "-o", "json").stdout)
        assert decision["kind"] == "PodSchedulingDecision"
    else:  # no decision kept: the pod's own condition is what there is
        assert lost.startswith(f"Pod {ns}/lost is Pending and the scheduler has recorded no "
                               "decision")
        assert "didn't match Pod's node affinity/selector" in lost
        assert placed.startswith(f"Pod {ns}/placed is on node pk-n")
    missing = pk(cp, "why", "nope", "-n", ns, check=False)
    assert missing.stderr == 'Error from server (NotFound): pods "nope" not found\n'
    assert pk(cp, "why", "node/pk-n1", check=False).stderr == (
        "error: why explains pods, not node\n")


# ---------------------------------------------------------------------------- habits


def test_kubeconfig_habits(cp: ControlPlaneProcess, ns: str, tmp_path: Path) -> None:
    cfg = yaml.safe_load(cp.kubeconfig.read_text())
    # a second file that adds a context with its own namespace, merged through $KUBECONFIG
    extra = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
             "contexts": [{"name": "team", "context": {
                 "cluster": cfg["contexts"][0]["context"]["cluster"],
                 "user": cfg["contexts"][0]["context"]["user"], "namespace": ns}}],
             "current-context": "team"}
    second = tmp_path / "second.yaml"
    second.write_text(yaml.safe_dump(extra))
    create(cp, ns, POD.format(name="ctx", app="c"))
    merged = env_for(cp, KUBECONFIG=f"{tmp_path / 'absent'}:{cp.kubeconfig}:{second}")
    # the first file's current-context wins; --context picks the team one and its namespace
    assert "No resources found in default namespace." in pk(cp, "get", "pods",
                                                            env=merged).stderr
    assert pk(cp, "get", "pods", "--context", "team", "-o", "name",
              env=merged).stdout == "pod/ctx\n"
    assert pk(cp, "get", "pods", "-o", "name", "-n", ns, env=merged).stdout == "pod/ctx\n"
    only_second = env_for(cp, KUBECONFIG=f"{second}:{cp.kubeconfig}")
    assert pk(cp, "--context=team", "get", "pods", "-o", "name",
              env=only_second).stdout == "pod/ctx\n"
    assert pk(cp, "get", "pods", "-o", "name", env=only_second).stdout == "pod/ctx\n"
    explicit = dict(os.environ, HOME=str(tmp_path), KUBECACHEDIR=str(tmp_path / "c"))
    explicit.pop("KUBECONFIG", None)
    assert pk(cp, "--kubeconfig", str(cp.kubeconfig), "-n", ns, "get", "pods", "-o", "name",
              env=explicit).stdout == "pod/ctx\n"
    # ~/.kube/config when nothing else is said
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(cp.kubeconfig.read_text())
    assert pk(cp, "get", "ns", ns, "-o", "name", env=explicit).stdout == f"namespace/{ns}\n"
    for args, message in (
        (["--kubeconfig", str(tmp_path / "nope"), "get", "pods"],
         f"error: stat {tmp_path / 'nope'}: no such file or directory"),
        (["--context", "ghost", "get", "pods"], 'error: context "ghost" does not exist'),
    ):
        res = pk(cp, *args, env=explicit, check=False)
        assert (res.returncode, res.stderr.strip()) == (1, message)


def test_user_errors_are_one_line(cp: ControlPlaneProcess, ns: str, tmp_path: Path) -> None:
    down = yaml.safe_load(cp.kubeconfig.read_text())
    port = free_port()
    down["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(yaml.safe_dump(down))
    refused = pk(cp, "--kubeconfig", str(dead), "get", "pods", check=False)
    kubectl_refused = subprocess.run(["kubectl", "--kubeconfig", str(dead), "get", "pods"],
                                     capture_output=True, text=True,
                                     env=env_for(cp)).stderr.strip().splitlines()[-1]
    assert refused.stderr.strip() == kubectl_refused
    for args in (["frobnicate"], ["get", "pods", "--bogus"], ["get"], ["delete"],
                 ["get", "pods,nodes", "-w"],
                 ["apply"], ["apply", "-f", str(tmp_path / "none.yaml")],
                 ["logs"], ["wait", "--for=condition=Ready"], ["why"],
                 ["get", "pods", "--request-timeout=soon"],
                 ["delete", "pod", "x", "--force", "--grace-period=3"]):
        res = pk(cp, *args, "-n", ns, check=False)
        assert res.returncode == 1, args
        assert res.stderr.count("\n") == 1, (args, res.stderr)
        assert res.stderr.startswith("error: "), (args, res.stderr)
    assert pk(cp, "--help").stdout.startswith("pykubectl controls a Kubernetes cluster")
    assert "--selector" in pk(cp, "get", "--help").stdout
