"""The lab's kubeconfig context, as kind writes ``kind-NAME``: cluster, user and context
``pykube-NAME`` made from node 1's admin kubeconfig, merged into the file kubectl would
use and made current; removed from every file of ``$KUBECONFIG`` (or ~/.kube/config) by
`down`, which also clears current-context when it pointed at the lab."""

from __future__ import annotations

from pathlib import Path

from pykubelet.client.kubeconfig import (
    Config,
    KubeconfigError,
    default_path,
    empty,
    merge_context,
    paths_from_env,
    read,
    remove_context,
    target_path,
)


def lab_context(admin: Config, context: str, server: str = "") -> Config:
    """A kubeconfig with the admin kubeconfig's current cluster and user renamed (and the
    cluster's server replaced by ``server``, a lab's front address, when given)."""
    current = admin.get("current-context") or ""
    ctx = next((c for c in admin.get("contexts") or [] if c.get("name") == current), None)
    if ctx is None:
        raise KubeconfigError(f"admin kubeconfig: context {current!r} not found")
    c = ctx.get("context") or {}
    cluster = next((x.get("cluster") for x in admin.get("clusters") or []
                    if x.get("name") == c.get("cluster")), None)
    user = next((x.get("user") for x in admin.get("users") or []
                 if x.get("name") == c.get("user")), None)
    if cluster is None or user is None:
        raise KubeconfigError("admin kubeconfig: its context names no cluster or user")
    cfg = empty()
    cfg["clusters"] = [{"name": context, "cluster": dict(cluster, **(
        {"server": server} if server else {}))}]
    cfg["users"] = [{"name": context, "user": dict(user)}]
    cfg["contexts"] = [{"name": context, "context": {"cluster": context, "user": context}}]
    cfg["current-context"] = context
    return cfg


def merge(admin_kubeconfig: Path, context: str, explicit: str | Path | None = None,
          server: str = "") -> Path:
    """Merge the lab's context into kubectl's file and make it current; returns the file."""
    target = target_path(explicit)
    merge_context(target, lab_context(read(admin_kubeconfig), context, server),
                  make_current=True)
    return target


def remove(context: str, recorded: str | Path | None = None) -> str:
    """Remove the context from the file it was merged into and from kubectl's files.
    Returns a note for the user when the context was kubectl's current one (kubectl would
    otherwise fall back to localhost:8080 without a word): the contexts left to choose
    from, or that none is left; "" otherwise."""
    files: list[Path] = []
    for p in ([Path(recorded)] if recorded else []) + (paths_from_env() or [default_path()]):
        if p not in files:
            files.append(p)
    was_current = any(_read(p).get("current-context") == context for p in files)
    remove_context(context, files)
    if not was_current:
        return ""
    left = list(dict.fromkeys(c.get("name", "") for p in files
                              for c in _read(p).get("contexts") or [] if c.get("name")))
    if not left:
        return (f"kubectl's current context was {context}; no context is left, so kubectl "
                f"now talks to localhost:8080 until one is set")
    return (f"kubectl's current context was {context} and is now unset; contexts left: "
            f"{', '.join(left)} (choose one with: kubectl config use-context "
            f"{left[0]})")


def _read(path: Path) -> Config:
    try:
        return read(path) if path.exists() else empty()
    except (KubeconfigError, OSError):
        return empty()
