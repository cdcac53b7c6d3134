"""The control plane's certificates and tokens, made at first start under its root.

``pki/ca.{crt,key}``: a self-signed CA; ``pki/apiserver.{crt,key}``: the serving certificate,
with every name and address clients use in its subjectAltName (Go clients refuse a
CN-only certificate) and re-issued when the set of addresses changes;
``pki/apiserver-kubelet-client.{crt,key}``: what the API server shows nodes' servers.
``tokens.json`` (0600): the admin token, the join token nodes bootstrap with and the
per-node tokens, as k3s keeps its token files. The CA hash nodes pin is kubeadm's:
``sha256:`` and the hex SHA-256 of the CA's SubjectPublicKeyInfo.
"""

from __future__ import annotations

import datetime as dt
import hmac
import ipaddress
import json
import os
import secrets
import socket
import stat
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pycni.atomic_files import write_atomic
from pykubelet.client.bootstrap import ca_cert_hash

__all__ = ["PKI", "CSRRefused", "Tokens", "ca_cert_hash", "host_addresses", "make_private_dir"]

CA_DAYS = 3650
CERT_DAYS = 365
_JOIN_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def make_private_dir(path: Path) -> None:
    """``path`` a directory only its owner reads (0700), also when it already existed with
    a wider mode (an older version's): keys, tokens and the store live in it."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        os.chmod(path, 0o700)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600, atomically, in a 0700 directory."""
    make_private_dir(path.parent)
    write_atomic(path, data, mode=0o600)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def host_addresses() -> list[str]:
    """The IPv4 addresses of this host's interfaces (for the serving certificate)."""
    import psutil

    out = []
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and a.address not in out:
                out.append(a.address)
    return out


def _client_subject(user: str, groups: Sequence[str]) -> x509.Name:
    """O per group, then CN (kubeadm's order); no user: a certificate naming no one (the
    authenticator's no opinion)."""
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    if user:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    return x509.Name(attrs)


@dataclass
class ServingPaths:
    cert: Path
    key: Path


class PKI:
    """The CA and the certificates issued from it, under ``root/pki``."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "pki"
        self.ca_cert_path = self.dir / "ca.crt"
        self.ca_key_path = self.dir / "ca.key"

    def ensure_ca(self) -> None:
        if self.ca_cert_path.exists() and self.ca_key_path.exists():
            self._tighten()
            return
        key = _key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pykube-ca")])
        t = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(t - dt.timedelta(minutes=5))
            .not_valid_after(t + dt.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                         False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256())
        )
        _write_private(self.ca_key_path, _key_pem(key))
        _write_private(self.ca_cert_path, cert.public_bytes(serialization.Encoding.PEM))

    def _tighten(self) -> None:
        """Keys and certificates an older version left readable: 0600 in a 0700 dir."""
        make_private_dir(self.dir)
        for path in self.dir.iterdir():
            if path.is_file() and stat.S_IMODE(path.stat().st_mode) != 0o600:
                os.chmod(path, 0o600)

    def install_ca(self, cert_pem: bytes, key_pem: bytes) -> None:
        """Use a CA made elsewhere (another control plane's, shared through the store)."""
        _write_private(self.ca_key_path, key_pem)
        _write_private(self.ca_cert_path, cert_pem)

    @property
    def ca_pem(self) -> bytes:
        return self.ca_cert_path.read_bytes()

    def issue(
        self, name: str, common_name: str, *, dns: list[str] = (),  # type: ignore[assignment]
        ips: list[str] = (),  # type: ignore[assignment]
        server: bool = True, client: bool = False, organization: str = "",
    ) -> ServingPaths:
        """Issue (or re-issue when its names changed) ``pki/<name>.{crt,key}``."""
        self.ensure_ca()
        paths = ServingPaths(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        want_dns = sorted(set(dns))
        want_ips = sorted(set(ips))
        if paths.cert.exists() and paths.key.exists():
            cert = x509.load_pem_x509_certificate(paths.cert.read_bytes())
            try:
                san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
                have_dns = sorted(san.get_values_for_type(x509.DNSName))
                have_ips = sorted(str(i) for i in san.get_values_for_type(x509.IPAddress))
            except x509.ExtensionNotFound:
                have_dns, have_ips = [], []
            fresh = cert.not_valid_after_utc > dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
            # the names asked for, no more: one that listed more is issued again
            if fresh and want_dns == have_dns and want_ips == have_ips:
                return paths
        key = _key()
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization:
            attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in want_dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in want_ips]
        cert = self._sign_leaf(x509.Name(attrs), key.public_key(), usages, names)
        _write_private(paths.key, _key_pem(key))
        _write_private(paths.cert, cert.public_bytes(serialization.Encoding.PEM))
        return paths

    def issue_client(self, name: str, user: str, groups: Sequence[str] = ()) -> ServingPaths:
        """``pki/<name>.{crt,key}``: a client certificate for ``user`` in ``groups`` (the
        subject's CN and O, which the API server's x509 authenticator reads back), as
        kubeadm makes ``kubernetes-admin``'s; kept while it is fresh and names the same."""
        self.ensure_ca()
        paths = ServingPaths(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        subject = _client_subject(user, groups)
        if paths.cert.exists() and paths.key.exists():
            cert = x509.load_pem_x509_certificate(paths.cert.read_bytes())
            fresh = cert.not_valid_after_utc > dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
            if fresh and cert.subject == subject and self._signed_by_ca(cert):
                return paths
        cert_pem, key_pem = self.sign_client(user, groups)
        _write_private(paths.key, key_pem)
        _write_private(paths.cert, cert_pem)
        return paths

    def sign_client(self, user: str, groups: Sequence[str] = ()) -> tuple[bytes, bytes]:
        """(certificate, key) PEM of a new client certificate for ``user`` in ``groups``,
        kept nowhere (kubeadm kubeconfig user's)."""
        key = _key()
        cert = self._sign_leaf(_client_subject(user, groups), key.public_key(),
                               [ExtendedKeyUsageOID.CLIENT_AUTH], [])
        return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)

    def _signed_by_ca(self, cert: x509.Certificate) -> bool:
        """Was ``cert`` signed by this CA (not by one an HA peer's CA replaced)?"""
        try:
            cert.verify_directly_issued_by(x509.load_pem_x509_certificate(self.ca_pem))
        except (ValueError, TypeError, InvalidSignature):
            return False
        return True

    def sign_node_csr(self, csr_pem: bytes, node: str, addresses: Collection[str]) -> bytes:
        """A node's serving certificate from its CSR (kubelet's TLS bootstrap, approved
        here): the subject must be ``system:node:<node>``, the names only the node's own
        name and the ``addresses`` it may hold (as an approver of kubelet-serving CSRs
        checks), or the CSR is refused (``CSRRefused``). The certificate's subject is
        made here, not copied, and it serves only (no client use)."""
        try:
            csr = x509.load_pem_x509_csr(csr_pem)
        except ValueError:
            raise ValueError("csr: not a PEM certificate signing request") from None
        if not csr.is_signature_valid:
            raise ValueError("csr: bad signature")
        cns = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        if not cns or cns[0].value != f"system:node:{node}":
            raise ValueError(f'csr: subject must be "system:node:{node}"')
        names: list[x509.GeneralName] = [x509.DNSName(node)]
        try:
            san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            san = x509.SubjectAlternativeName([])
        for name in san:
            if isinstance(name, x509.DNSName) and name.value == node:
                continue
            if isinstance(name, x509.IPAddress) and str(name.value) in addresses:
                names.append(name)
                continue
            what = ("DNS name" if isinstance(name, x509.DNSName) else
                    "IP address" if isinstance(name, x509.IPAddress) else "name")
            raise CSRRefused(f'csr: node "{node}" may not have a serving certificate for '
                             f"{what} {str(name.value)!r} (only its own name and the "
                             "addresses it joins from)")
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                             x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}")])
        cert = self._sign_leaf(subject, csr.public_key(), [ExtendedKeyUsageOID.SERVER_AUTH],
                               names)
        return cert.public_bytes(serialization.Encoding.PEM)

    def _sign_leaf(self, subject: x509.Name, public_key: CertificatePublicKeyTypes,
                   usages: list[x509.ObjectIdentifier],
                   names: list[x509.GeneralName]) -> x509.Certificate:
        """A leaf certificate the CA signs, as every one here is: valid from five minutes ago
        (clock skew) for CERT_DAYS, not a CA, digital signature and key encipherment, the
        extended ``usages``, and the subject alternative ``names`` when there are any."""
        ca_key = serialization.load_pem_private_key(self.ca_key_path.read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(self.ca_pem)
        t = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject).issuer_name(ca_cert.subject)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(t - dt.timedelta(minutes=5))
            .not_valid_after(t + dt.timedelta(days=CERT_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False,
                                         False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]


class CSRRefused(ValueError):
    """A node asked for a certificate for names that are not its own."""


class Tokens:
    """The bearer tokens: admin, join (bootstrap) and one per node, in ``tokens.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        data: dict[str, object] = {}
        if path.exists():
            data = json.loads(path.read_text() or "{}")
        self.admin = str(data.get("admin") or secrets.token_urlsafe(32))
        self.join = str(data.get("join") or self._join_token())
        nodes = data.get("nodes") or {}
        self.nodes: dict[str, str] = dict(nodes) if isinstance(nodes, dict) else {}
        if data.get("admin") != self.admin or data.get("join") != self.join:
            self._save()

    @staticmethod
    def _join_token() -> str:
        """A kubeadm-style bootstrap token: ``[a-z0-9]{6}.[a-z0-9]{16}``."""
        pick = secrets.choice
        return ("".join(pick(_JOIN_ALPHABET) for _ in range(6)) + "."
                + "".join(pick(_JOIN_ALPHABET) for _ in range(16)))

    def _save(self) -> None:
        body = {"admin": self.admin, "join": self.join, "nodes": self.nodes}
        _write_private(self.path, json.dumps(body, indent=2).encode())

    def save(self) -> None:
        with self._lock:
            self._save()

    def merge_nodes(self, nodes: dict[str, str]) -> None:
        """Take node tokens made elsewhere (another control plane over the same store)."""
        with self._lock:
            self.nodes.update(nodes)
            self._save()

    def new_node_token(self, node: str) -> str:
        """A new token for ``node``, replacing the one it had: every join gets its own
        credentials, and those handed out before stop working."""
        with self._lock:
            token = secrets.token_urlsafe(32)
            self.nodes[node] = token
            self._save()
            return token

    def identify(self, token: str) -> tuple[str, str] | None:
        """("admin"|"join"|"node", node name) for a valid token, else None."""
        if hmac.compare_digest(token, self.admin):
            return ("admin", "")
        if hmac.compare_digest(token, self.join):
            return ("join", "")
        for node, t in list(self.nodes.items()):
            if hmac.compare_digest(token, t):
                return ("node", node)
        return None
