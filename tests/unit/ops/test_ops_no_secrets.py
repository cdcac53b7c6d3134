"""No credential is committed: a CI check over the tracked files (``git ls-files``).

A private key once sat in the repository (``.vagrant/pykube/join-key``, the Vagrant lab's
join key, so every clone's lab trusted a published key). This check fails on what must
never be tracked: a private key (PEM or OpenSSH), a bearer token of the kinds this project
makes or reads (bootstrap tokens, JWTs such as ServiceAccount tokens), and a kubeconfig
that carries credentials. Its negative control plants each in a scratch repository, so a
check that silently stopped matching would be noticed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]

# kubeadm's documented example token (``abcdef.0123456789abcdef``), used in tests, is public
ALLOWED_TOKENS = frozenset({"abcdef.0123456789abcdef"})

PRIVATE_KEY = re.compile(rb"-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED) )?PRIVATE KEY-----")
BOOTSTRAP_TOKEN = re.compile(rb"(?<![a-z0-9.])[a-z0-9]{6}\.[a-z0-9]{16}(?![a-z0-9])")
JWT = re.compile(rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
# a kubeconfig's credential fields, as kubectl writes them (client-go's clientcmd/api/v1)
CREDENTIAL_FIELDS = ("token", "client-key-data", "password")


def tracked_files(repo: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True,
                         check=True).stdout
    return sorted(p for p in out.decode().split("\0") if p)


def kubeconfig_credentials(data: bytes) -> list[str]:
    """The users of a kubeconfig (``kind: Config``) that carry a credential."""
    if b"kind" not in data or b"Config" not in data or b"users" not in data:
        return []
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, dict) or doc.get("kind") != "Config":
        return []
    found = []
    for entry in doc.get("users") or []:
        user = entry.get("user") if isinstance(entry, dict) else None
        if isinstance(user, dict) and any(user.get(f) for f in CREDENTIAL_FIELDS):
            found.append(str(entry.get("name")))
    return found


def findings(repo: Path) -> list[str]:
    """``path: what`` for every tracked file holding a key, a token or credentials."""
    found: list[str] = []
    for rel in tracked_files(repo):
        path = repo / rel
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if PRIVATE_KEY.search(data):
            found.append(f"{rel}: a private key")
        tokens = {m.decode() for m in BOOTSTRAP_TOKEN.findall(data)} - ALLOWED_TOKENS
        if tokens:
            found.append(f"{rel}: a bootstrap token")
        if JWT.search(data):
            found.append(f"{rel}: a JWT")
        if rel.endswith((".yaml", ".yml", ".json", "config")) or "kubeconfig" in rel:
            users = kubeconfig_credentials(data)
            if users:
                found.append(f"{rel}: a kubeconfig with credentials for {', '.join(users)}")
    return found


def test_no_private_key_token_or_kubeconfig_is_tracked() -> None:
    assert findings(REPO) == []


def test_the_check_finds_each_kind_of_secret(tmp_path: Path) -> None:
    """Negative control: a scratch repository with one of each is flagged file by file."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    header = "-----BEGIN {}PRIVATE KEY-----\nAAAA\n"
    (tmp_path / "id_ed25519").write_text(header.format("OPENSSH "))
    (tmp_path / "tls.key").write_text(header.format(""))
    (tmp_path / "rsa.pem").write_text(header.format("RSA "))
    # (made up here in pieces, so this file itself holds none)
    token = ".".join(("q7w2e9", "k3j5h7g9f1d3s5a7"))
    (tmp_path / "join.txt").write_text(f"pykubelet run --token {token}\n")
    jwt = ".".join(("eyJhbGciOiJSUzI1NiJ9", "eyJzdWIiOiJzeXN0ZW0ifQ", "c2lnbmF0dXJl"))
    (tmp_path / "sa.py").write_text(f'T = "{jwt}"\n')
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [],
                  "users": [{"name": "admin", "user": {"token": "s3cr3t"}}]}
    (tmp_path / "admin.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    # what must not be flagged: the public key, kubeadm's example token, a kubeconfig
    # that points at a token file, the words alone
    (tmp_path / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3Nz pykube-lab-join\n")
    (tmp_path / "example.md").write_text("--token abcdef.0123456789abcdef; a PRIVATE KEY\n")
    kubeconfig["users"] = [{"name": "u", "user": {"tokenFile": "/run/token"}}]
    (tmp_path / "clean.yaml").write_text(yaml.safe_dump(kubeconfig))
    git("add", ".")
    assert findings(tmp_path) == [
        "admin.kubeconfig: a kubeconfig with credentials for admin",
        "id_ed25519: a private key",
        "join.txt: a bootstrap token",
        "rsa.pem: a private key",
        "sa.py: a JWT",
        "tls.key: a private key",
    ]
