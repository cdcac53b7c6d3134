"""The service-account signing key, as kubeadm keeps it: ``pki/sa.key`` (RSA 2048, PKCS#8
PEM, 0600) beside the CA, made at first start; the API server signs TokenRequests with
it (--service-account-signing-key-file) and verifies tokens with its public half
(--service-account-key-file). Control planes over one etcd share it as they share the CA
(:mod:`pykubelet.controlplane.shared`), so a token one API server issued is good on all."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pycni.atomic_files import write_atomic
from pykubelet.controlplane.pki import make_private_dir
from pykubelet.controlplane.serviceaccount.jwt import SigningKey

KEY_BITS = 2048  # kubeadm's sa.key


def key_path(pki_dir: Path) -> Path:
    return pki_dir / "sa.key"


def new_key_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def install_key(pki_dir: Path, pem: bytes) -> None:
    """Use ``pem`` (checked to be a signing key) as this root's key."""
    load_key_pem(pem)
    make_private_dir(pki_dir)
    write_atomic(key_path(pki_dir), pem, mode=0o600)


def ensure_key(pki_dir: Path) -> bytes:
    """This root's signing key as PEM, made the first time."""
    path = key_path(pki_dir)
    if not path.exists():
        install_key(pki_dir, new_key_pem())
    return path.read_bytes()


def load_key_pem(pem: bytes) -> SigningKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise ValueError("the service-account key must be an RSA or ECDSA private key")
    return key
