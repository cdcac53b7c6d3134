"""Node serving certificates: the join token gets one only for the node's own name and
its own addresses, and the API server checks on every connection to a node's server that
the certificate is that node's (logs, exec, attach, port-forward)."""

from __future__ import annotations

import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def csr(cn: str, dns: list[str] = (), ips: list[str] = (),  # type: ignore[assignment]
        org: str = "system:nodes") -> str:
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
        x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    req = builder.sign(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256())
    return req.public_bytes(serialization.Encoding.PEM).decode()


@pytest.mark.parametrize(("dns", "ips"), [
    (["kubernetes"], []),
    (["kubernetes.default.svc"], []),
    (["localhost"], []),
    (["*.example.com"], []),
    (["cert-n1", "cert-n2"], []),  # another node's name
    (["cert-n1"], ["127.0.0.1"]),  # the API server's own address
    (["cert-n1"], ["192.0.2.77"]),  # an address it does not join from
])
def test_the_join_token_gets_no_certificate_for_other_names(
        cluster: Any, dns: list[str], ips: list[str]) -> None:
    code, body = cluster.join("cert-n1", csr=csr("system:node:cert-n1", dns, ips))
    assert code == 403, body
    assert body["reason"] == "Forbidden"
    assert "csr:" in body["message"]


@pytest.mark.parametrize("name", ["kubernetes", "kubernetes.default.svc", "localhost"])
def test_no_node_takes_a_name_of_the_api_server(cluster: Any, name: str) -> None:
    code, body = cluster.join(name, csr=csr(f"system:node:{name}", [name]))
    assert code == 403, body
    assert body["message"] == f"node name {name!r} is a name of the API server"


def test_a_node_certificate_holds_its_name_and_is_for_serving_only(cluster: Any) -> None:
    code, body = cluster.join("cert-n3", csr=csr("system:node:cert-n3", ["cert-n3"],
                                                  org="system:masters"))
    assert code == 200, body
    cert = x509.load_pem_x509_certificate(body["certificate"].encode())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["cert-n3"]
    assert san.get_values_for_type(x509.IPAddress) == []
    assert cert.subject.rfc4514_string() == "CN=system:node:cert-n3,O=system:nodes"
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_addresses_a_node_may_hold() -> None:
    """What the join request comes from; a node on the control plane's own host (joining
    over loopback or one of its addresses) may hold the host's addresses, never loopback."""
    from pykubelet.controlplane.server import join_addresses

    host = ["127.0.0.1", "10.1.0.1", "192.168.5.1"]
    assert join_addresses("10.9.0.7", host) == {"10.9.0.7"}
    assert join_addresses("127.0.0.1", host) == {"10.1.0.1", "192.168.5.1"}
    assert join_addresses("10.1.0.1", host) == {"10.1.0.1", "192.168.5.1"}
    assert join_addresses("::ffff:10.9.0.7", host) == {"10.9.0.7"}
    assert join_addresses("", host) == set()


class _Impostor(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"from the node's server\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def node_server(cluster: Any) -> Iterator[tuple[int, Any]]:
    """A node's server on 127.0.0.1 whose certificate the test picks (``use(name)``)."""
    pki = cluster.cp.pki
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)

    def use(node: str) -> None:
        paths = pki.issue(f"test-serving-{node}", f"system:node:{node}", dns=[node],
                          ips=["127.0.0.1"])
        ctx.load_cert_chain(paths.cert, paths.key)

    use("proxy-other")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], use
    finally:
        server.shutdown()
        server.server_close()


def test_the_api_server_checks_the_node_it_reaches_is_that_node(
        cluster: Any, node_server: tuple[int, Any]) -> None:
    port, use = node_server
    admin = cluster.admin
    code, body = admin("POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "proxy-victim"},
        "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})
    assert code == 201, body
    code, body = admin("POST", "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "proxied"},
        "spec": {"nodeName": "proxy-victim", "containers": [{"name": "c", "image": "x"}]}})
    assert code == 201, body
    try:
        # another node's certificate (good for the address, signed by the cluster CA)
        code, body = admin("GET", "/api/v1/namespaces/default/pods/proxied/log")
        assert code == 503, body
        assert "proxy-victim" in body["message"]
        use("proxy-victim")  # the node's own certificate
        code, body = admin("GET", "/api/v1/namespaces/default/pods/proxied/log")
        assert (code, body) == (200, "from the node's server\n")
    finally:
        admin("DELETE", "/api/v1/namespaces/default/pods/proxied", {"gracePeriodSeconds": 0})
        admin("DELETE", "/api/v1/nodes/proxy-victim")


def test_a_node_on_the_hosts_own_address_gets_it_when_the_api_listens_on_loopback(
        cluster: Any) -> None:
    """The single-node default: the API listens on 127.0.0.1 (its certificate names only
    loopback), and the host's agent joins over loopback with the host's address."""
    from pykubelet.controlplane.pki import host_addresses

    addr = next((a for a in host_addresses() if not ipaddress.ip_address(a).is_loopback), None)
    if addr is None:
        pytest.fail("this host has no address but loopback")
    code, body = cluster.join("cert-host", csr=csr("system:node:cert-host", ["cert-host"],
                                                    [addr]))
    assert code == 200, body
    cert = x509.load_pem_x509_certificate(body["certificate"].encode())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(i) for i in sans.get_values_for_type(x509.IPAddress)] == [addr]


def test_issued_and_csr_signed_leaves_are_alike(tmp_path: Any) -> None:
    """PKI.issue and PKI.sign_node_csr make their leaves in one place (issue 25): the same
    validity, constraints and key usage; a SAN only when there are names."""
    from pykubelet.controlplane.pki import CERT_DAYS, PKI

    pki = PKI(tmp_path / "pki")
    issued = x509.load_pem_x509_certificate(
        pki.issue("admin", "kubernetes-admin", organization="system:masters",
                  server=False, client=True).cert.read_bytes())
    signed = x509.load_pem_x509_certificate(
        pki.sign_node_csr(csr("system:node:n1", ["n1"]).encode(), "n1", []))
    ca = x509.load_pem_x509_certificate(pki.ca_pem)
    for cert in (issued, signed):
        assert cert.issuer == ca.subject
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert lifetime.total_seconds() == CERT_DAYS * 86400 + 300
        bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
        assert (bc.critical, bc.value.ca) == (True, False)
        ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
        assert (ku.digital_signature, ku.key_encipherment, ku.key_cert_sign) == (
            True, True, False)
    with pytest.raises(x509.ExtensionNotFound):
        issued.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert list(issued.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH]
