"""X.509 client certificates (kube-apiserver's x509 request authenticator,
staging/src/k8s.io/apiserver/pkg/authentication/request/x509): a certificate the client
showed in the TLS handshake, verified against the cluster CA (``--client-ca-file``) for
client authentication, names the user by its subject's CommonName and the groups by its
Organizations (CommonNameUserConversion).

As upstream's server (Go's ``tls.RequestClientCert``), the handshake asks for a
certificate but does not judge it: the authenticator does, so a certificate from another
CA is a 401 with the other authenticators tried first, not a failed handshake.
:func:`request_client_certificates` makes Python's server context behave so.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import logging
import ssl
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubelet.api.machinery import timeutil
from pykubelet.controlplane.registry.store import User

log = logging.getLogger(__name__)

AUTHENTICATED = "system:authenticated"
_SSL_VERIFY_PEER = 0x01


class CertificateError(ValueError):
    """A client certificate that does not verify (the request is then 401 unless another
    authenticator knows it)."""


CACHE_SIZE = 1024


class X509Authenticator:
    """Users of client certificates the cluster CA signed directly. A certificate that
    verified is remembered (by its DER bytes) with its validity window, so a client's
    requests after its first cost a dict lookup and a time check, not a signature check
    (0.25 ms each)."""

    def __init__(self, ca_pem: bytes) -> None:
        self.ca = x509.load_pem_x509_certificate(ca_pem)
        # DER -> (user, not before, not after) of certificates that verified
        self._verified: dict[bytes, tuple[User | None, dt.datetime, dt.datetime]] = {}

    def user(self, der: bytes, now: dt.datetime | None = None) -> User | None:
        """The certificate's user (its CN, its O as groups, plus system:authenticated),
        None for a certificate with no CN (upstream: no opinion), or CertificateError with
        the reason it does not verify (upstream's ``verifying certificate ... failed``)."""
        now = now or dt.datetime.now(dt.UTC)
        hit = self._verified.get(der)
        if hit is not None and hit[1] <= now <= hit[2]:
            return hit[0]
        user, cert = self._user(der, now)
        if len(self._verified) >= CACHE_SIZE:
            self._verified.clear()
        self._verified[der] = (user, cert.not_valid_before_utc, cert.not_valid_after_utc)
        return user

    def _user(self, der: bytes, now: dt.datetime) -> tuple[User | None, x509.Certificate]:
        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError as exc:
            raise CertificateError(f"x509: malformed certificate: {exc}") from None
        why = self._verify(cert, now)
        if why:
            raise CertificateError(
                f"verifying certificate {_identifier(cert)} failed: x509: {why}")
        cn = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        if not cn or not cn[0]:
            return None, cert
        groups = [str(a.value) for a in
                  cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        if AUTHENTICATED not in groups:  # the authenticated group adder
            groups.append(AUTHENTICATED)
        return User(cn[0], tuple(groups)), cert

    def _verify(self, cert: x509.Certificate, now: dt.datetime) -> str:
        """Go's Certificate.Verify with the CA as the only root and the client-auth usage
        ("" when it verifies)."""
        try:
            cert.verify_directly_issued_by(self.ca)
        except (ValueError, TypeError, InvalidSignature):
            return "certificate signed by unknown authority"
        if now < cert.not_valid_before_utc:
            return "certificate has expired or is not yet valid: current time " \
                f"{_rfc3339(now)} is before {_rfc3339(cert.not_valid_before_utc)}"
        if now > cert.not_valid_after_utc:
            return "certificate has expired or is not yet valid: current time " \
                f"{_rfc3339(now)} is after {_rfc3339(cert.not_valid_after_utc)}"
        try:
            usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        except x509.ExtensionNotFound:
            return ""  # no EKU: any usage, as Go's verifier
        if ExtendedKeyUsageOID.CLIENT_AUTH not in usages and (
                ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in usages):
            return "certificate specifies an incompatible key usage"
        return ""


def _rfc3339(t: dt.datetime) -> str:
    return timeutil.rfc3339(t)


def _identifier(cert: x509.Certificate) -> str:
    """Which certificate failed, for the log: its serial, subject and issuer."""
    return (f'SN={cert.serial_number}, subject="{cert.subject.rfc4514_string()}", '
            f'issuer="{cert.issuer.rfc4514_string()}"')


def peer_certificate(transport: Any) -> bytes | None:
    """The DER certificate the client of ``transport`` (an aiohttp request's) showed, or
    None (no TLS, or no certificate)."""
    if transport is None:
        return None
    obj = transport.get_extra_info("ssl_object")
    if obj is None:
        return None
    der = obj.getpeercert(binary_form=True)
    return der if der else None


# -- asking for certificates without judging them in the handshake -----------------------
_VERIFY_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_libssl: Any = None  # the libssl Python's _ssl uses, once loaded


def _accept(ok: int, store: int | None) -> int:
    """OpenSSL's verify callback: go on whatever the verdict. A failed check leaves its
    error in the thread's OpenSSL error queue, which Python's ssl would report as the
    connection's next read error ("[ASN1] EVP lib"): it is cleared here."""
    if not ok and _libssl is not None:
        _libssl.ERR_clear_error()
    return 1


_accept_any = _VERIFY_CB(_accept)  # kept alive: OpenSSL holds its address


def request_client_certificates(ctx: ssl.SSLContext, ca_pem: bytes) -> bool:
    """Make the server context ``ctx`` ask clients for a certificate (optional) and leave
    judging it to :class:`X509Authenticator`, as Go's ``tls.RequestClientCert``. Python's
    ssl module has no such mode (CERT_OPTIONAL fails the handshake on a certificate from
    another CA), so OpenSSL's verify callback is set on the context's SSL_CTX. Returns
    False when that cannot be done safely; the context then verifies in the handshake
    (CERT_OPTIONAL against the CA): certificates still work, a foreign one is refused
    there instead of with a 401."""
    ctx.load_verify_locations(cadata=ca_pem.decode())
    ctx.post_handshake_auth = False  # newPySSLSocket would reset the callback otherwise
    ctx.verify_mode = ssl.CERT_OPTIONAL
    global _libssl
    try:
        lib = ctypes.CDLL(ssl._ssl.__file__)  # type: ignore[attr-defined]
        lib.ERR_clear_error.argtypes, lib.ERR_clear_error.restype = [], None
        get_mode = lib.SSL_CTX_get_verify_mode
        get_mode.argtypes, get_mode.restype = [ctypes.c_void_p], ctypes.c_int
        set_verify = lib.SSL_CTX_set_verify
        set_verify.argtypes, set_verify.restype = [ctypes.c_void_p, ctypes.c_int,
                                                   _VERIFY_CB], None
        get_options = lib.SSL_CTX_get_options
        get_options.argtypes, get_options.restype = [ctypes.c_void_p], ctypes.c_uint64
        # CPython's PySSLContext: PyObject_HEAD, then the SSL_CTX pointer
        ptr = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
        # make sure it is that pointer: its verify mode and options read back as Python's
        if (not ptr or get_mode(ptr) != _SSL_VERIFY_PEER
                or get_options(ptr) != int(ctx.options)):
            raise OSError("the SSL_CTX of this Python's SSLContext was not found")
        _libssl = lib
        set_verify(ptr, _SSL_VERIFY_PEER, _accept_any)
    except (OSError, AttributeError) as exc:
        log.warning("client certificates are verified in the TLS handshake (%s)", exc)
        return False
    return True
