"""The REST client pykubectl talks through: :class:`RESTClient`'s verbs, errors, watches
and streams, carried by the standard library's ``http.client`` instead of urllib3.

Why: a pykubectl command is short and its start-up is most of its run; importing urllib3
costs about 40 ms of CPU, a third of a ``get pods`` (bench/pykubectl_bench.py), and a
command that sends a few requests in a row needs none of its pooling or retries. Each
thread keeps one keep-alive connection for plain requests; every watch or log stream gets
its own connection, closed when the stream ends.
"""

from __future__ import annotations

import _thread
import http.client
import ssl
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from pykubelet.client.rest import JSON, ClientError, Resource, RESTClient, StatusError

CONNECT_TIMEOUT = 5.0
_RETRYABLE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
              http.client.CannotSendRequest)


class _Headers(dict[str, str]):
    """Headers with repeated names (``Impersonate-Group`` once per group): http.client
    sends what ``items()`` yields."""

    def __init__(self, base: dict[str, str], repeated: list[tuple[str, str]]) -> None:
        super().__init__(base)
        self.repeated = repeated

    def items(self) -> Any:
        return [*super().items(), *self.repeated]


class StdlibClient(RESTClient):
    """RESTClient over http.client (see the module doc)."""

    impersonate: list[tuple[str, str]] = []  # (header, value) pairs: --as, --as-group

    def _headers(self, content_type: str | None, accept: str | None) -> dict[str, str]:
        headers = super()._headers(content_type, accept)
        return _Headers(headers, self.impersonate) if self.impersonate else headers

    def _new_pool(self, ctx: ssl.SSLContext) -> Any:
        parts = urlsplit(self.server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ClientError(f'{self.server}: not an http(s) URL')
        self._ctx = ctx
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._base = f"{parts.scheme}://{parts.netloc}"
        # one keep-alive connection per thread (drain evicts from several); _thread's
        # get_ident is all that needs, without importing threading on every command
        self._conns: dict[int, http.client.HTTPConnection | None] = {}
        return None

    # ------------------------------------------------------------------ connections
    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx,
                                               timeout=CONNECT_TIMEOUT)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=CONNECT_TIMEOUT)
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            raise ClientError(f"{self.server}: {exc}") from None
        assert conn.sock is not None
        conn.sock.settimeout(timeout)
        return conn

    def _target(self, path: str, params: Mapping[str, Any] | None) -> str:
        return self._url(path, params)[len(self._base):]

    def _send(self, method: str, target: str, body: bytes | None, headers: dict[str, str],
              timeout: float | None, stream: bool) -> tuple[http.client.HTTPConnection,
                                                            http.client.HTTPResponse]:
        """Send one request; streams get a connection of their own."""
        me = _thread.get_ident()
        cached = None if stream else self._conns.get(me)
        for attempt in (0, 1):
            conn = cached if cached is not None and attempt == 0 else self._connect(timeout)
            reused = conn is cached
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
            except _RETRYABLE as exc:
                conn.close()
                self._conns[me] = None
                if reused:
                    continue  # the server closed an idle keep-alive connection
                raise ClientError(f"{self.server}: {exc}") from None
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if not stream:
                    self._conns[me] = None
                raise ClientError(f"{self.server}: {exc}") from None
            if not stream:
                self._conns[me] = conn
            return conn, resp
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ verbs
    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                body: Any = None, content_type: str = JSON, accept: str | None = None,
                timeout: float | None = None) -> Any:
        import json

        data = None
        if body is not None:
            # kubectl's bodies are Go maps marshalled: sorted keys (the server names problems
            # in the order it meets them, so this keeps its messages kubectl's)
            data = body if isinstance(body, bytes) else json.dumps(
                body, sort_keys=True, separators=(",", ":")).encode()
        headers = self._headers(content_type if data is not None else None, accept)
        conn, resp = self._send(method, self._target(path, params), data, headers,
                                timeout or self.timeout, stream=False)
        try:
            payload = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            self._conns[_thread.get_ident()] = None
            raise ClientError(f"{self.server}: {exc}") from None
        if resp.will_close:
            conn.close()
            self._conns[_thread.get_ident()] = None
        return self._decode(resp.status, resp.getheader("Content-Type", ""), payload)

    def watch_events(self, res: Resource, namespace: str = "", *, resource_version: str = "",
                     timeout_seconds: int | None = None, accept: str | None = None,
                     params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """A watch's events until the server ends it (no bookmarks asked for); ``accept``
        may ask for one-row Tables (``get -w``); an ERROR event raises StatusError."""
        import json

        q: dict[str, Any] = {"watch": "true", **(params or {})}
        if resource_version:
            q["resourceVersion"] = resource_version
        if timeout_seconds:
            q["timeoutSeconds"] = timeout_seconds
        read_timeout = (timeout_seconds or 3600) + 30
        for line in self._lines(res.path(namespace), q, read_timeout, accept):
            ev = json.loads(line)
            if ev.get("type") == "ERROR":
                obj = ev.get("object") or {}
                raise StatusError(obj, int(obj.get("code") or 500))
            yield ev

    def _lines(self, path: str, params: Mapping[str, Any], read_timeout: float,
               accept: str | None = None) -> Iterator[bytes]:
        conn, resp = self._send("GET", self._target(path, params), None,
                                self._headers(None, accept), read_timeout, stream=True)
        try:
            if resp.status >= 400:
                self._decode(resp.status, resp.getheader("Content-Type", ""), resp.read())
            while True:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException) as exc:
                    raise ClientError(f"{self.server}: stream broken: {exc}") from None
                if not line:
                    return
                if line.strip():
                    yield line
        finally:
            conn.close()

    def stream(self, path: str, params: Mapping[str, Any] | None = None,
               timeout: float | None = None) -> Iterator[bytes]:
        conn, resp = self._send("GET", self._target(path, params), None,
                                self._headers(None, "*/*"), timeout, stream=True)
        try:
            if resp.status >= 400:
                self._decode(resp.status, resp.getheader("Content-Type", ""), resp.read())
            while True:
                try:
                    chunk = resp.read1(65536)
                except (OSError, http.client.HTTPException) as exc:
                    raise ClientError(f"{self.server}: stream broken: {exc}") from None
                if not chunk:
                    return
                yield chunk
        finally:
            conn.close()
