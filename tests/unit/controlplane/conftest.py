"""One in-process control plane per test module (``cp_thread``: SQLite, loopback, no
scheduler or controllers, on its own event loop thread), and two ways to talk to it: plain
HTTPS requests with any token, verified against its CA, for the tests of who may do what
(``cluster``), and timed requests from its own loop for the request-shape tests (``api``,
cp_live.LiveAPI). A module that uses both talks to the one control plane."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from cp_live import LiveAPI

from pykubelet.controlplane.server import ControlPlane, ControlPlaneThread, Options


class Raw:
    """Plain HTTPS requests with a bearer token (what client libraries won't send)."""

    def __init__(self, cp: ControlPlane, token: str | None = None,
                 cert: tuple[Path, Path] | None = None) -> None:
        ctx = ssl.create_default_context(cadata=cp.pki.ca_pem.decode())
        if cert is not None:  # a client certificate (and then no token unless given)
            ctx.load_cert_chain(*cert)
        self.pool = urllib3.PoolManager(ssl_context=ctx, retries=False)
        self.base = cp.local_url
        assert cp.tokens is not None
        self.token = cp.tokens.admin if token is None else token

    def __call__(self, method: str, path: str, body: Any = None,
                 ctype: str = "application/json", headers: dict[str, str] | None = None,
                 ) -> tuple[int, Any]:
        h = {"Content-Type": ctype, **(headers or {})}
        if self.token and "Authorization" not in h:
            h["Authorization"] = f"Bearer {self.token}"
        data = body if isinstance(body, bytes | str) or body is None else json.dumps(body)
        resp = self.pool.request(method, self.base + path, body=data, headers=h)
        try:
            return resp.status, json.loads(resp.data)
        except ValueError:
            return resp.status, resp.data.decode(errors="replace")


@pytest.fixture(scope="module")
def cp_thread(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlaneThread]:
    root: Path = tmp_path_factory.mktemp("cp")
    thread = ControlPlaneThread(Options(root=root, listen="127.0.0.1:0", scheduler=False,
                                        controllers=False))
    try:
        thread.start()
        yield thread
    finally:
        thread.stop()


@pytest.fixture(scope="module")
def cp(cp_thread: ControlPlaneThread) -> ControlPlane:
    return cp_thread.cp


class Cluster:
    """The control plane and ways to talk to it as the admin, the join token or a node."""

    def __init__(self, cp: ControlPlane) -> None:
        assert cp.tokens is not None
        self.cp = cp
        self.tokens = cp.tokens
        self.admin = Raw(cp)

    def raw(self, token: str) -> Raw:
        return Raw(self.cp, token)

    def join(self, node: str, **body: Any) -> tuple[int, Any]:
        """POST /bootstrap/node with the join token, as a joining node does."""
        return Raw(self.cp, self.tokens.join)("POST", "/bootstrap/node",
                                              {"nodeName": node, **body})

    def cert_user(self, user: str, *groups: str) -> Raw:
        """A client of a certificate the cluster CA signed for ``user`` in ``groups``."""
        paths = self.cp.pki.issue_client(f"test-{user}", user, groups)
        return Raw(self.cp, "", cert=(paths.cert, paths.key))

    def node(self, node: str) -> Raw:
        """A node's own credentials from the real bootstrap flow."""
        code, cred = self.join(node)
        assert code == 200, cred
        return Raw(self.cp, cred["token"])

    def namespace(self, name: str) -> str:
        code, body = self.admin("POST", "/api/v1/namespaces",
                                {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": name}})
        assert code == 201, body
        return name


@pytest.fixture(scope="module")
def cluster(cp: ControlPlane) -> Cluster:
    return Cluster(cp)


@pytest.fixture(scope="module")
def api(cp_thread: ControlPlaneThread) -> Iterator[LiveAPI]:
    live = LiveAPI(cp_thread)
    try:
        yield live
    finally:
        live.close()
