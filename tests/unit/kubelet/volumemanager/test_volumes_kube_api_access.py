"""The kube-api-access projected volume on the node, without root: token (from the token
manager, bound to the pod, for the pod's service account), ca.crt (kube-root-ca.crt) and
namespace in one set of files, written atomically; a token the control plane will not
give fails the mount in kubelet's words."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod
from pykubelet.controlplane.registry.serviceaccountadmission import token_volume_source
from pykubelet.kubelet.token.manager import TokenFetchError
from pykubelet.kubelet.volumemanager.volumes import (
    VolumeError,
    _projected_files,
    write_projected,
)

ALLOC = {"cpu": Fraction(1), "memory": Fraction(1 << 30), "ephemeral-storage": Fraction(0)}


class Tokens:
    def __init__(self, fail: bool = False) -> None:
        self.asked: list[tuple[Any, ...]] = []
        self.fail = fail

    def pod_token(self, *args: Any) -> bytes:
        if self.fail:
            raise TokenFetchError("failed to fetch token: serviceaccounts \"reader\" not found")
        self.asked.append(args)
        return b"header.payload.sig"


class Refs:
    def __init__(self, tokens: Tokens) -> None:
        self.tokens = tokens

    def configmap(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return {"ca.crt": b"PEM"} if name == "kube-root-ca.crt" else None

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return None


def pod() -> Pod:
    from pykubelet.api.machinery import codec

    source = codec.encode(token_volume_source())
    return set_defaults_pod(decode_pod({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "team-a", "uid": "u-1"},
        "spec": {"serviceAccountName": "reader",
                 "containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [{"name": "kube-api-access-abcde", "projected": source}]}}))


def test_token_ca_and_namespace_files(tmp_path: Path) -> None:
    p = pod()
    tokens = Tokens()
    files = _projected_files(p, p.spec.volumes[0], Refs(tokens), ALLOC)  # type: ignore[arg-type]
    assert files == {"token": (b"header.payload.sig", 0o644), "ca.crt": (b"PEM", 0o644),
                     "namespace": (b"team-a", 0o644)}
    assert tokens.asked == [("team-a", "reader", "", 3607, "web", "u-1")]
    target = tmp_path / "vol"
    write_projected(target, files)
    assert (target / "token").read_bytes() == b"header.payload.sig"
    assert (target / "token").is_symlink()  # through ..data, swapped in one rename


def test_a_refused_token_fails_the_mount() -> None:
    p = pod()
    with pytest.raises(VolumeError, match=r'MountVolume.SetUp failed for volume '
                                          r'"kube-api-access-abcde" : failed to fetch token'):
        _projected_files(p, p.spec.volumes[0], Refs(Tokens(fail=True)),  # type: ignore[arg-type]
                         ALLOC)
