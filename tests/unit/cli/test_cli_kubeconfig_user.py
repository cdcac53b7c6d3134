"""``pykubelet control-plane kubeconfig-user`` (kubeadm kubeconfig user): a kubeconfig whose
client certificate the cluster CA signed for the user and groups asked, which the API
server's x509 authenticator takes as that user; refused where no control plane ran."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykubelet.cli.main import main
from pykubelet.controlplane.apiserver.filters.x509 import X509Authenticator
from pykubelet.controlplane.pki import PKI
from pykubelet.controlplane.registry.store import User


def test_a_user_kubeconfig_with_a_ca_signed_certificate(tmp_path: Path) -> None:
    pki = PKI(tmp_path)
    pki.ensure_ca()
    (tmp_path / "server").write_text("https://10.0.0.1:6443\n")
    res = CliRunner().invoke(main, ["control-plane", "--root", str(tmp_path), "kubeconfig-user",
                                    "--client-name", "carol", "--org", "devs", "--org", "qa"])
    assert res.exit_code == 0, res.output
    cfg = yaml.safe_load(res.output)
    assert cfg["current-context"] == "carol@pykube"
    assert cfg["clusters"][0]["cluster"]["server"] == "https://10.0.0.1:6443"
    user = cfg["users"][0]["user"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    assert serialization.load_pem_private_key(base64.b64decode(user["client-key-data"]), None)
    der = cert.public_bytes(serialization.Encoding.DER)
    assert X509Authenticator(pki.ca_pem).user(der) == User(
        "carol", ("devs", "qa", "system:authenticated"))
    assert sorted(p.name for p in pki.dir.iterdir()) == ["ca.crt", "ca.key"]  # kept nowhere


def test_no_control_plane_state(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["control-plane", "--root", str(tmp_path), "kubeconfig-user",
                                    "--client-name", "carol"])
    assert res.exit_code == 1
    assert "no control plane state here" in res.output
