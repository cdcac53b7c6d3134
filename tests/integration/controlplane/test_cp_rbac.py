"""rbac.authorization.k8s.io/v1 through the unmodified kubectl against a real control plane
process (issue 21): ``kubectl create role/clusterrole/rolebinding/clusterrolebinding`` send
objects the API takes, ``kubectl get`` prints upstream's columns, ``kubectl explain`` reads
the schema, and a bad binding is refused with upstream's words; a user of the
``--token-auth-file`` is authorized by RBAC (allowed what a Role bound to them allows, 403
with upstream's message elsewhere)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from cp_process import ControlPlaneProcess, control_plane, wait_for

CP_BACKENDS = ("sqlite",)  # the RBAC API: the store is not the point
ALICE_TOKEN = "t-alice-0123456789"


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
       ) -> Iterator[ControlPlaneProcess]:
    """The conftest's control plane, with a static token file naming the user alice."""
    root = tmp_path_factory.mktemp("cp") / "root"
    tokens = root.parent / "tokens.csv"
    tokens.write_text(f'{ALICE_TOKEN},alice,u-1,"devs"\n')
    with control_plane(root, request.param, ["--token-auth-file", str(tokens)]) as proc:
        yield proc


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


def test_a_user_bound_by_a_role(cp: ControlPlaneProcess, ns: str) -> None:
    """alice may list pods where a Role bound to her allows it, and nothing else."""
    other = f"{ns[:50]}-b"
    cp.kubectl("create", "namespace", other)
    try:
        cp.kubectl("create", "role", "pod-reader", "-n", ns, "--verb=get,list",
                   "--resource=pods")
        cp.kubectl("create", "rolebinding", "read", "-n", ns, "--role=pod-reader",
                   "--user=alice")

        def as_alice(*args: str) -> subprocess.CompletedProcess[str]:
            return cp.kubectl(f"--token={ALICE_TOKEN}", *args, check=False)

        res = as_alice("get", "pods", "-n", ns)
        assert res.returncode == 0, res.stderr
        assert res.stderr.strip() == f"No resources found in {ns} namespace."
        for args, message in [
            (("get", "pods", "-n", other),
             f'pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
             f'in the namespace "{other}"'),
            (("delete", "pod", "web", "-n", ns),
             f'pods "web" is forbidden: User "alice" cannot delete resource "pods" in API '
             f'group "" in the namespace "{ns}"'),
            (("get", "nodes"),
             'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" '
             "at the cluster scope"),
        ]:
            res = as_alice(*args)
            assert res.returncode == 1
            assert res.stderr.strip() == f"Error from server (Forbidden): {message}"
        # a wrong token is no one: 401
        res = cp.kubectl("--token=nobody", "get", "pods", "-n", ns, check=False)
        assert "Unauthorized" in res.stderr
    finally:
        cp.kubectl("delete", "namespace", other, "--wait=false", check=False)


def test_escalation_refused_with_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    """alice may write Roles and RoleBindings in her namespace, but not one granting more
    than she holds."""
    cp.kubectl("create", "role", "rbac-manager", "-n", ns, "--verb=create,get,list",
               "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io"
               ",pods")
    cp.kubectl("create", "rolebinding", "alice-manages", "-n", ns, "--role=rbac-manager",
               "--user=alice")
    ok = cp.kubectl(f"--token={ALICE_TOKEN}", "create", "role", "pods", "-n", ns,
                    "--verb=get", "--resource=pods", check=False)
    assert ok.returncode == 0, ok.stderr
    res = cp.kubectl(f"--token={ALICE_TOKEN}", "create", "role", "secrets", "-n", ns,
                     "--verb=get", "--resource=secrets", check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == (
        'Error from server (Forbidden): roles.rbac.authorization.k8s.io "secrets" is '
        'forbidden: user "alice" (groups=["devs" "system:authenticated"]) is attempting to '
        'grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
    res = cp.kubectl(f"--token={ALICE_TOKEN}", "create", "rolebinding", "admin", "-n", ns,
                     "--clusterrole=cluster-admin", "--user=alice", check=False)
    assert res.returncode == 1
    assert 'rolebindings.rbac.authorization.k8s.io "admin" is forbidden' in res.stderr
    assert cp.kubectl("get", "rolebinding", "admin", "-n", ns, check=False).returncode == 1


def test_bootstrap_policy_with_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    """The default roles exist at start, view is filled by aggregation, and binding it
    lets alice read what view reads."""
    crbs = cp.kubectl("get", "clusterrolebinding", "cluster-admin", "-o", "wide").stdout
    assert crbs.splitlines()[1].split()[:2] == ["cluster-admin", "ClusterRole/cluster-admin"]
    assert "system:masters" in crbs.splitlines()[1].split()
    wait_for(lambda: json.loads(cp.kubectl("get", "clusterrole", "view", "-o", "json").stdout
                                ).get("rules"), timeout=20)
    cp.kubectl("create", "rolebinding", "alice-views", "-n", ns, "--clusterrole=view",
               "--user=alice")
    ok = cp.kubectl(f"--token={ALICE_TOKEN}", "get", "deployments,configmaps", "-n", ns,
                    check=False)
    assert ok.returncode == 0, ok.stderr
    res = cp.kubectl(f"--token={ALICE_TOKEN}", "get", "secrets", "-n", ns, check=False)
    assert res.stderr.strip() == (
        f'Error from server (Forbidden): secrets is forbidden: User "alice" cannot list '
        f'resource "secrets" in API group "" in the namespace "{ns}"')


def test_auth_can_i_and_whoami_with_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    """kubectl auth can-i answers as RBAC decides (for alice, and for the admin asking
    --as alice), --list shows her rules, whoami who she is."""
    cp.kubectl("create", "role", "pod-reader", "-n", ns, "--verb=get,list", "--resource=pods")
    cp.kubectl("create", "rolebinding", "read", "-n", ns, "--role=pod-reader", "--user=alice")

    def can_i(*args: str) -> tuple[int, str]:
        res = cp.kubectl("auth", "can-i", *args, check=False)
        return res.returncode, res.stdout.strip()

    alice = f"--token={ALICE_TOKEN}"
    assert can_i(alice, "list", "pods", "-n", ns) == (0, "yes")
    assert can_i(alice, "delete", "pods", "-n", ns) == (1, "no")
    assert can_i(alice, "list", "pods", "-n", "default") == (1, "no")
    assert can_i("--as=alice", "get", "pods", "-n", ns) == (0, "yes")
    assert can_i("--as=alice", "create", "deployments.apps", "-n", ns) == (1, "no")
    assert can_i("delete", "nodes") == (0, "yes")  # the admin
    listed = cp.kubectl(alice, "auth", "can-i", "--list", "-n", ns).stdout.splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names",
                                 "Verbs"]
    rows = {line.split()[0]: line for line in listed[1:] if line.strip()}
    assert rows["pods"].split()[-2:] == ["[get", "list]"]  # the Role's rule
    who = cp.kubectl(alice, "auth", "whoami").stdout.splitlines()
    assert who[0].split() == ["ATTRIBUTE", "VALUE"]
    assert who[1].split() == ["Username", "alice"]
    assert who[2].split() == ["Groups", "[devs", "system:authenticated]"]
    who = cp.kubectl("--as=bob", "--as-group=qa", "auth", "whoami").stdout.splitlines()
    assert who[1].split() == ["Username", "bob"]


def test_kubectl_as_needs_the_impersonate_verb(cp: ControlPlaneProcess, ns: str) -> None:
    """kubectl --as/--as-group for alice: refused in upstream's words until a role grants
    her ``impersonate`` on that user and group, then the request is judged as them."""
    alice = f"--token={ALICE_TOKEN}"
    res = cp.kubectl(alice, "--as=bob", "get", "pods", "-n", ns, check=False)
    assert res.returncode == 1
    assert res.stderr.strip() == (
        'Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot '
        'impersonate resource "users" in API group "" at the cluster scope')
    try:
        for name, resource, target in (("t-imp-bob", "users", "bob"),
                                       ("t-imp-readers", "groups", "readers")):
            cp.kubectl("create", "clusterrole", name, "--verb=impersonate",
                       f"--resource={resource}", f"--resource-name={target}")
            cp.kubectl("create", "clusterrolebinding", name, f"--clusterrole={name}",
                       "--user=alice")
        cp.kubectl("create", "role", "pod-reader", "-n", ns, "--verb=list", "--resource=pods")
        cp.kubectl("create", "rolebinding", "readers", "-n", ns, "--role=pod-reader",
                   "--group=readers")
        res = cp.kubectl(alice, "--as=bob", "get", "pods", "-n", ns, check=False)
        assert res.stderr.strip() == (
            f'Error from server (Forbidden): pods is forbidden: User "bob" cannot list '
            f'resource "pods" in API group "" in the namespace "{ns}"')
        res = cp.kubectl(alice, "--as=bob", "--as-group=readers", "get", "pods", "-n", ns,
                         check=False)
        assert res.returncode == 0, res.stderr
        res = cp.kubectl(alice, "--as=bob", "--as-group=system:masters", "get", "pods",
                         check=False)
        assert res.stderr.strip() == (
            'Error from server (Forbidden): groups "system:masters" is forbidden: User '
            '"alice" cannot impersonate resource "groups" in API group "" at the cluster '
            "scope")
    finally:
        cp.kubectl("delete", "clusterrolebinding", "t-imp-bob", "t-imp-readers",
                   "--ignore-not-found")
        cp.kubectl("delete", "clusterrole", "t-imp-bob", "t-imp-readers", "--ignore-not-found")
