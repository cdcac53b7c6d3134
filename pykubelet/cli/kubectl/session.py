"""What every pykubectl command shares: the kubeconfig kubectl would read (``--kubeconfig``,
else ``$KUBECONFIG``'s files merged, else ``~/.kube/config``), the context (``--context``,
else the current one), the namespace (``-n``, else the context's, else ``default``), one
REST client and the discovered resources. Everything is built on first use, so a command
pays only for what it touches."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykubelet.cli.kubectl.discovery import Discovery
    from pykubelet.cli.kubectl.transport import StdlibClient


@dataclass
class GlobalOptions:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    cache_dir: str | None = None
    request_timeout: float | None = None
    as_user: str = ""  # --as: every request impersonates this user
    as_groups: tuple[str, ...] = ()  # --as-group


class Session:
    def __init__(self, opts: GlobalOptions) -> None:
        self.opts = opts

    @cached_property
    def client(self) -> StdlibClient:
        from pykubelet.cli.kubectl.errors import CommandError
        from pykubelet.cli.kubectl.transport import StdlibClient
        from pykubelet.client.kubeconfig import load_merged

        cfg = load_merged(self.opts.kubeconfig)
        if not (cfg.get("contexts") or cfg.get("clusters")):
            raise CommandError("error: no configuration has been provided, try setting "
                               "KUBECONFIG or --kubeconfig")
        name = self.opts.context or cfg.get("current-context") or ""
        if not name:
            raise CommandError("error: no context is set in the kubeconfig (current-context "
                               "is empty), use --context")
        if not any(c.get("name") == name for c in cfg.get("contexts") or []):
            raise CommandError(f'error: context "{name}" does not exist')
        client = StdlibClient.from_config(cfg, name, "kubeconfig", user_agent="pykubectl")
        assert isinstance(client, StdlibClient)
        if self.opts.request_timeout:
            client.timeout = self.opts.request_timeout
        if self.opts.as_groups and not self.opts.as_user:
            raise CommandError("error: requesting uid, groups or user-extra for  without "
                               "impersonating a user")
        if self.opts.as_user:
            client.impersonate = [("Impersonate-User", self.opts.as_user),
                                  *(("Impersonate-Group", g) for g in self.opts.as_groups)]
        return client

    @property
    def server(self) -> str:
        return self.client.server if "client" in self.__dict__ else ""

    @property
    def namespace(self) -> str:
        return self.opts.namespace or self.client.namespace or "default"

    @property
    def explicit_namespace(self) -> bool:
        return bool(self.opts.namespace)

    @cached_property
    def discovery(self) -> Discovery:
        from pykubelet.cli.kubectl.discovery import Discovery

        return Discovery(self.client, Path(self.opts.cache_dir) if self.opts.cache_dir
                         else cache_dir())


def cache_dir() -> Path | None:
    env = os.environ.get("KUBECACHEDIR")
    if env:
        return Path(env)
    home = os.path.expanduser("~")
    return Path(home) / ".kube" / "cache" if home and home != "~" else None
