"""How a node joins a control plane (kubeadm's discovery + kubelet's TLS bootstrap, small).

1. Discovery: fetch the cluster CA from ``/cacerts`` without trusting the connection, and
   trust it only if its hash is the ``caCertHash`` the join command gave
   (``sha256:`` + hex SHA-256 of the CA's SubjectPublicKeyInfo, kubeadm's
   discovery-token-ca-cert-hash).
2. Bootstrap: with the join token, send the node's name and a certificate signing request
   for its serving certificate (the node's own key never leaves it); the control plane
   answers with the node's token (which may only act as ``system:node:<name>``) and the
   signed certificate.
3. Keep the credentials under the node's root (0600) and reuse them on the next start; a
   node joins again only when they are missing or the certificate is about to expire.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import ssl
import subprocess
import sys
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import urllib3

from pycni.atomic_files import write_atomic

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

# cryptography (~8 MiB RSS, its Rust extension ~4 MiB PSS) is imported by the functions
# that need it, not here: a worker's agent joins through join_in_child and never loads it


class BootstrapError(Exception):
    """Joining failed; the message says why in one line."""


def ca_cert_hash(ca_pem: bytes) -> str:
    """kubeadm's discovery-token-ca-cert-hash of a CA certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate(ca_pem)
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()


@dataclass(frozen=True)
class NodeCredentials:
    server: str
    token: str
    ca_pem: bytes
    cert_path: Path
    key_path: Path


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, data, mode=0o600)


def fetch_ca(server: str, expected_hash: str, timeout: float = 10.0) -> bytes:
    """The cluster CA, verified against ``expected_hash`` (not the TLS connection)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the hash, not the connection, is the trust anchor
    pool = urllib3.PoolManager(ssl_context=ctx, retries=False,
                               timeout=urllib3.Timeout(connect=5.0, read=timeout))
    try:
        with warnings.catch_warnings():  # unverified on purpose: the hash decides
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
            resp = pool.request("GET", server.rstrip("/") + "/cacerts")
    except urllib3.exceptions.HTTPError as exc:
        raise BootstrapError(f"server {server}: cannot reach it ({getattr(exc, 'reason', exc)})"
                             ) from None
    if resp.status != 200:
        raise BootstrapError(f"server {server}: /cacerts answered HTTP {resp.status}")
    pem = bytes(resp.data)
    try:
        got = ca_cert_hash(pem)
    except ValueError:
        raise BootstrapError(f"server {server}: /cacerts is not a PEM certificate") from None
    if expected_hash and got != expected_hash.strip():
        raise BootstrapError(f"caCertHash: the server's CA hash is {got}, not {expected_hash} "
                             "(wrong server, or a stale join command)")
    return pem


def _csr(node: str, addresses: list[str], key: ec.EllipticCurvePrivateKey) -> bytes:
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    names: list[x509.GeneralName] = [x509.DNSName(node)]
    for a in addresses:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(a)))
        except ValueError:
            names.append(x509.DNSName(a))
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([
               x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
               x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}")]))
           .add_extension(x509.SubjectAlternativeName(names), critical=False)
           .sign(key, hashes.SHA256()))
    return csr.public_bytes(serialization.Encoding.PEM)


def _cert_fresh(path: Path, addresses: list[str]) -> bool:
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return False
    if cert.not_valid_after_utc < dt.datetime.now(dt.UTC) + dt.timedelta(days=7):
        return False
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have = {str(i) for i in san.get_values_for_type(x509.IPAddress)} | set(
        san.get_values_for_type(x509.DNSName))
    return set(addresses) <= have


def join(server: str, join_token: str, expected_ca_hash: str, node: str,
         addresses: list[str], state_dir: Path, *, servers: Sequence[str] = ()
         ) -> NodeCredentials:
    """The node's credentials: the ones kept in ``state_dir`` when still good for this
    server and these addresses, else fresh ones from the control plane.

    ``servers`` are the API servers ``server`` stands for when it is a local load
    balancer (whose port changes at every start): the credentials are recorded for the
    first of them and reused when recorded for any of them."""
    known = [u.rstrip("/") for u in servers] or [server.rstrip("/")]
    paths = {n: state_dir / n for n in ("ca.crt", "kubelet.crt", "kubelet.key", "token",
                                        "server")}
    if all(p.exists() for p in paths.values()):
        saved_server = paths["server"].read_text().strip()
        ca = paths["ca.crt"].read_bytes()
        if (saved_server.rstrip("/") in known and (not expected_ca_hash
                                        or ca_cert_hash(ca) == expected_ca_hash.strip())
                and _cert_fresh(paths["kubelet.crt"], addresses)):
            return NodeCredentials(server, paths["token"].read_text().strip(), ca,
                                   paths["kubelet.crt"], paths["kubelet.key"])
    if not join_token:
        raise BootstrapError("token: required to join a control plane (the join command's "
                             "--token)")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca = fetch_ca(server, expected_ca_hash)
    key = ec.generate_private_key(ec.SECP256R1())
    body = json.dumps({"nodeName": node, "csr": _csr(node, addresses, key).decode()}).encode()
    pool = urllib3.PoolManager(ssl_context=ssl.create_default_context(cadata=ca.decode()),
                               retries=False, timeout=urllib3.Timeout(connect=5.0, read=30.0))
    try:
        resp = pool.request("POST", server.rstrip("/") + "/bootstrap/node", body=body,
                            headers={"Authorization": f"Bearer {join_token}",
                                     "Content-Type": "application/json"})
    except urllib3.exceptions.HTTPError as exc:
        raise BootstrapError(f"server {server}: {getattr(exc, 'reason', exc)}") from None
    try:
        answer = json.loads(resp.data)
    except ValueError:
        answer = {}
    if resp.status != 200:
        why = answer.get("message") or f"HTTP {resp.status}"
        if resp.status == 401:
            why = "the join token was refused"
        raise BootstrapError(f"joining {server} as {node}: {why}")
    _write(paths["ca.crt"], ca)
    _write(paths["kubelet.key"], key.private_bytes(serialization.Encoding.PEM,
                                                   serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
    _write(paths["kubelet.crt"], answer["certificate"].encode())
    _write(paths["token"], answer["token"].encode())
    _write(paths["server"], known[0].encode())
    return NodeCredentials(server, answer["token"], ca, paths["kubelet.crt"],
                           paths["kubelet.key"])


def join_in_child(server: str, join_token: str, expected_ca_hash: str, node: str,
                  addresses: list[str], state_dir: Path, *, servers: Sequence[str] = ()
                  ) -> NodeCredentials:
    """``join`` in a child Python process: what a worker's agent calls, so cryptography
    (CSR, key and certificate parsing) is loaded by a process that exits, not by the
    agent that lives on (~8 MiB RSS). The token goes over stdin, never argv; the child
    answers the credentials as JSON, or its BootstrapError's line with exit status 1."""
    request = {"server": server, "join_token": join_token,
               "expected_ca_hash": expected_ca_hash, "node": node,
               "addresses": list(addresses), "state_dir": str(state_dir),
               "servers": list(servers)}
    proc = subprocess.run([sys.executable, "-m", "pykubelet.client.bootstrap"],
                          input=json.dumps(request), capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise BootstrapError(lines[-1] if lines else f"join exited with {proc.returncode}")
    answer = json.loads(proc.stdout)
    return NodeCredentials(answer["server"], answer["token"], answer["ca_pem"].encode(),
                           Path(answer["cert_path"]), Path(answer["key_path"]))


def _child_main() -> int:
    """`python -m pykubelet.client.bootstrap`: join_in_child's other side."""
    req: dict[str, Any] = json.loads(sys.stdin.read())
    try:
        creds = join(req["server"], req["join_token"], req["expected_ca_hash"], req["node"],
                     req["addresses"], Path(req["state_dir"]), servers=req["servers"])
    except BootstrapError as exc:
        print(exc, file=sys.stderr)
        return 1
    answer = {k: str(v) for k, v in asdict(creds).items()}
    answer["ca_pem"] = creds.ca_pem.decode()
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
