"""``pykubectl auth can-i`` and ``auth whoami``, with the global ``--as``/``--as-group``, and
``create role|clusterrole|rolebinding|clusterrolebinding`` print what the real kubectl
prints against the same control plane process (issue 21): the same stdout, stderr and exit
status for allowed, denied and impersonated questions, the objects made, and the refusals."""

from __future__ import annotations

import pytest
from cp_process import ControlPlaneProcess
from test_pykubectl import pk, same_as_kubectl

CP_BACKENDS = ("sqlite",)


@pytest.mark.parametrize("args", [
    ("auth", "can-i", "list", "pods"),
    ("auth", "can-i", "delete", "nodes", "-A"),
    ("auth", "can-i", "get", "/healthz"),
    ("auth", "can-i", "get", "deployments.apps/web", "-n", "kube-system"),
    ("auth", "can-i", "--as=bob", "list", "pods"),
    ("auth", "can-i", "--as=bob", "--as-group=system:masters", "list", "pods"),
    ("auth", "can-i", "--as=system:node:n1", "--as-group=system:nodes", "get", "secrets/s"),
    ("auth", "can-i", "--as=bob", "--quiet", "create", "pods"),
    ("auth", "can-i", "get", "pods", "--subresource=log"),
    ("auth", "can-i", "list", "foos"),  # a type the server does not serve: warned
    ("auth", "whoami"),
    ("auth", "whoami", "--as=bob", "--as-group=devs", "--as-group=qa"),
    ("auth", "whoami", "-o", "json"),
    ("auth", "whoami", "-o", "yaml", "--as=bob"),
])
def test_auth_as_kubectl(cp: ControlPlaneProcess, args: tuple[str, ...]) -> None:
    same_as_kubectl(cp, *args)


def test_auth_can_i_list_as_kubectl(cp: ControlPlaneProcess, ns: str) -> None:
    """--list: the rules review broken down, compacted and sorted as kubectl's, for the
    admin, a user with roles and non-resource rules, and a node (incomplete: warned)."""
    try:
        cp.kubectl("create", "role", "r", "-n", ns, "--verb=get,list",
                   "--resource=pods,deployments.apps", "--resource-name=a")
        cp.kubectl("create", "role", "r2", "-n", ns, "--verb=watch,get",
                   "--resource=pods,configmaps")
        cp.kubectl("create", "clusterrole", "t-list-urls", "--verb=get,post",
                   "--non-resource-url=/x,/y/*")
        cp.kubectl("create", "rolebinding", "b", "-n", ns, "--role=r", "--user=bob")
        cp.kubectl("create", "rolebinding", "b2", "-n", ns, "--role=r2", "--user=bob")
        cp.kubectl("create", "clusterrolebinding", "t-list-urls", "--clusterrole=t-list-urls",
                   "--user=bob")
        for args in (("-n", ns), ("--as=bob", "-n", ns), ("--as=bob", "-n", ns, "--no-headers"),
                     ("--as=system:node:n1", "--as-group=system:nodes"),
                     ("--as=nobody", "-n", "kube-system")):
            same_as_kubectl(cp, "auth", "can-i", "--list", *args)
    finally:
        cp.kubectl("delete", "clusterrolebinding,clusterrole", "t-list-urls",
                   "--ignore-not-found")


DRY = "--dry-run=client"


@pytest.mark.parametrize("args", [
    ("role", "r1", "--verb=get,list", "--verb=get", "--resource=pods,deployments.apps,rs",
     "--resource=pods/log", "--resource-name=a", "--resource-name=a,b", DRY, "-o", "json"),
    ("role", "r1", "--verb=get", "--resource=pods", "-n", "kube-system", DRY, "-o", "yaml"),
    ("role", "r1", "--verb=*", "--verb=get", "--resource=*", DRY, "-o", "json"),
    ("role", "r1", "--resource=pods", DRY),
    ("role", "r1", "--verb=get", DRY),
    ("role", "r1", "--verb=get", "--resource=foos", DRY),
    ("role", "r1", "--verb=frob", "--resource=pods", DRY),
    ("role", "r1", "--verb=impersonate", "--resource=users", DRY, "-o", "json"),
    ("role", "r1", "--verb=bind", "--resource=pods", DRY),
    ("role", "r1", "--verb=get", "--resource=.apps", DRY),
    ("role", DRY, "--verb=get", "--resource=pods"),
    ("clusterrole", "c1", "--verb=get", "--non-resource-url=/healthz,/readyz/*",
     "--resource=nodes", DRY, "-o", "json"),
    ("clusterrole", "c1", "--aggregation-rule=a=b,c=d", DRY, "-o", "json"),
    ("clusterrole", "c1", "--aggregation-rule=a=b", "--verb=get", DRY),
    ("clusterrole", "c1", "--verb=list", "--non-resource-url=/x", DRY),
    ("clusterrole", "c1", "--verb=get", "--non-resource-url=x", DRY),
    ("clusterrole", "c1", "--verb=get", "--non-resource-url=/x*/y", DRY),
    ("clusterrole", "c1", "--verb=get", DRY),
    ("rolebinding", "b1", "--role=r", "--user=a", "--user=b", "--group=g",
     "--serviceaccount=ns:sa", DRY, "-o", "json"),
    ("rolebinding", "b1", "--clusterrole=view", "-n", "kube-system", DRY, "-o", "yaml"),
    ("rolebinding", "b1", "--role=r", "--clusterrole=c", DRY),
    ("rolebinding", "b1", DRY),
    ("rolebinding", "b1", "--role=r", "--serviceaccount=nons", DRY),
    ("clusterrolebinding", "cb1", "--clusterrole=view", "--group=g", DRY, "-o", "json"),
])
def test_create_rbac_objects_as_kubectl(cp: ControlPlaneProcess, args: tuple[str, ...]
                                        ) -> None:
    same_as_kubectl(cp, "create", *args)


@pytest.mark.parametrize("args", [
    ("role", "--verb=get", "--resource=pods"),
    ("clusterrole", "--verb=get", "--resource=nodes", "--non-resource-url=/healthz"),
    ("rolebinding", "--role=x", "--user=u", "--serviceaccount=default:ci"),
    ("clusterrolebinding", "--clusterrole=x", "--group=g"),
    ("role", "--verb=get", "--resource=pods,nodes", "--resource-name=web"),  # 422
])
def test_created_rbac_objects_as_kubectl(cp: ControlPlaneProcess, args: tuple[str, ...]
                                         ) -> None:
    """Each tool creates the object (or is refused) and prints the same; the objects they
    made are the same. (In ``default``, each case its own names: the ``ns`` fixture's
    names are cut to 40 characters, the same for every case here.)"""
    kind, *flags = args
    ns = "default"
    made = []
    case = abs(hash(args)) % 10**8
    for tool in ("pykubectl", "kubectl"):
        name = f"t-{tool}-{case}"
        real = ("create", kind, name, "-n", ns, *flags)
        res = pk(cp, *real, check=False) if tool == "pykubectl" else cp.kubectl(*real,
                                                                                check=False)
        out = (res.stdout.replace(name, "NAME"),
               res.stderr.replace(name, "NAME").replace("pykubectl", "kubectl"),
               res.returncode)
        got = cp.kubectl("get", kind, name, "-n", ns, "-o",
                         "jsonpath={.rules}{.subjects}{.roleRef}{.aggregationRule}",
                         check=False).stdout
        made.append((out, got))
        cp.kubectl("delete", kind, name, "-n", ns, "--ignore-not-found")
    assert made[0] == made[1]
