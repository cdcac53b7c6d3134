"""A scheduler extender for tests: an HTTP server on 127.0.0.1 speaking
k8s.io/kube-scheduler/extender/v1 (Go field names as keys), as the extender in
kubernetes' test/integration/scheduler/extender_test.go does.

What it answers is set on the instance: ``reject`` (node -> reason, FailedNodes),
``unresolvable`` (node -> reason, FailedAndUnresolvableNodes), ``scores`` (node -> 0..10),
``protected`` (pod names preemption must not evict: a node needing one is dropped),
``delay`` (seconds before answering), ``status`` (an HTTP status instead of 200), and
``on_bind`` (called with the ExtenderBindingArgs; its return is the Error). Every request is
kept in ``calls`` as (verb, body).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ExtenderServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.reject: dict[str, str] = {}
        self.unresolvable: dict[str, str] = {}
        self.scores: dict[str, int] = {}
        self.protected: set[str] = set()
        self.delay = 0.0
        self.reverse = False  # answer the filter's nodes but the first in reverse order
        self.status = 200
        self.on_bind: Callable[[dict[str, Any]], str] | None = None
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"null")
                verb = self.path.rsplit("/", 1)[-1]
                with outer._lock:
                    outer.calls.append((verb, body))
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.status != 200:
                    self._reply(outer.status, {"error": "told to fail"})
                    return
                self._reply(200, outer.answer(verb, body))

            def _reply(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}/scheduler"

    def __enter__(self) -> ExtenderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)

    def verbs(self) -> list[str]:
        with self._lock:
            return [v for v, _ in self.calls]

    # ------------------------------------------------------------------ answers
    def answer(self, verb: str, body: dict[str, Any]) -> Any:
        if verb == "filter":
            return self._filter(body)
        if verb == "prioritize":
            return [{"Host": n, "Score": self.scores.get(n, 0)} for n in _names(body)]
        if verb == "bind":
            err = self.on_bind(body) if self.on_bind is not None else ""
            return {"Error": err}
        if verb == "preempt":
            return self._preempt(body)
        return {}

    def _filter(self, body: dict[str, Any]) -> dict[str, Any]:
        names = _names(body)
        keep = [n for n in names if n not in self.reject and n not in self.unresolvable]
        if self.reverse:
            keep[1:] = keep[:0:-1]
        out: dict[str, Any] = {
            "FailedNodes": {n: r for n, r in self.reject.items() if n in names},
            "FailedAndUnresolvableNodes": {
                n: r for n, r in self.unresolvable.items() if n in names
            },
            "Error": "",
        }
        if body.get("NodeNames") is not None:
            out["NodeNames"] = keep
            out["Nodes"] = None
        else:
            by_name = {it["metadata"]["name"]: it for it in body["Nodes"]["items"]}
            items = [by_name[n] for n in keep]
            out["Nodes"] = {"kind": "NodeList", "apiVersion": "v1", "items": items}
            out["NodeNames"] = None
        return out

    def _preempt(self, body: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        meta = body.get("NodeNameToMetaVictims")
        full = body.get("NodeNameToVictims")
        for node, victims in (meta or full or {}).items():
            pods = victims.get("Pods") or []
            if full is not None:
                named = [(p["metadata"]["name"], p["metadata"]["uid"]) for p in pods]
            else:
                named = [("", p["UID"]) for p in pods]
            if any(name in self.protected or uid in self.protected for name, uid in named):
                continue  # a protected victim: no preemption on this node
            out[node] = {"Pods": [{"UID": uid} for _, uid in named],
                         "NumPDBViolations": victims.get("NumPDBViolations", 0)}
        return {"NodeNameToMetaVictims": out}


def _names(body: dict[str, Any]) -> list[str]:
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"])
    return [it["metadata"]["name"] for it in body["Nodes"]["items"]]
