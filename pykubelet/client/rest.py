"""A small, thread-safe client of the Kubernetes API over HTTPS (urllib3): what the node
agent, the lab and pykubectl need, with client-go's habits.

Errors are :class:`StatusError` carrying the server's ``metav1.Status`` (code, reason,
message), so callers decide on ``reason`` as client-go's ``errors.IsNotFound`` does.
Watches are iterators of decoded ``WatchEvent`` dicts read line by line from the chunked
response; log streams are iterators of byte chunks.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from pykubelet.client.kubeconfig import KubeconfigError, read, target_path

if TYPE_CHECKING:
    import urllib3

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
TABLE_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")


class ClientError(Exception):
    """The server could not be reached or answered something unreadable."""


class StatusError(ClientError):
    """The server answered with an error Status."""

    def __init__(self, status: Mapping[str, Any], code: int) -> None:
        self.status = dict(status)
        self.code = int(status.get("code") or code)
        self.reason = str(status.get("reason") or "")
        self.message = str(status.get("message") or f"HTTP {code}")
        super().__init__(self.message)

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def conflict(self) -> bool:
        return self.code == 409

    @property
    def gone(self) -> bool:
        return self.code == 410


@dataclass(frozen=True)
class Resource:
    """Where a resource lives: ``("", "v1", "pods", namespaced=True)``."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace)}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name)}"
        if subresource:
            base += f"/{subresource}"
        return base


PODS = Resource("", "v1", "pods")
NODES = Resource("", "v1", "nodes", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False)
EVENTS = Resource("", "v1", "events")
CONFIGMAPS = Resource("", "v1", "configmaps")
SECRETS = Resource("", "v1", "secrets")
LEASES = Resource("coordination.k8s.io", "v1", "leases")


class RESTClient:
    """Requests to one API server with one identity."""

    def __init__(
        self,
        server: str,
        *,
        token: str = "",
        ca_pem: bytes | None = None,
        insecure: bool = False,
        client_cert: tuple[str, str] | None = None,
        timeout: float = 30.0,
        user_agent: str = "pykubelet",
    ) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.user_agent = user_agent
        # also for the streams (exec, attach, port-forward) that other libraries carry
        self.ssl_context = _ssl_context(ca_pem, insecure, client_cert)
        self.pool = self._new_pool(self.ssl_context)
        self.closed = False
        self._streams: set[Any] = set()  # open watch responses, shut by close()
        self._streams_lock = threading.Lock()

    def close(self) -> None:
        """End the client: open watches are shut (the threads reading them return at
        once, so an agent that stops leaves no connection behind) and later requests
        fail with ClientError."""
        self.closed = True
        with self._streams_lock:
            streams = list(self._streams)
        for resp in streams:
            with contextlib.suppress(Exception):
                resp.shutdown()
        with contextlib.suppress(Exception):
            self.pool.clear()

    def _check_open(self) -> None:
        if self.closed:
            raise ClientError(f"{self.server}: client closed")

    def _new_pool(self, ctx: ssl.SSLContext) -> urllib3.PoolManager:
        """The connection pool (a subclass may bring another transport; urllib3 is
        imported here, not with the module, so such a subclass never pays for it)."""
        import urllib3

        return urllib3.PoolManager(ssl_context=ctx, maxsize=16, retries=False,
                                   timeout=urllib3.Timeout(connect=5.0, read=self.timeout))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None, context: str | None = None,
                        user_agent: str = "pykubectl") -> RESTClient:
        """A client for a kubeconfig's current (or named) context."""
        file = target_path(path)
        return cls.from_config(read(file), context, str(file), user_agent)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], context: str | None = None,
                    file: str = "kubeconfig", user_agent: str = "pykubectl") -> RESTClient:
        """A client for a loaded kubeconfig's current (or named) context; ``file`` names it
        in errors."""
        if not (cfg.get("contexts") or cfg.get("clusters")):
            raise KubeconfigError(f"{file}: no configuration (is the cluster up? set "
                                  "--kubeconfig or $KUBECONFIG)")
        name = context or cfg.get("current-context") or ""
        ctx = next((c for c in cfg.get("contexts") or [] if c.get("name") == name), None)
        if ctx is None:
            raise KubeconfigError(f'{file}: context "{name}" not found')
        c = ctx.get("context") or {}
        cluster = next((x.get("cluster") or {} for x in cfg.get("clusters") or []
                        if x.get("name") == c.get("cluster")), None)
        user = next((x.get("user") or {} for x in cfg.get("users") or []
                     if x.get("name") == c.get("user")), {})
        if cluster is None:
            raise KubeconfigError(f'{file}: cluster "{c.get("cluster")}" not found')
        ca: bytes | None = None
        if cluster.get("certificate-authority-data"):
            ca = base64.b64decode(cluster["certificate-authority-data"])
        elif cluster.get("certificate-authority"):
            ca = Path(cluster["certificate-authority"]).read_bytes()
        token = user.get("token") or ""
        if not token and user.get("tokenFile"):
            token = Path(user["tokenFile"]).read_text().strip()
        cert = None
        if user.get("client-certificate-data") and user.get("client-key-data"):
            cert = _materialise(base64.b64decode(user["client-certificate-data"]),
                                base64.b64decode(user["client-key-data"]))
        elif user.get("client-certificate") and user.get("client-key"):
            cert = (user["client-certificate"], user["client-key"])
        client = cls(cluster.get("server", ""), token=token, ca_pem=ca,
                     insecure=bool(cluster.get("insecure-skip-tls-verify")), client_cert=cert,
                     user_agent=user_agent)
        client.namespace = c.get("namespace") or "default"
        return client

    namespace = "default"

    # ------------------------------------------------------------------ requests
    def _headers(self, content_type: str | None, accept: str | None) -> dict[str, str]:
        headers = {"User-Agent": self.user_agent, "Accept": accept or JSON}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        accept: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One request; the decoded JSON answer (or text for non-JSON answers)."""
        import urllib3

        self._check_open()
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            resp = self.pool.request(
                method, self._url(path, params), body=data,
                headers=self._headers(content_type if data is not None else None, accept),
                timeout=urllib3.Timeout(connect=5.0, read=timeout or self.timeout))
        except urllib3.exceptions.HTTPError as exc:
            raise ClientError(f"{self.server}: {_reason(exc)}") from None
        return self._decode(resp.status, resp.headers.get("Content-Type", ""), resp.data)

    def _url(self, path: str, params: Mapping[str, Any] | None) -> str:
        url = self.server + path
        if params:
            items = []
            for k, v in params.items():
                if v is None:
                    continue
                if isinstance(v, bool):
                    v = "true" if v else "false"
                if isinstance(v, list | tuple):
                    items += [(k, str(x)) for x in v]
                else:
                    items.append((k, str(v)))
            if items:
                url += "?" + urlencode(items)
        return url

    @staticmethod
    def _decode(status: int, ctype: str, data: bytes) -> Any:
        parsed: Any = None
        if ctype.startswith("application/json") or data[:1] == b"{":
            try:
                parsed = json.loads(data) if data else None
            except ValueError:
                parsed = None
        if status >= 400:
            if isinstance(parsed, dict) and parsed.get("kind") == "Status":
                raise StatusError(parsed, status)
            raise StatusError({"code": status, "message": data.decode(errors="replace").strip()
                               or f"HTTP {status}"}, status)
        if parsed is None and data:
            return data.decode(errors="replace")
        return parsed

    # ------------------------------------------------------------------ verbs
    def get(self, res: Resource, name: str, namespace: str = "", **params: Any) -> Any:
        return self.request("GET", res.path(namespace, name), params=params)

    def list(self, res: Resource, namespace: str = "", **params: Any) -> Any:
        return self.request("GET", res.path(namespace), params=params)

    def create(self, res: Resource, body: Any, namespace: str = "", **params: Any) -> Any:
        return self.request("POST", res.path(namespace), body=body, params=params)

    def replace(self, res: Resource, name: str, body: Any, namespace: str = "",
                subresource: str = "") -> Any:
        return self.request("PUT", res.path(namespace, name, subresource), body=body)

    def patch(self, res: Resource, name: str, patch: Any, namespace: str = "",
              subresource: str = "", content_type: str = STRATEGIC_MERGE_PATCH) -> Any:
        return self.request("PATCH", res.path(namespace, name, subresource), body=patch,
                            content_type=content_type)

    def delete(self, res: Resource, name: str, namespace: str = "",
               grace_period_seconds: int | None = None,
               preconditions: Mapping[str, str] | None = None) -> Any:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            body["preconditions"] = dict(preconditions)
        return self.request("DELETE", res.path(namespace, name), body=body)

    # ------------------------------------------------------------------ streams
    def watch(
        self, res: Resource, namespace: str = "", *, resource_version: str = "",
        timeout_seconds: int | None = None, bookmarks: bool = True,
        params: Mapping[str, Any] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The events of a watch, until the server ends it; an ERROR event raises."""
        q: dict[str, Any] = {"watch": "true", **(params or {})}
        if resource_version:
            q["resourceVersion"] = resource_version
        if timeout_seconds:
            q["timeoutSeconds"] = timeout_seconds
        if bookmarks:
            q["allowWatchBookmarks"] = "true"
        read_timeout = (timeout_seconds or 3600) + 30
        for line in self._lines(res.path(namespace), q, read_timeout):
            ev = json.loads(line)
            if ev.get("type") == "ERROR":
                obj = ev.get("object") or {}
                raise StatusError(obj, int(obj.get("code") or 500))
            yield ev

    def _lines(self, path: str, params: Mapping[str, Any], read_timeout: float
               ) -> Iterator[bytes]:
        import urllib3

        self._check_open()
        try:
            resp = self.pool.request("GET", self._url(path, params),
                                     headers=self._headers(None, None), preload_content=False,
                                     timeout=urllib3.Timeout(connect=5.0, read=read_timeout))
        except urllib3.exceptions.HTTPError as exc:
            raise ClientError(f"{self.server}: {_reason(exc)}") from None
        with self._streams_lock:
            self._streams.add(resp)
        try:
            if resp.status >= 400:
                self._decode(resp.status, resp.headers.get("Content-Type", ""), resp.read())
            buf = b""
            try:
                for chunk in resp.stream(65536, decode_content=True):
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line.strip():
                            yield line
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                raise ClientError(f"{self.server}: stream broken: {_reason(exc)}") from None
            if buf.strip():
                yield buf
        finally:
            with self._streams_lock:
                self._streams.discard(resp)
            if self.closed:  # never back into a pool that close() emptied
                resp.close()
            resp.release_conn()

    def stream(self, path: str, params: Mapping[str, Any] | None = None,
               timeout: float | None = None) -> Iterator[bytes]:
        """A streamed body (``logs -f``), chunk by chunk."""
        import urllib3

        try:
            resp = self.pool.request("GET", self._url(path, params),
                                     headers=self._headers(None, "*/*"), preload_content=False,
                                     timeout=urllib3.Timeout(connect=5.0, read=timeout))
        except urllib3.exceptions.HTTPError as exc:
            raise ClientError(f"{self.server}: {_reason(exc)}") from None
        try:
            if resp.status >= 400:
                self._decode(resp.status, resp.headers.get("Content-Type", ""), resp.read())
            yield from resp.stream(65536, decode_content=True)
        finally:
            resp.release_conn()


def _ssl_context(ca_pem: bytes | None, insecure: bool,
                 client_cert: tuple[str, str] | None) -> ssl.SSLContext:
    # the system CA bundle costs tens of milliseconds to load: only when it is used
    if ca_pem and not insecure:
        ctx = ssl.create_default_context(cadata=ca_pem.decode())
    else:
        ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if client_cert is not None:
        ctx.load_cert_chain(*client_cert)
    return ctx


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc)


def _materialise(cert: bytes, key: bytes) -> tuple[str, str]:
    """Client certificate data from a kubeconfig as files (ssl wants paths), 0600."""
    import tempfile  # only here: it costs a short command's start-up a few milliseconds

    d = tempfile.mkdtemp(prefix="pykube-cert-")
    paths = []
    for name, data in (("client.crt", cert), ("client.key", key)):
        p = os.path.join(d, name)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        paths.append(p)
    return paths[0], paths[1]
