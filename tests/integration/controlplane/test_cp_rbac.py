"""rbac.authorization.k8s.io/v1 through the unmodified kubectl against a real control plane
process (issue 21): ``kubectl create role/clusterrole/rolebinding/clusterrolebinding`` send
objects the API takes, ``kubectl get`` prints upstream's columns, ``kubectl explain`` reads
the schema, and a bad binding is refused with upstream's words."""

from __future__ import annotations

import json

from cp_process import ControlPlaneProcess, wait_for

CP_BACKENDS = ("sqlite",)  # the RBAC API: the store is not the point


def test_create_and_get_with_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    out = cp.kubectl("create", "role", "pod-reader", "-n", ns, "--verb=get,list,watch",
                     "--resource=pods/log", "--resource-name=web").stdout
    assert out.strip() == "role.rbac.authorization.k8s.io/pod-reader created"
    role = json.loads(cp.kubectl("get", "role", "pod-reader", "-n", ns, "-o", "json").stdout)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods/log"],
                              "resourceNames": ["web"], "verbs": ["get", "list", "watch"]}]
    # upstream's validation, reached through kubectl's protobuf body
    res = cp.kubectl("create", "role", "two", "-n", ns, "--verb=get", "--resource=pods,nodes",
                     "--resource-name=web", check=False)
    assert res.returncode != 0
    assert res.stderr.strip() == (
        'The Role "two" is invalid: rules[0].resourceNames: Required value: resource names '
        "cannot apply to multiple resources")
    cp.kubectl("create", "rolebinding", "read", "-n", ns, "--role=pod-reader",
               "--user=alice", "--group=devs", f"--serviceaccount={ns}:ci")
    lines = cp.kubectl("get", "rolebinding", "read", "-n", ns, "-o", "wide").stdout.splitlines()
    assert lines[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert lines[1].split()[1] == "Role/pod-reader"
    assert lines[1].split()[3:] == ["alice", "devs", f"{ns}/ci"]
    assert cp.kubectl("get", "roles", "-n", ns).stdout.split()[:3] == [
        "NAME", "CREATED", "AT"]


def test_cluster_scoped_with_kubectl(cp: ControlPlaneProcess) -> None:
    try:
        cp.kubectl("create", "clusterrole", "t-health", "--verb=get",
                   "--non-resource-url=/healthz", "--non-resource-url=/readyz/*")
        cr = json.loads(cp.kubectl("get", "clusterrole", "t-health", "-o", "json").stdout)
        assert cr["rules"] == [{"nonResourceURLs": ["/healthz", "/readyz/*"],
                                "verbs": ["get"]}]
        cp.kubectl("create", "clusterrolebinding", "t-health", "--clusterrole=t-health",
                   "--group=system:authenticated")
        row = cp.kubectl("get", "clusterrolebinding", "t-health").stdout.splitlines()[1]
        assert row.split()[:2] == ["t-health", "ClusterRole/t-health"]
        res = cp.kubectl("create", "clusterrolebinding", "t-bad", "--clusterrole=x",
                         "--serviceaccount=nons", check=False)
        assert res.returncode != 0
        assert "serviceaccount must be <namespace>:<name>" in res.stderr
        explain = " ".join(cp.kubectl("explain", "clusterrolebinding.roleRef").stdout.split())
        assert "FIELD: roleRef <RoleRef>" in explain
        assert "name <string> -required- name is the name of resource being referenced" in (
            explain)
        assert "rolebindings" in cp.kubectl("api-resources",
                                            "--api-group=rbac.authorization.k8s.io").stdout
    finally:
        cp.kubectl("delete", "clusterrolebinding", "t-health", "--ignore-not-found")
        cp.kubectl("delete", "clusterrole", "t-health", "--ignore-not-found")


def test_aggregated_cluster_role_with_kubectl(cp: ControlPlaneProcess) -> None:
    """The controller manager's ClusterRole aggregation fills an aggregated role."""
    try:
        cp.kubectl("create", "clusterrole", "t-agg", "--aggregation-rule=t-agg=true")
        cp.kubectl("create", "clusterrole", "t-part", "--verb=get", "--resource=configmaps")
        cp.kubectl("label", "clusterrole", "t-part", "t-agg=true")
        wait_for(lambda: json.loads(cp.kubectl("get", "clusterrole", "t-agg", "-o", "json")
                                    .stdout).get("rules") == [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}], timeout=20)
    finally:
        cp.kubectl("delete", "clusterrole", "t-agg", "t-part", "--ignore-not-found")
