"""imagePullSecrets to registry credentials, as kubelet's credentialprovider keyring does.

A ``kubernetes.io/dockerconfigjson`` Secret holds ``{"auths": {REGISTRY: {"username",
"password", "auth", "identitytoken", "registrytoken"}}}`` (``kubernetes.io/dockercfg``: the
same map without ``auths``). ``keyring_from_secrets`` turns the pod's secrets into entries;
``credentials_for_image`` returns those that match an image, most specific first: a key
matches when its host (``*`` globs one label, ports must agree) and path prefix match the
image's registry and repository; ``docker.io`` images match Docker Hub's historic names
(``index.docker.io``, ``https://index.docker.io/v1/``). kubelet tries each in turn, then
anonymous when none match.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykubelet._proto.runtime.v1 import api_pb2 as pb

DOCKERCONFIGJSON = "kubernetes.io/dockerconfigjson"
DOCKERCFG = "kubernetes.io/dockercfg"
_HUB_ALIASES = ("index.docker.io", "docker.io", "registry-1.docker.io")


class PullSecretError(ValueError):
    """A secret that is not a usable docker config (named, with the field at fault)."""


@dataclass(frozen=True)
class RegistryAuth:
    key: str  # the registry as the secret names it
    username: str = ""
    password: str = ""
    identity_token: str = ""
    registry_token: str = ""

    def to_pb(self) -> pb.AuthConfig:
        return pb.AuthConfig(username=self.username, password=self.password,
                             server_address=self.key, identity_token=self.identity_token,
                             registry_token=self.registry_token)


def parse_docker_config(data: bytes | str | Mapping[str, Any], *,
                        what: str = "secret") -> list[RegistryAuth]:
    """A .dockerconfigjson (or legacy .dockercfg) document -> one entry per registry."""
    if isinstance(data, bytes | str):
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise PullSecretError(f"{what}: not JSON: {exc}") from exc
    else:
        doc = data
    if not isinstance(doc, Mapping):
        raise PullSecretError(f"{what}: must be a JSON object")
    auths = doc.get("auths", doc) if "auths" in doc else doc
    if not isinstance(auths, Mapping):
        raise PullSecretError(f"{what}.auths: must be an object")
    out = []
    for key, entry in auths.items():
        if not isinstance(entry, Mapping):
            raise PullSecretError(f"{what}.auths[{key!r}]: must be an object")
        user, password = str(entry.get("username", "")), str(entry.get("password", ""))
        if entry.get("auth"):
            try:
                decoded = base64.b64decode(str(entry["auth"]), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise PullSecretError(f"{what}.auths[{key!r}].auth: not base64") from exc
            if ":" not in decoded:
                raise PullSecretError(f"{what}.auths[{key!r}].auth: not user:password")
            user, _, password = decoded.partition(":")
        out.append(RegistryAuth(str(key), user, password, str(entry.get("identitytoken", "")),
                                str(entry.get("registrytoken", ""))))
    return out


def keyring_from_secrets(secrets: Iterable[Mapping[str, Any]]) -> list[RegistryAuth]:
    """Entries from v1 Secrets (as the API returns them: ``data`` values base64)."""
    out: list[RegistryAuth] = []
    for secret in secrets:
        name = (secret.get("metadata") or {}).get("name", "?")
        kind = secret.get("type", "")
        field = {DOCKERCONFIGJSON: ".dockerconfigjson", DOCKERCFG: ".dockercfg"}.get(kind)
        if field is None:
            continue  # kubelet ignores secrets of other types
        raw = (secret.get("data") or {}).get(field)
        if raw is None:
            raise PullSecretError(f"secret {name}: data[{field}] is missing")
        try:
            decoded = base64.b64decode(raw, validate=True)
        except binascii.Error as exc:
            raise PullSecretError(f"secret {name}: data[{field}] is not base64") from exc
        out.extend(parse_docker_config(decoded, what=f"secret {name}"))
    return out


def _split_key(key: str) -> tuple[str, str]:
    """``https://host:port/path/`` -> (host:port, path)."""
    k = key.strip()
    for scheme in ("https://", "http://"):
        if k.startswith(scheme):
            k = k[len(scheme):]
    host, _, path = k.partition("/")
    if host in _HUB_ALIASES:
        host, path = "docker.io", "" if path.startswith(("v1", "v2")) else path
    return host.lower(), path.strip("/")


def _host_matches(pattern: str, host: str) -> bool:
    p_host, _, p_port = pattern.partition(":")
    h_host, _, h_port = host.partition(":")
    if p_port != h_port:
        return False
    p_labels, h_labels = p_host.split("."), h_host.split(".")
    return len(p_labels) == len(h_labels) and all(
        fnmatch.fnmatchcase(h, p) for p, h in zip(p_labels, h_labels, strict=True))


def registry_and_path(image: str) -> tuple[str, str]:
    """docker's reference rules, as the keyring needs them: ``busybox:1`` ->
    ("docker.io", "library/busybox"), ``reg:5000/a/b@sha256:..`` -> ("reg:5000", "a/b")."""
    name = image.strip().split("@", 1)[0]
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        name = name[:colon]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        host, path = first.lower(), rest
    else:
        host, path = "docker.io", name
    if host in _HUB_ALIASES:
        host = "docker.io"
    if host == "docker.io" and "/" not in path:
        path = "library/" + path
    return host, path


def credentials_for_image(keyring: Iterable[RegistryAuth], image: str) -> list[RegistryAuth]:
    """The entries whose registry (and path) match ``image``, most specific first."""
    host, repo = registry_and_path(image)
    hits = []
    for entry in keyring:
        k_host, k_path = _split_key(entry.key)
        if not _host_matches(k_host, host):
            continue
        if k_path and not (repo == k_path or repo.startswith(k_path + "/")):
            continue
        hits.append((len(k_host) + len(k_path), entry))
    hits.sort(key=lambda h: -h[0])
    return [e for _, e in hits]
