"""The unmodified kubectl on PATH, with default flags, against a real control plane process:
every command the control-plane issue names, and its output as a real cluster's."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
import yaml
from cp_process import ControlPlaneProcess, FakeNode, wait_for

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
    resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}
"""


@pytest.fixture(scope="module")
def nodes(cp: ControlPlaneProcess) -> Iterator[list[FakeNode]]:
    made = [FakeNode(cp, "kc-n1", labels={"zone": "a"}), FakeNode(cp, "kc-n2")]
    yield made
    for n in made:
        n.delete()


def test_version_prints_both_sides(cp: ControlPlaneProcess) -> None:
    out = cp.kubectl("version").stdout
    assert "Client Version: v1." in out
    assert "Server Version: v1.32.0+pykube" in out


def test_api_resources_lists_what_is_served(cp: ControlPlaneProcess) -> None:
    out = cp.kubectl("api-resources").stdout
    rows: dict[str, list[str]] = {}
    for line in out.splitlines()[1:]:  # core first; metrics.k8s.io also lists "pods"
        rows.setdefault(line.split()[0], line.split())
    assert rows["pods"][1:] == ["po", "v1", "true", "Pod"]
    assert rows["nodes"][1:] == ["no", "v1", "false", "Node"]
    assert rows["leases"][1:] == ["coordination.k8s.io/v1", "true", "Lease"]
    assert rows["priorityclasses"][1:] == ["pc", "scheduling.k8s.io/v1", "false",
                                           "PriorityClass"]
    assert rows["poddisruptionbudgets"][1:] == ["pdb", "policy/v1", "true",
                                                "PodDisruptionBudget"]
    assert {"configmaps", "secrets", "events", "namespaces"} <= set(rows)


def test_system_namespaces_and_priority_classes_exist(cp: ControlPlaneProcess) -> None:
    names = cp.kubectl("get", "ns", "-o", "name").stdout.split()
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert f"namespace/{ns}" in names
    pcs = cp.kubectl("get", "pc").stdout
    assert "system-node-critical      2000001000" in pcs
    assert "system-cluster-critical   2000000000" in pcs


def test_create_get_in_every_output_and_scheduled(cp: ControlPlaneProcess, ns: str,
                                                  nodes: list[FakeNode]) -> None:
    out = cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="web", app="web"))
    assert out.stdout.strip() == "pod/web created"
    wait_for(lambda: cp.kubectl("get", "pod", "web", "-n", ns, "-o",
                                "jsonpath={.spec.nodeName}").stdout != "", what="binding")
    table = cp.kubectl("get", "pods", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1].split()[:4] == ["web", "0/1", "Pending", "0"]
    wide = cp.kubectl("get", "pods", "-n", ns, "-o", "wide").stdout.splitlines()
    assert wide[0].split()[5:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    assert wide[1].split()[6] in ("kc-n1", "kc-n2")
    obj = json.loads(cp.kubectl("get", "pod", "web", "-n", ns, "-o", "json").stdout)
    assert obj["kind"] == "Pod"
    assert obj["metadata"]["uid"]
    assert obj["spec"]["schedulerName"] == "default-scheduler"
    assert obj["status"]["qosClass"] == "Burstable"
    assert any(c["type"] == "PodScheduled" and c["status"] == "True"
               for c in obj["status"]["conditions"])
    y = yaml.safe_load(cp.kubectl("get", "pod", "web", "-n", ns, "-o", "yaml").stdout)
    assert y["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert cp.kubectl("get", "pods", "-n", ns, "-o", "name").stdout.split() == ["pod/web"]
    events = cp.kubectl("get", "events", "-n", ns).stdout
    assert "Scheduled" in events
    assert f"Successfully assigned {ns}/web to kc-n" in events


def test_all_namespaces_label_and_field_selectors(cp: ControlPlaneProcess, ns: str,
                                                  nodes: list[FakeNode]) -> None:
    for name, app in (("a1", "one"), ("a2", "two")):
        cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name=name, app=app))
    everywhere = cp.kubectl("get", "pods", "-A").stdout.splitlines()
    assert everywhere[0].split()[0] == "NAMESPACE"
    assert any(line.split()[:2] == [ns, "a1"] for line in everywhere)
    sel = cp.kubectl("get", "pods", "-n", ns, "-l", "app=one", "-o", "name").stdout.split()
    assert sel == ["pod/a1"]
    notin = cp.kubectl("get", "pods", "-n", ns, "-l", "app notin (one)", "-o", "name")
    assert notin.stdout.split() == ["pod/a2"]
    by_name = cp.kubectl("get", "pods", "-n", ns, "--field-selector", "metadata.name=a2",
                         "-o", "name").stdout.split()
    assert by_name == ["pod/a2"]
    pending = cp.kubectl("get", "pods", "-A", "--field-selector",
                         f"status.phase=Pending,metadata.namespace={ns}", "-o", "name")
    assert sorted(pending.stdout.split()) == ["pod/a1", "pod/a2"]
    bad = cp.kubectl("get", "pods", "--field-selector", "spec.bogus=x", check=False)
    assert bad.returncode != 0
    assert "field label not supported: spec.bogus" in bad.stderr


def test_apply_then_reapply_changed_file(cp: ControlPlaneProcess, ns: str,
                                         tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "web.yaml"  # type: ignore[operator]
    path.write_text(POD.format(name="ap", app="v1"))
    assert cp.kubectl("apply", "-n", ns, "-f", str(path)).stdout.strip() == "pod/ap created"
    assert cp.kubectl("apply", "-n", ns, "-f", str(path)).stdout.strip() == "pod/ap unchanged"
    path.write_text(POD.format(name="ap", app="v2").replace("busybox", "busybox:1.36"))
    assert cp.kubectl("apply", "-n", ns, "-f", str(path)).stdout.strip() == "pod/ap configured"
    obj = json.loads(cp.kubectl("get", "pod", "ap", "-n", ns, "-o", "json").stdout)
    assert obj["metadata"]["labels"] == {"app": "v2"}
    container = obj["spec"]["containers"][0]
    assert container["image"] == "busybox:1.36"
    # strategic merge: the container's other fields survived the image change
    assert container["command"] == ["sleep", "3600"]
    assert container["resources"]["requests"]["cpu"] == "100m"


def test_label_annotate_patch(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="lp", app="x"))
    assert "labeled" in cp.kubectl("label", "pod", "lp", "-n", ns, "tier=fe").stdout
    assert "annotated" in cp.kubectl("annotate", "pod", "lp", "-n", ns, "note=hi").stdout
    cp.kubectl("label", "pod", "lp", "-n", ns, "app-")
    cp.kubectl("patch", "pod", "lp", "-n", ns, "-p", '{"metadata":{"labels":{"s":"1"}}}')
    cp.kubectl("patch", "pod", "lp", "-n", ns, "--type", "merge", "-p",
               '{"spec":{"activeDeadlineSeconds":600}}')
    cp.kubectl("patch", "pod", "lp", "-n", ns, "--type", "json", "-p",
               '[{"op":"add","path":"/metadata/labels/j","value":"2"}]')
    obj = json.loads(cp.kubectl("get", "pod", "lp", "-n", ns, "-o", "json").stdout)
    assert obj["metadata"]["labels"] == {"tier": "fe", "s": "1", "j": "2"}
    assert obj["metadata"]["annotations"]["note"] == "hi"
    assert obj["spec"]["activeDeadlineSeconds"] == 600
    bad = cp.kubectl("patch", "pod", "lp", "-n", ns, "--type", "merge", "-p",
                     '{"spec":{"restartPolicy":"Never"}}', check=False)
    assert bad.returncode != 0
    assert 'The Pod "lp" is invalid: spec: Forbidden: pod updates may not change fields' in (
        bad.stderr)


def test_get_watch_prints_changes(cp: ControlPlaneProcess, ns: str) -> None:
    cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="w1", app="w"))
    watcher = cp.kubectl_bg("get", "pods", "-n", ns, "-w")
    try:
        time.sleep(1.0)
        cp.kubectl("label", "pod", "w1", "-n", ns, "changed=yes")
        cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="w2", app="w"))
        time.sleep(1.0)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "READY", "STATUS"]
    names = [line.split()[0] for line in lines[1:]]
    assert names[0] == "w1"  # the listed state, once
    assert names.count("w1") >= 2  # then the label change
    assert "w2" in names


def test_describe_pod_and_node(cp: ControlPlaneProcess, ns: str,
                               nodes: list[FakeNode]) -> None:
    cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="d1", app="d"))
    wait_for(lambda: "Scheduled" in cp.kubectl("describe", "pod", "d1", "-n", ns).stdout,
             what="the Scheduled event")
    pod = " ".join(cp.kubectl("describe", "pod", "d1", "-n", ns).stdout.split())
    assert "Name: d1" in pod
    assert "QoS Class: Burstable" in pod
    assert "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in pod
    assert "Normal Scheduled" in pod
    assert "default-scheduler Successfully assigned" in pod
    where = cp.kubectl("get", "pod", "d1", "-n", ns, "-o", "jsonpath={.spec.nodeName}").stdout
    node = " ".join(cp.kubectl("describe", "node", where).stdout.split())
    assert f"Name: {where}" in node
    assert "Ready True" in node
    assert "KubeletReady" in node
    assert f"HolderIdentity: {where}" in node  # the lease is shown
    assert "Non-terminated Pods: (" in node
    assert f"{ns} d1" in node


def test_delete_grace_force_and_wait(cp: ControlPlaneProcess, ns: str,
                                     nodes: list[FakeNode]) -> None:
    for name in ("g1", "g2"):
        cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name=name, app="g"))
    wait_for(lambda: len(cp.kubectl("get", "pods", "-n", ns, "--field-selector",
                                    "spec.nodeName!=", "-o", "name").stdout.split()) == 2,
             what="both pods bound")
    # a bound pod is deleted gracefully: it stays, Terminating, until its node confirms
    out = cp.kubectl("delete", "pod", "g1", "-n", ns, "--grace-period=30", "--wait=false")
    assert out.stdout.strip() == 'pod "g1" deleted'
    row = cp.kubectl("get", "pod", "g1", "-n", ns).stdout.splitlines()[1].split()
    assert row[2] == "Terminating"
    obj = json.loads(cp.kubectl("get", "pod", "g1", "-n", ns, "-o", "json").stdout)
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 30
    # --force --grace-period=0 removes it at once, and --wait returns
    forced = cp.kubectl("delete", "pod", "g1", "-n", ns, "--force", "--grace-period=0")
    assert 'pod "g1" force deleted' in forced.stdout
    gone = cp.kubectl("get", "pod", "g1", "-n", ns, check=False)
    assert 'pods "g1" not found' in gone.stderr
    # an unbound pod goes at once; delete --wait (the default) returns when it is gone
    cp.kubectl("cordon", "kc-n1")
    cp.kubectl("cordon", "kc-n2")
    try:
        cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="u1", app="g"))
        t0 = time.monotonic()
        assert 'pod "u1" deleted' in cp.kubectl("delete", "pod", "u1", "-n", ns).stdout
        assert time.monotonic() - t0 < 10
    finally:
        cp.kubectl("uncordon", "kc-n1")
        cp.kubectl("uncordon", "kc-n2")


def test_wait_for_condition(cp: ControlPlaneProcess, ns: str, nodes: list[FakeNode]) -> None:
    cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="wt", app="w"))
    out = cp.kubectl("wait", "--for=condition=PodScheduled", "pod/wt", "-n", ns,
                     "--timeout=20s")
    assert out.stdout.strip() == "pod/wt condition met"
    slow = cp.kubectl("wait", "--for=condition=Ready", "pod/wt", "-n", ns, "--timeout=2s",
                      check=False)
    assert slow.returncode != 0
    assert "timed out waiting for the condition on pods/wt" in slow.stderr


def test_cordon_uncordon(cp: ControlPlaneProcess, nodes: list[FakeNode]) -> None:
    assert cp.kubectl("cordon", "kc-n2").stdout.strip() == "node/kc-n2 cordoned"
    row = [r for r in cp.kubectl("get", "nodes").stdout.splitlines() if r.startswith("kc-n2")]
    assert row[0].split()[1] == "Ready,SchedulingDisabled"
    assert "already cordoned" in cp.kubectl("cordon", "kc-n2").stdout
    assert cp.kubectl("uncordon", "kc-n2").stdout.strip() == "node/kc-n2 uncordoned"
    obj = json.loads(cp.kubectl("get", "node", "kc-n2", "-o", "json").stdout)
    assert not obj["spec"].get("unschedulable")


def test_create_namespace_configmap_secret(cp: ControlPlaneProcess) -> None:
    assert cp.kubectl("create", "namespace", "kc-made").stdout.strip() == (
        "namespace/kc-made created")
    try:
        cp.kubectl("create", "configmap", "cfg", "-n", "kc-made", "--from-literal=a=1",
                   "--from-literal=b=2")
        cp.kubectl("create", "secret", "generic", "sec", "-n", "kc-made",
                   "--from-literal=password=s3cret")
        rows = cp.kubectl("get", "cm,secret", "-n", "kc-made").stdout
        assert re.search(r"configmap/cfg +2 ", rows), rows
        assert "secret/sec   Opaque   1" in rows
        sec = json.loads(cp.kubectl("get", "secret", "sec", "-n", "kc-made", "-o",
                                    "json").stdout)
        assert sec["data"] == {"password": "czNjcmV0"}
        ns = json.loads(cp.kubectl("get", "ns", "kc-made", "-o", "json").stdout)
        assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "kc-made"
        assert ns["status"]["phase"] == "Active"
    finally:
        cp.kubectl("delete", "namespace", "kc-made")
    assert "not found" in cp.kubectl("get", "ns", "kc-made", check=False).stderr


def test_errors_read_as_a_real_clusters(cp: ControlPlaneProcess, ns: str) -> None:
    missing = cp.kubectl("get", "pod", "nope", "-n", ns, check=False)
    assert missing.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
    cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="dup", app="d"))
    dup = cp.kubectl("create", "-n", ns, "-f", "-", input=POD.format(name="dup", app="d"),
                     check=False)
    assert 'Error from server (AlreadyExists): error when creating "STDIN": pods "dup" ' \
           "already exists" in dup.stderr
    bad = cp.kubectl("create", "-n", ns, "-f", "-", check=False,
                     input=POD.format(name="Bad_Name", app="d"))
    assert 'The Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"' in (
        bad.stderr)
    unknown = cp.kubectl("create", "-n", ns, "-f", "-", check=False,
                         input=POD.format(name="uf", app="d").replace("image:", "imagee:"))
    assert unknown.returncode != 0
    assert 'unknown field "spec.containers[0].imagee"' in unknown.stderr
    assert "not found" in cp.kubectl("get", "pod", "uf", "-n", ns, check=False).stderr
    nosuch = cp.kubectl("get", "widgets", check=False)
    assert 'the server doesn\'t have a resource type "widgets"' in nosuch.stderr
