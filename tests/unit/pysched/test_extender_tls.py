"""enableHTTPS and tlsConfig, as HTTPExtender's makeTransport: the CA (file or data) verifies
the extender; without a CA the connection is not verified; ``insecure`` skips verification;
a client certificate is presented when the extender asks for one. Every call is measured
(scheduler_extender_duration_seconds)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from extender_server import ExtenderServer

from pykubelet.api.types import Pod
from pysched import decode as sched_decode
from pysched.api import EmbeddedScheduler
from pysched.config import load_config

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _cert(name: str, issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
          ca: bool = False) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    b = (x509.CertificateBuilder().subject_name(subject)
         .issuer_name(issuer[0].subject if issuer else subject)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=1))
         .not_valid_after(now + datetime.timedelta(hours=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        b = b.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    cert = b.sign(issuer[1] if issuer else key, hashes.SHA256())
    return cert, key


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | bytes]:
    d = tmp_path_factory.mktemp("pki")
    ca = _cert("extender-ca", None, ca=True)
    other_ca = _cert("other-ca", None, ca=True)
    server = _cert("127.0.0.1", ca)
    client = _cert("kube-scheduler", ca)
    files: dict[str, Path | bytes] = {}
    for name, data in (("ca.crt", _pem(ca[0])), ("other.crt", _pem(other_ca[0])),
                       ("server.crt", _pem(server[0])), ("server.key", _key_pem(server[1])),
                       ("client.crt", _pem(client[0])), ("client.key", _key_pem(client[1]))):
        (d / name).write_bytes(data)
        files[name] = d / name
    files["client.crt.data"] = _pem(client[0])
    files["client.key.data"] = _key_pem(client[1])
    return files


def _server_tls(pki: dict[str, Path | bytes], client_auth: bool) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(pki["server.crt"]), str(pki["server.key"]))
    if client_auth:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(str(pki["ca.crt"]))
    return ctx


def _schedule(ext: dict[str, object]) -> tuple[dict[str, object], str]:
    cfg = load_config({**HEAD, "extenders": [ext]})

    class Binder:
        def bind(self, pod: Pod, node: str) -> None:
            pass

    s = EmbeddedScheduler(Binder(), config=cfg)
    try:
        for n in ("n1", "n2"):
            s.on_node_add(sched_decode.node({"apiVersion": "v1", "kind": "Node",
                                          "metadata": {"name": n},
                                          "status": {"allocatable": {"cpu": "4",
                                                                     "pods": "110"}}}))
        p = sched_decode.pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                           "spec": {"containers": [{"name": "c", "image": "x"}]}})
        s.register_pod(p)
        rec = s.schedule_now(p)
        d = s.decision_of(rec).to_dict()
        return d, s.metrics.render()
    finally:
        s.stop()


def test_ca_file_verifies_and_client_certificate_is_presented(pki: dict) -> None:
    with ExtenderServer(_server_tls(pki, client_auth=True)) as srv:
        srv.reject = {"n1": "no"}
        d, metrics = _schedule({"urlPrefix": srv.url, "filterVerb": "filter",
                                "enableHTTPS": True,
                                "tlsConfig": {"caFile": str(pki["ca.crt"]),
                                              "certFile": str(pki["client.crt"]),
                                              "keyFile": str(pki["client.key"])}})
    assert d["node"] == "n2"
    assert srv.url.startswith("https://")
    assert (f'scheduler_extender_duration_seconds_count{{extender="{srv.url}",'
            'result="success",verb="filter"} 1.0') in metrics


def test_ca_and_client_certificate_as_data(pki: dict) -> None:
    b64 = {k: base64.b64encode(v).decode() for k, v in (
        ("caData", Path(pki["ca.crt"]).read_bytes()), ("certData", pki["client.crt.data"]),
        ("keyData", pki["client.key.data"]))}
    with ExtenderServer(_server_tls(pki, client_auth=True)) as srv:
        srv.reject = {"n2": "no"}
        d, _ = _schedule({"urlPrefix": srv.url, "filterVerb": "filter", "enableHTTPS": True,
                          "tlsConfig": b64})
    assert d["node"] == "n1"


def test_a_ca_that_did_not_sign_the_server_fails_the_call(pki: dict) -> None:
    with ExtenderServer(_server_tls(pki, client_auth=False)) as srv:
        d, metrics = _schedule({"urlPrefix": srv.url, "filterVerb": "filter",
                                "enableHTTPS": True,
                                "tlsConfig": {"caFile": str(pki["other.crt"])}})
    assert d["node"] is None
    assert "CERTIFICATE_VERIFY_FAILED" in str(d["extenders"][0]["error"])
    assert 'result="error",verb="filter"} 1.0' in metrics


@pytest.mark.parametrize("tls", [None, {"insecure": True}])
def test_no_ca_or_insecure_does_not_verify(pki: dict, tls: dict | None) -> None:
    ext: dict[str, object] = {"filterVerb": "filter", "enableHTTPS": True}
    if tls is not None:
        ext["tlsConfig"] = tls
    with ExtenderServer(_server_tls(pki, client_auth=False)) as srv:
        srv.reject = {"n1": "no"}
        d, _ = _schedule({"urlPrefix": srv.url, **ext})
    assert d["node"] == "n2"


def test_insecure_with_a_ca_is_refused() -> None:
    from pysched.config import ConfigError

    with pytest.raises(ConfigError, match=r"extenders\[0\]\.tlsConfig\.insecure: Invalid "
                       "value: true: specifying a root certificates file with the insecure "
                       "flag is not allowed"):
        load_config({**HEAD, "extenders": [{"urlPrefix": "https://x", "enableHTTPS": True,
                                            "tlsConfig": {"insecure": True,
                                                          "caFile": "/ca.crt"}}]})
