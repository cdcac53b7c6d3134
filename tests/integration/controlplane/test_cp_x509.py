"""X.509 client certificates through the unmodified kubectl against a real control plane
process (issue 21): a certificate the cluster CA signed authenticates as its CN in its O
groups and RBAC judges that user; one another CA signed is 401; the control plane writes
kubeadm's kubernetes-admin (system:masters) kubeconfig beside the token one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cp_process import ControlPlaneProcess

from pykubelet.client.kubeconfig import cert_kubeconfig, write_kubeconfig
from pykubelet.controlplane.pki import PKI

CP_BACKENDS = ("sqlite",)  # authentication: the store is not the point


def _user_kubeconfig(cp: ControlPlaneProcess, ca: PKI, out: Path, user: str,
                     groups: tuple[str, ...]) -> Path:
    """A kubeconfig for ``user`` with a client certificate ``ca`` signed."""
    paths = ca.issue_client(user, user, groups)
    cluster_ca = (cp.root / "pki" / "ca.crt").read_bytes()
    write_kubeconfig(out, cert_kubeconfig(cp.url, cluster_ca, user, paths.cert.read_bytes(),
                                          paths.key.read_bytes()))
    return out


def _as(cp: ControlPlaneProcess, kubeconfig: Path, *args: str
        ) -> subprocess.CompletedProcess[str]:
    return cp.kubectl(f"--kubeconfig={kubeconfig}", *args, check=False)


def test_a_certificate_user_is_judged_by_rbac(cp: ControlPlaneProcess, ns: str,
                                              tmp_path: Path) -> None:
    cluster = PKI(tmp_path / "cluster")  # the cluster's CA, as an admin holding its key has
    cluster.install_ca((cp.root / "pki" / "ca.crt").read_bytes(),
                       (cp.root / "pki" / "ca.key").read_bytes())
    carol = _user_kubeconfig(cp, cluster, tmp_path / "carol.kubeconfig", "carol", ("devs",))
    # before any binding: authenticated, not authorized
    res = _as(cp, carol, "get", "pods", "-n", ns)
    assert res.returncode == 1
    assert res.stderr.strip() == (
        f'Error from server (Forbidden): pods is forbidden: User "carol" cannot list '
        f'resource "pods" in API group "" in the namespace "{ns}"')
    cp.kubectl("create", "role", "pod-reader", "-n", ns, "--verb=get,list", "--resource=pods")
    cp.kubectl("create", "rolebinding", "devs-read", "-n", ns, "--role=pod-reader",
               "--group=devs")
    res = _as(cp, carol, "get", "pods", "-n", ns)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == f"No resources found in {ns} namespace."
    res = _as(cp, carol, "get", "pods", "-n", "default")
    assert res.returncode == 1
    assert 'User "carol" cannot list resource "pods"' in res.stderr
    who = json.loads(_as(cp, carol, "auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"] == {"username": "carol",
                                         "groups": ["devs", "system:authenticated"]}


def test_another_cas_certificate_is_401(cp: ControlPlaneProcess, tmp_path: Path) -> None:
    other = PKI(tmp_path / "other")
    mallory = _user_kubeconfig(cp, other, tmp_path / "mallory.kubeconfig", "mallory",
                               ("system:masters",))
    res = _as(cp, mallory, "get", "pods")
    assert res.returncode == 1
    # kubectl's words for a 401 (the TLS connection itself is accepted, as Go's
    # RequestClientCert: the certificate is judged by the authenticator)
    assert "error: You must be logged in to the server" in res.stderr, res.stderr
    assert "connection reset" not in res.stderr


def test_the_admin_certificate_kubeconfig(cp: ControlPlaneProcess) -> None:
    admin = cp.root / "admin-cert.kubeconfig"
    assert oct(admin.stat().st_mode & 0o777) == "0o600"
    who = json.loads(_as(cp, admin, "auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"] == {
        "username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
    res = _as(cp, admin, "auth", "can-i", "delete", "nodes")
    assert (res.returncode, res.stdout.strip()) == (0, "yes")
