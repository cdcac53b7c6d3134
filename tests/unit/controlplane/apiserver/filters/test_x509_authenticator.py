"""The x509 client-certificate authenticator (issue 21): CN/O of a certificate the cluster
CA signed become user and groups; another CA's, an expired one, a serving-only one are
refused with Go's reasons; the server's TLS asks for a certificate without judging it in
the handshake (Go's RequestClientCert), so the authenticator sees a foreign one."""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykubelet.controlplane.apiserver.filters.x509 import (
    CertificateError,
    X509Authenticator,
    request_client_certificates,
)
from pykubelet.controlplane.apiserver.serving import server_tls_context
from pykubelet.controlplane.pki import PKI
from pykubelet.controlplane.registry.store import User


def _der(path: Path) -> bytes:
    return x509.load_pem_x509_certificate(path.read_bytes()).public_bytes(
        serialization.Encoding.DER)


@pytest.fixture
def pki(tmp_path: Path) -> PKI:
    p = PKI(tmp_path / "a")
    p.ensure_ca()
    return p


def test_cn_and_o_are_user_and_groups(pki: PKI) -> None:
    carol = pki.issue_client("carol", "carol", ("devs", "qa"))
    user = X509Authenticator(pki.ca_pem).user(_der(carol.cert))
    assert user == User("carol", ("devs", "qa", "system:authenticated"))
    admin = pki.issue_client("admin", "kubernetes-admin", ("system:masters",))
    got = X509Authenticator(pki.ca_pem).user(_der(admin.cert))
    assert got is not None
    assert got.is_admin


def test_another_cas_certificate_is_refused(pki: PKI, tmp_path: Path) -> None:
    other = PKI(tmp_path / "b")
    mallory = other.issue_client("carol", "carol", ("system:masters",))
    with pytest.raises(CertificateError, match="x509: certificate signed by unknown authority"):
        X509Authenticator(pki.ca_pem).user(_der(mallory.cert))


def test_expired_and_not_yet_valid(pki: PKI) -> None:
    carol = _der(pki.issue_client("carol", "carol", ("devs",)).cert)
    auth = X509Authenticator(pki.ca_pem)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=400)
    with pytest.raises(CertificateError, match=r"certificate has expired or is not yet valid: "
                       r"current time .* is after"):
        auth.user(carol, now=later)
    with pytest.raises(CertificateError, match="is before"):
        auth.user(carol, now=dt.datetime.now(dt.UTC) - dt.timedelta(days=1))


def test_a_serving_certificate_is_no_client(pki: PKI) -> None:
    serving = pki.issue("apiserver", "kube-apiserver", dns=["localhost"])
    with pytest.raises(CertificateError, match="incompatible key usage"):
        X509Authenticator(pki.ca_pem).user(_der(serving.cert))


def test_no_common_name_is_no_opinion(pki: PKI) -> None:
    nameless = pki.issue_client("nameless", "", ("devs",))
    assert X509Authenticator(pki.ca_pem).user(_der(nameless.cert)) is None


async def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> bytes | None:
    """Connect on loopback with ``client`` and trade a line each way (the connection
    must carry data after the handshake, not only complete it); the DER certificate the
    server saw."""
    seen: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        obj = writer.get_extra_info("ssl_object")
        der = obj.getpeercert(binary_form=True)
        line = await reader.readline()
        writer.write(b"echo " + line)
        await writer.drain()
        seen.set_result(der)
        writer.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server)
    try:
        port = srv.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client,
                                                       server_hostname="localhost")
        try:
            writer.write(b"ping\n")
            await writer.drain()
            assert await asyncio.wait_for(reader.readline(), 5) == b"echo ping\n"
            return await asyncio.wait_for(seen, 5)
        finally:
            writer.close()
    finally:
        srv.close()
        await srv.wait_closed()


def test_the_handshake_asks_but_does_not_judge(pki: PKI, tmp_path: Path) -> None:
    serving = pki.issue("apiserver", "kube-apiserver", dns=["localhost"])
    server = server_tls_context(serving.cert, serving.key)
    assert request_client_certificates(server, pki.ca_pem)
    foreign = PKI(tmp_path / "b").issue_client("carol", "carol", ("devs",))
    client = ssl.create_default_context(cadata=pki.ca_pem.decode())
    client.load_cert_chain(foreign.cert, foreign.key)
    der = asyncio.run(_handshake(server, client))
    assert der == _der(foreign.cert)  # seen, to be refused by the authenticator
    with pytest.raises(CertificateError):
        X509Authenticator(pki.ca_pem).user(der or b"")
    # no certificate at all: the handshake still succeeds
    bare = ssl.create_default_context(cadata=pki.ca_pem.decode())
    assert asyncio.run(_handshake(server, bare)) is None


def test_a_verified_certificate_is_remembered_within_its_validity(pki: PKI) -> None:
    carol = _der(pki.issue_client("carol", "carol", ("devs",)).cert)
    auth = X509Authenticator(pki.ca_pem)
    assert auth.user(carol) is not None
    calls = []
    real = auth._verify
    auth._verify = lambda cert, now: calls.append(1) or real(cert, now)  # type: ignore[method-assign]
    assert auth.user(carol) == User("carol", ("devs", "system:authenticated"))
    assert calls == []  # remembered
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=400)
    with pytest.raises(CertificateError, match="expired"):
        auth.user(carol, now=later)  # outside the window: verified again, and refused
    assert calls == [1]
