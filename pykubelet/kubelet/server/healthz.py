"""The agent's local HTTP port (healthzBindAddress:healthzPort): /healthz, /pods, /metrics,
/metrics/resource (kubelet's resource metrics, also on the node server) and /events (ours:
the pod events this agent recorded, for a node without an API server).

/pods answers a v1 PodList of the pods this node runs, with their status, as kubelet's
read-only /pods endpoint does; /healthz answers "ok" while the sync loop and the PLEG are
healthy; /metrics is Prometheus text with kubelet's metric names.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class AgentHTTPServer:
    """Serves the three endpoints from callables, in a daemon thread."""

    def __init__(
        self,
        host: str,
        port: int,
        pods: Callable[[], dict[str, Any]],
        healthy: Callable[[], tuple[bool, str]],
        metrics: Callable[[], bytes],
        events: Callable[[], dict[str, Any]] | None = None,
        resource_metrics: Callable[[], bytes] | None = None,
    ) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, fmt: str, *args: Any) -> None:
                log.debug("http: " + fmt, *args)

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].rstrip("/") or "/"
                try:
                    if path == "/healthz":
                        ok, why = outer._healthy()
                        body = b"ok" if ok else why.encode()
                        self._send(200 if ok else 500, body, "text/plain")
                    elif path == "/pods":
                        body = json.dumps(outer._pods()).encode()
                        self._send(200, body, "application/json")
                    elif path == "/events" and outer._events is not None:
                        body = json.dumps(outer._events()).encode()
                        self._send(200, body, "application/json")
                    elif path == "/metrics":
                        self._send(200, outer._metrics(), METRICS_CONTENT_TYPE)
                    elif path == "/metrics/resource" and outer._resource_metrics is not None:
                        self._send(200, outer._resource_metrics(), METRICS_CONTENT_TYPE)
                    else:
                        self._send(404, b"404 page not found\n", "text/plain")
                except BrokenPipeError:
                    pass
                except Exception as exc:
                    log.exception("http %s", path)
                    self._send(500, str(exc).encode(), "text/plain")

        self._pods = pods
        self._healthy = healthy
        self._metrics = metrics
        self._events = events
        self._resource_metrics = resource_metrics
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self.server.serve_forever, name="http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
