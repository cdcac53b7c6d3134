"""ServiceAccounts and their tokens with the unmodified kubectl against a real control
plane process (issue 21): every namespace has its ``default`` account and the
``kube-root-ca.crt`` ConfigMap holding the cluster CA; ``kubectl create sa``, a Role and
RoleBinding for it, ``kubectl create token`` and then ``kubectl --token`` acts as
``system:serviceaccount:NS:NAME``: allowed where the binding allows, Forbidden elsewhere in
upstream's words, Unauthorized once the account is deleted."""

from __future__ import annotations

import base64
import json

from cp_process import ControlPlaneProcess, wait_for

CP_BACKENDS = ("sqlite",)  # the tokens, not the store


def test_default_account_and_root_ca_in_every_namespace(cp: ControlPlaneProcess,
                                                        ns: str) -> None:
    wait_for(lambda: cp.kubectl("get", "sa", "default", "-n", ns, check=False).returncode == 0,
             timeout=20, what="the default ServiceAccount")
    lines = cp.kubectl("get", "serviceaccounts", "-n", ns).stdout.splitlines()
    assert lines[0].split() == ["NAME", "SECRETS", "AGE"]
    assert lines[1].split()[:2] == ["default", "0"]
    wait_for(lambda: cp.kubectl("get", "cm", "kube-root-ca.crt", "-n", ns,
                                check=False).returncode == 0, timeout=20, what="the root CA")
    cm = json.loads(cp.kubectl("get", "cm", "kube-root-ca.crt", "-n", ns, "-o",
                               "json").stdout)
    assert cm["data"]["ca.crt"] == (cp.root / "pki" / "ca.crt").read_text()


def test_a_token_of_kubectl_create_token_is_judged_by_rbac(cp: ControlPlaneProcess,
                                                           ns: str) -> None:
    other = f"{ns[:50]}-b"
    cp.kubectl("create", "namespace", other)
    try:
        out = cp.kubectl("create", "sa", "reader", "-n", ns).stdout
        assert out.strip() == "serviceaccount/reader created"
        cp.kubectl("create", "role", "pod-reader", "-n", ns, "--verb=get,list",
                   "--resource=pods")
        cp.kubectl("create", "rolebinding", "read", "-n", ns, "--role=pod-reader",
                   f"--serviceaccount={ns}:reader")
        token = cp.kubectl("create", "token", "reader", "-n", ns, "--duration=10m").stdout
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        assert claims["sub"] == f"system:serviceaccount:{ns}:reader"
        assert claims["exp"] - claims["iat"] == 600
        res = cp.kubectl(f"--token={token}", "get", "pods", "-n", ns, check=False)
        assert res.returncode == 0, res.stderr
        assert res.stderr.strip() == f"No resources found in {ns} namespace."
        res = cp.kubectl(f"--token={token}", "get", "pods", "-n", other, check=False)
        assert res.returncode != 0
        assert res.stderr.strip() == (
            f'Error from server (Forbidden): pods is forbidden: User '
            f'"system:serviceaccount:{ns}:reader" cannot list resource "pods" in API group '
            f'"" in the namespace "{other}"')
        who = cp.kubectl(f"--token={token}", "auth", "whoami", "-o", "json").stdout
        assert json.loads(who)["status"]["userInfo"]["groups"] == [
            "system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
        cp.kubectl("delete", "sa", "reader", "-n", ns)
        res = cp.kubectl(f"--token={token}", "get", "pods", "-n", ns, check=False)
        assert res.returncode != 0
        assert "Unauthorized" in res.stderr
        res = cp.kubectl("create", "token", "nobody", "-n", ns, check=False)
        assert res.stderr.strip() == (
            'error: failed to create token: serviceaccounts "nobody" not found')
    finally:
        cp.kubectl("delete", "namespace", other, "--wait=false", check=False)
