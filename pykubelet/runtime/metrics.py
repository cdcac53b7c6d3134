"""The runtime's /metrics: every CRI call, as go-grpc-prometheus counts them on
containerd's metrics address, plus the process's own metrics.

``grpc_server_started_total`` and ``grpc_server_handled_total`` (by ``grpc_type``,
``grpc_service``, ``grpc_method`` and, once handled, ``grpc_code``) and the
``grpc_server_handling_seconds`` histogram. The CRI interceptor observes every call;
``serve`` exposes the registry over HTTP with prometheus-client's own server.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    gc_collector,
    platform_collector,
    process_collector,
    start_http_server,
)

log = logging.getLogger(__name__)
disable_created_metrics()

#: prometheus.DefBuckets, go-grpc-prometheus' default for the handling-time histogram
DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_LABELS = ("grpc_type", "grpc_service", "grpc_method")


class RuntimeMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.started = Counter("grpc_server_started_total",
                               "Total number of RPCs started on the server.", _LABELS,
                               registry=self.registry)
        self.handled = Counter("grpc_server_handled_total",
                               "Total number of RPCs completed on the server, regardless of "
                               "success or failure.", (*_LABELS, "grpc_code"),
                               registry=self.registry)
        self.seconds = Histogram("grpc_server_handling_seconds",
                                 "Histogram of response latency (seconds) of gRPC that had "
                                 "been application-level handled by the server.", _LABELS,
                                 buckets=DEF_BUCKETS, registry=self.registry)
        process_collector.ProcessCollector(registry=self.registry)
        platform_collector.PlatformCollector(registry=self.registry)
        gc_collector.GCCollector(registry=self.registry)

    def observe_start(self, kind: str, service: str, method: str) -> None:
        self.started.labels(kind, service, method).inc()

    def observe_done(self, kind: str, service: str, method: str, code: str,
                     seconds: float) -> None:
        self.handled.labels(kind, service, method, code).inc()
        self.seconds.labels(kind, service, method).observe(seconds)

    def serve(self, address: str) -> tuple[Any, threading.Thread]:
        """Serve /metrics on ``HOST:PORT`` (prometheus-client's HTTP server, a daemon
        thread); returns (server, thread) so the caller can shut it down."""
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--metrics-address: {address!r} must be HOST:PORT")
        server, thread = start_http_server(int(port), host.strip("[]"), registry=self.registry)
        log.info("runtime metrics on http://%s/metrics", address)
        return server, thread
