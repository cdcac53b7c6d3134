"""ConfigMap and Secret references: env valueFrom, envFrom, and projected volume files
written atomically (kubelet's AtomicWriter)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pykubelet.api.manifest import parse_pod
from pykubelet.kubelet.kuberuntime.container_config import ContainerConfigError, make_environment
from pykubelet.kubelet.volumemanager.volumes import write_projected


class Refs:
    def __init__(self) -> None:
        self.cms = {"cfg": {"mode": b"fast", "level": b"3", "bad key": b"x"}}
        self.secrets = {"creds": {"password": b"s3cret"}}

    def configmap(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return self.cms.get(name)

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return self.secrets.get(name)

    def services(self, namespace: str) -> list[dict[str, object]]:
        return []


def pod(env: list[dict[str, object]], env_from: list[dict[str, object]] | None = None):  # type: ignore[no-untyped-def]
    return parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                      "spec": {"containers": [{"name": "c", "image": "i", "env": env,
                                               "envFrom": env_from or []}]}})


def test_env_from_configmaps_and_secrets_in_upstream_order() -> None:
    p = pod([{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
             {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
             {"name": "CFG_level", "value": "override $(CFG_mode)"}],
            [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}])
    env = make_environment(p, p.spec.containers[0], "10.0.0.1", refs=Refs())
    assert env == [("CFG_level", "override fast"), ("CFG_mode", "fast"), ("MODE", "fast"),
                   ("PW", "s3cret")]  # the invalid key "bad key" is skipped


def test_missing_objects_and_keys_are_config_errors_unless_optional() -> None:
    p = pod([{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}])
    with pytest.raises(ContainerConfigError, match='configmap "nope" not found'):
        make_environment(p, p.spec.containers[0], "", refs=Refs())
    p = pod([{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k"}}}])
    with pytest.raises(ContainerConfigError, match="couldn't find key k in ConfigMap default/cfg"):
        make_environment(p, p.spec.containers[0], "", refs=Refs())
    p = pod([{"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k",
                                                          "optional": True}}}],
            [{"secretRef": {"name": "gone", "optional": True}}])
    assert make_environment(p, p.spec.containers[0], "", refs=Refs()) == []
    with pytest.raises(ContainerConfigError, match="need a control plane"):
        make_environment(p, p.spec.containers[0], "", refs=None)


def test_projected_files_swap_atomically(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert write_projected(target, {"a": (b"1", 0o644), "dir/b": (b"2", 0o600)})
    assert (target / "a").read_bytes() == b"1"
    assert (target / "dir" / "b").read_bytes() == b"2"
    assert os.readlink(target / "a") == "..data/a"
    assert stat.S_IMODE((target / "dir" / "b").stat().st_mode) == 0o600
    first = os.readlink(target / "..data")
    assert not write_projected(target, {"a": (b"1", 0o644), "dir/b": (b"2", 0o600)})
    assert os.readlink(target / "..data") == first  # unchanged: nothing rewritten
    assert write_projected(target, {"a": (b"new", 0o644)})
    assert (target / "a").read_bytes() == b"new"
    assert not (target / "dir").exists()  # a key that went away goes away
    stamps = [p for p in target.iterdir() if p.name.startswith("..") and p.name != "..data"]
    assert len(stamps) == 1  # the old generation is removed
