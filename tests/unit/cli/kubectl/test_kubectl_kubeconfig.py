"""kubectl's rules for reading kubeconfig files (client-go's loading rules)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pykubelet.client.kubeconfig import KubeconfigError, load_merged


def write(path: Path, current: str, contexts: list[str], ns: str = "",
          ca: str = "") -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "c", "cluster": {"server": f"https://{path.stem}:6443",
                                               **({"certificate-authority": ca} if ca else {})}}],
        "users": [{"name": "u", "user": {"tokenFile": "token"}}],
        "contexts": [{"name": c, "context": {"cluster": "c", "user": "u", "namespace": ns}}
                     for c in contexts]}))
    return path


def test_kubeconfig_files_merge_first_wins(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    a = write(tmp_path / "a.yaml", "", ["shared"], ns="from-a")
    (tmp_path / "sub").mkdir()
    b = write(tmp_path / "sub" / "b.yaml", "shared", ["shared", "only-b"], ns="from-b",
              ca="ca.crt")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{a}:{b}")
    cfg = load_merged()
    assert cfg["current-context"] == "shared"  # a set none, b's counts
    contexts = {c["name"]: c["context"]["namespace"] for c in cfg["contexts"]}
    assert contexts == {"shared": "from-a", "only-b": "from-b"}
    (cluster,) = cfg["clusters"]
    assert cluster["cluster"]["server"] == "https://a:6443"  # first file names "c"
    (user,) = cfg["users"]
    assert user["user"]["tokenFile"] == str(tmp_path / "token")  # relative to a.yaml


def test_relative_paths_follow_their_file(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    b = write(tmp_path / "sub" / "b.yaml", "x", ["x"], ca="ca.crt")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    cfg = load_merged(b)
    assert cfg["clusters"][0]["cluster"]["certificate-authority"] == str(
        tmp_path / "sub" / "ca.crt")


def test_explicit_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no such file or directory"):
        load_merged(tmp_path / "nope")


def test_home_config_when_nothing_is_said(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    write(tmp_path / ".kube" / "config", "home", ["home"])
    assert load_merged()["current-context"] == "home"
