"""imagePullSecrets -> per-registry credentials (kubelet's credentialprovider keyring)."""

from __future__ import annotations

import base64
import json

import pytest

from pykubelet.kubelet.images.pull_secrets import (
    PullSecretError,
    RegistryAuth,
    credentials_for_image,
    keyring_from_secrets,
    parse_docker_config,
)


def secret(name: str, auths: dict, kind: str = "kubernetes.io/dockerconfigjson") -> dict:
    field = ".dockerconfigjson" if kind.endswith("json") else ".dockercfg"
    doc = {"auths": auths} if field == ".dockerconfigjson" else auths
    return {"metadata": {"name": name}, "type": kind,
            "data": {field: base64.b64encode(json.dumps(doc).encode()).decode()}}


def test_dockerconfigjson_username_password_and_auth() -> None:
    auth = base64.b64encode(b"bob:pa:ss").decode()
    ring = keyring_from_secrets([
        secret("a", {"reg.example.com": {"username": "alice", "password": "x"}}),
        secret("b", {"https://index.docker.io/v1/": {"auth": auth}}),
        secret("c", {"legacy.example.com": {"auth": auth}}, kind="kubernetes.io/dockercfg"),
        {"metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {}},
    ])
    assert ring == [RegistryAuth("reg.example.com", "alice", "x"),
                    RegistryAuth("https://index.docker.io/v1/", "bob", "pa:ss"),
                    RegistryAuth("legacy.example.com", "bob", "pa:ss")]
    assert ring[0].to_pb().username == "alice"
    assert ring[0].to_pb().server_address == "reg.example.com"


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("busybox", ["https://index.docker.io/v1/"]),
        ("docker.io/library/busybox:1", ["https://index.docker.io/v1/"]),
        ("reg.example.com/team/app:1", ["reg.example.com/team", "reg.example.com"]),
        ("reg.example.com/other/app", ["reg.example.com"]),
        ("reg.example.com:5000/app", ["reg.example.com:5000"]),
        ("eu.mirror.example.com/app", ["*.mirror.example.com"]),
        ("deep.eu.mirror.example.com/app", []),  # * is one label
        ("localhost:5000/x", []),
    ],
)
def test_matching_is_by_host_port_and_path_most_specific_first(image: str,
                                                                want: list[str]) -> None:
    ring = [RegistryAuth(k) for k in ("reg.example.com", "reg.example.com/team",
                                      "reg.example.com:5000", "*.mirror.example.com",
                                      "https://index.docker.io/v1/", "localhost:6000")]
    assert [a.key for a in credentials_for_image(ring, image)] == want


def test_bad_secrets_name_the_problem() -> None:
    with pytest.raises(PullSecretError, match=r"secret s: data\[.dockerconfigjson\] is missing"):
        keyring_from_secrets([{"metadata": {"name": "s"},
                               "type": "kubernetes.io/dockerconfigjson", "data": {}}])
    with pytest.raises(PullSecretError, match="not JSON"):
        parse_docker_config(b"{nope")
    with pytest.raises(PullSecretError, match=r"auths\['r'\].auth: not base64"):
        parse_docker_config({"auths": {"r": {"auth": "***"}}})
