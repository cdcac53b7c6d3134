"""One place where domain errors become gRPC status codes, and every RPC is logged.

containerd's instrumented service, as a grpc server interceptor: handlers raise
``pykubelet.runtime.errors`` classes and never touch the gRPC context; an unexpected
exception becomes INTERNAL with the RPC's name in the message, and is logged with its
traceback so the daemon's log explains it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from pykubelet.runtime.errors import CRIError
from pykubelet.runtime.metrics import RuntimeMetrics

log = logging.getLogger("pykubelet.runtime.cri")

# Read-only, frequently polled RPCs are logged at DEBUG; the rest at INFO.
_QUIET = {
    "Version", "Status", "ListPodSandbox", "ListContainers", "PodSandboxStatus",
    "ContainerStatus", "ListImages", "ImageStatus", "ImageFsInfo", "ContainerStats",
    "ListContainerStats", "PodSandboxStats", "ListPodSandboxStats", "RuntimeConfig",
}


# method -> the message of its last failure: a client retrying the same failing call
# (kubelet every 2 s) gets one warning, then debug lines until the outcome changes
_last_failure: dict[str, str] = {}
_last_failure_lock = threading.Lock()


def _failure_level(method: str, message: str | None) -> int:
    """WARNING for a new failure of ``method``, DEBUG for a repeat; None records a success."""
    with _last_failure_lock:
        repeat = message is not None and _last_failure.get(method) == message
        if message is None:
            _last_failure.pop(method, None)
        else:
            _last_failure[method] = message
    return logging.DEBUG if repeat else logging.WARNING


def grpc_code(exc: CRIError) -> grpc.StatusCode:
    return getattr(grpc.StatusCode, exc.grpc_code, grpc.StatusCode.UNKNOWN)


def _run(method: str, fn: Callable[[Any, grpc.ServicerContext], Any], request: Any,
         context: grpc.ServicerContext) -> Any:
    t0 = time.perf_counter()
    try:
        response = fn(request, context)
    except CRIError as exc:
        code = grpc_code(exc)
        log.log(_failure_level(method, f"{code.name}: {exc.msg}"), "%s failed: %s: %s",
                method, code.name, exc.msg)
        context.abort(code, exc.msg)
    except NotImplementedError:
        log.info("%s: not implemented", method)
        context.abort(grpc.StatusCode.UNIMPLEMENTED,
                      f"{method} is not implemented by the pykubelet runtime")
    except Exception as exc:
        # ServicerContext.code() exists since grpcio 1.38; the stubs lack it
        if context.code() not in (None, grpc.StatusCode.OK):  # type: ignore[attr-defined]
            raise  # the handler aborted with its own status
        log.exception("%s failed with an unexpected error", method)
        context.abort(grpc.StatusCode.INTERNAL, f"{method}: {type(exc).__name__}: {exc}")
    ms = (time.perf_counter() - t0) * 1000
    if method not in _QUIET:
        _failure_level(method, None)
    log.log(logging.DEBUG if method in _QUIET else logging.INFO, "%s ok in %.1f ms", method, ms)
    return response


# Go's codes.Code.String(), the grpc_code label go-grpc-prometheus reports
_GO_CODE_NAMES = {grpc.StatusCode.OK: "OK", grpc.StatusCode.CANCELLED: "Canceled"}


def _code_name(context: grpc.ServicerContext, exc: BaseException | None) -> str:
    """The status an RPC ended with (OK, NotFound, Internal, ...)."""
    code = context.code()  # type: ignore[attr-defined]  # grpc >= 1.38; the stubs lag
    if code is None:
        code = grpc.StatusCode.OK if exc is None else grpc.StatusCode.UNKNOWN
    return _GO_CODE_NAMES.get(code) or "".join(w.capitalize() for w in code.name.split("_"))


class _Measure:
    """One RPC's started/handled counts and duration (nothing without metrics), around
    its handler: ``with _Measure(...)``, the status read from the context at the end."""

    def __init__(self, metrics: RuntimeMetrics | None, kind: str, full: str,
                 context: grpc.ServicerContext) -> None:
        self.metrics = metrics
        self.kind = kind
        self.context = context
        self.service, _, self.method = full.lstrip("/").rpartition("/")
        self.t0 = 0.0

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()
        if self.metrics is not None:
            self.metrics.observe_start(self.kind, self.service, self.method)

    def __exit__(self, _type: object, failure: BaseException | None, _tb: object) -> None:
        if self.metrics is not None:
            self.metrics.observe_done(self.kind, self.service, self.method,
                                      _code_name(self.context, failure),
                                      time.perf_counter() - self.t0)


class ErrorInterceptor(grpc.ServerInterceptor):
    """Wrap every unary handler: error mapping, timing, logging, and the gRPC metrics
    when ``metrics`` is given."""

    def __init__(self, metrics: RuntimeMetrics | None = None) -> None:
        self.metrics = metrics

    def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        full = handler_call_details.method
        method = full.rsplit("/", 1)[-1]
        metrics = self.metrics
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                with _Measure(metrics, "unary", full, context):
                    return _run(method, inner, request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            def stream(request: Any, context: grpc.ServicerContext) -> Any:
                with _Measure(metrics, "server_stream", full, context):
                    yield from _run(method, inner_stream, request, context)

            return grpc.unary_stream_rpc_method_handler(
                stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler
