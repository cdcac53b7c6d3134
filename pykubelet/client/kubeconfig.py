"""Kubeconfig files as kubectl reads and kind writes them (client-go's clientcmd rules).

Which file: ``--kubeconfig``, else the first existing file of ``$KUBECONFIG`` (else its
last), else ``~/.kube/config``. Merging a context replaces or appends the cluster, user
and context of that name, keeps everything else (unknown top-level fields too) and can
make it current; removing takes them out of every file of the list and clears
current-context if it was ours. Files are written 0600 under a ``<file>.lock`` taken with
O_EXCL, as client-go locks them.
"""

from __future__ import annotations

import base64
import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from pycni.atomic_files import write_atomic

Config = dict[str, Any]


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be read or used; the message names the file."""


def default_path() -> Path:
    return Path(os.path.expanduser("~")) / ".kube" / "config"


def paths_from_env() -> list[Path]:
    env = os.environ.get("KUBECONFIG", "")
    return [Path(p) for p in env.split(os.pathsep) if p]


def target_path(explicit: str | Path | None = None) -> Path:
    """The file kubectl would write: --kubeconfig, the first existing $KUBECONFIG file
    (else its last), else ~/.kube/config."""
    if explicit:
        return Path(explicit)
    env = paths_from_env()
    for p in env:
        if p.exists():
            return p
    if env:
        return env[-1]
    return default_path()


def loading_paths(explicit: str | Path | None = None) -> list[Path]:
    """The files kubectl reads: --kubeconfig alone, else every file of $KUBECONFIG, else
    ~/.kube/config."""
    if explicit:
        return [Path(explicit)]
    return paths_from_env() or [default_path()]


_PATH_FIELDS = {"clusters": ("certificate-authority",),
                "users": ("client-certificate", "client-key", "tokenFile")}


def load_merged(explicit: str | Path | None = None) -> Config:
    """The configuration kubectl sees (client-go's loading rules): with --kubeconfig that
    file, which must exist; else the files of $KUBECONFIG merged, the first file to name a
    cluster, user or context (or to set current-context) winning; relative file references
    are resolved against the directory of the file that made them."""
    merged = empty()
    seen: dict[str, set[str]] = {"clusters": set(), "users": set(), "contexts": set()}
    for path in loading_paths(explicit):
        if explicit and not path.exists():
            raise KubeconfigError(f"stat {path}: no such file or directory")
        cfg = read(path)
        if not merged["current-context"] and cfg.get("current-context"):
            merged["current-context"] = cfg["current-context"]
        for key in ("clusters", "users", "contexts"):
            for entry in cfg.get(key) or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if not isinstance(name, str) or name in seen[key]:
                    continue
                seen[key].add(name)
                merged[key].append(_resolved(key, entry, path.parent))
    return merged


def _resolved(key: str, entry: dict[str, Any], base: Path) -> dict[str, Any]:
    fields = _PATH_FIELDS.get(key, ())
    inner_key = key[:-1]  # "clusters" -> "cluster"
    inner = entry.get(inner_key)
    if not fields or not isinstance(inner, dict):
        return entry
    fixed = dict(inner)
    for f in fields:
        value = fixed.get(f)
        if isinstance(value, str) and value and not os.path.isabs(value):
            fixed[f] = str(base / value)
    return {**entry, inner_key: fixed}


def empty() -> Config:
    return {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [],
            "users": [], "contexts": [], "current-context": ""}


def admin_kubeconfig(server: str, ca_pem: bytes, token: str, name: str = "pykube") -> Config:
    cfg = empty()
    cfg["clusters"] = [{"name": name, "cluster": {
        "server": server,
        "certificate-authority-data": base64.b64encode(ca_pem).decode()}}]
    cfg["users"] = [{"name": f"{name}-admin", "user": {"token": token}}]
    cfg["contexts"] = [{"name": name, "context": {"cluster": name, "user": f"{name}-admin",
                                                  "namespace": "default"}}]
    cfg["current-context"] = name
    return cfg


def cert_kubeconfig(server: str, ca_pem: bytes, user: str, cert_pem: bytes, key_pem: bytes,
                    name: str = "pykube") -> Config:
    """A kubeconfig whose user is a client certificate, as kubeadm writes admin.conf
    (user ``kubernetes-admin``, context ``kubernetes-admin@<cluster>``)."""
    cfg = empty()
    cfg["clusters"] = [{"name": name, "cluster": {
        "server": server,
        "certificate-authority-data": base64.b64encode(ca_pem).decode()}}]
    cfg["users"] = [{"name": user, "user": {
        "client-certificate-data": base64.b64encode(cert_pem).decode(),
        "client-key-data": base64.b64encode(key_pem).decode()}}]
    context = f"{user}@{name}"
    cfg["contexts"] = [{"name": context, "context": {"cluster": name, "user": user,
                                                     "namespace": "default"}}]
    cfg["current-context"] = context
    return cfg


def read(path: Path) -> Config:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return empty()
    except OSError as exc:
        raise KubeconfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        # libyaml's loader when present: a kubeconfig's base64 blobs take the pure-Python
        # loader milliseconds, a short command's whole run
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise KubeconfigError(f"{path}: expected a mapping at the top level")
    for key in ("clusters", "users", "contexts"):
        data[key] = data.get(key) or []
    return data


@contextlib.contextmanager
def _locked(path: Path, timeout: float = 10.0) -> Iterator[None]:
    lock = path.with_name(path.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    end = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(fd)
            break
        except FileExistsError:
            if time.monotonic() > end:
                raise KubeconfigError(f"{lock}: locked by another writer") from None
            time.sleep(0.05)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()


def write_kubeconfig(path: Path, config: Config) -> None:
    """Write ``config`` to ``path`` (mode 0600, atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(config, default_flow_style=False, sort_keys=False)
    write_atomic(path, text, mode=0o600)


def _replace_named(items: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    out = [i for i in items if i.get("name") != entry["name"]]
    for idx, i in enumerate(items):
        if i.get("name") == entry["name"]:
            out.insert(idx, entry)
            return out
    out.append(entry)
    return out


def merge_context(path: Path, source: Config, make_current: bool = True) -> None:
    """Merge every cluster, user and context of ``source`` into the file at ``path``."""
    with _locked(path):
        cfg = read(path)
        if not cfg.get("apiVersion"):
            cfg.update({k: v for k, v in empty().items() if k not in cfg})
        for key in ("clusters", "users", "contexts"):
            for entry in source.get(key) or []:
                cfg[key] = _replace_named(cfg.get(key) or [], entry)
        if make_current and source.get("current-context"):
            cfg["current-context"] = source["current-context"]
        write_kubeconfig(path, cfg)


def remove_context(name: str, paths: list[Path] | None = None) -> None:
    """Remove context, cluster and user ``name`` (and ``name``-admin) from every file."""
    files = paths if paths is not None else (paths_from_env() or [default_path()])
    for path in files:
        if not path.exists():
            continue
        with _locked(path):
            cfg = read(path)
            before = (len(cfg["clusters"]), len(cfg["users"]), len(cfg["contexts"]))
            ctx = next((c for c in cfg["contexts"] if c.get("name") == name), None)
            users = {f"{name}-admin"}
            clusters = {name}
            if ctx is not None:
                users.add((ctx.get("context") or {}).get("user", ""))
                clusters.add((ctx.get("context") or {}).get("cluster", ""))
            cfg["contexts"] = [c for c in cfg["contexts"] if c.get("name") != name]
            cfg["clusters"] = [c for c in cfg["clusters"] if c.get("name") not in clusters]
            cfg["users"] = [u for u in cfg["users"] if u.get("name") not in users]
            changed = before != (len(cfg["clusters"]), len(cfg["users"]), len(cfg["contexts"]))
            if cfg.get("current-context") == name:
                cfg["current-context"] = ""
                changed = True
            if changed:
                write_kubeconfig(path, cfg)
