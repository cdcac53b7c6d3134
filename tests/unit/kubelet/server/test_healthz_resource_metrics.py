"""The agent's local port serves /metrics/resource beside /metrics."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from pykubelet.kubelet.server.healthz import AgentHTTPServer


def _server(resource: bytes | None) -> AgentHTTPServer:
    return AgentHTTPServer("127.0.0.1", 0, dict, lambda: (True, ""), lambda: b"m 1\n",
                           None, (lambda: resource) if resource is not None else None)


def test_metrics_resource_is_served_as_prometheus_text() -> None:
    srv = _server(b"node_cpu_usage_seconds_total 1 2\n")
    srv.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/metrics/resource") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert resp.read() == b"node_cpu_usage_seconds_total 1 2\n"
    finally:
        srv.stop()


def test_without_a_source_it_is_404() -> None:
    srv = _server(None)
    srv.start()
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/metrics/resource")
        assert err.value.code == 404
        err.value.close()
    finally:
        srv.stop()
