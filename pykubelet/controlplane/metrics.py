"""The control plane's /metrics: kube-apiserver's request metrics, the embedded
scheduler's, and the process's, in one Prometheus registry.

``observe_request`` is the API server's observer (called for every request with its
method, path with query, status code and seconds) and records, with kube-apiserver's
names and labels (endpoints/metrics): ``apiserver_request_total{verb, dry_run, group,
version, resource, subresource, scope, component, code}`` and
``apiserver_request_duration_seconds`` (same labels without code). Verbs are upstream's
HTTP methods, with LIST for a GET of a collection and WATCH for a watch; a
non-resource request (discovery, /healthz, /metrics) has no resource and its path as
the subresource, as upstream reports it. The scheduler's metrics (pysched's
``SchedulerMetrics``) are made on the same registry, so one scrape shows both.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import (
    gc_collector as _gc,
)
from prometheus_client import (
    platform_collector as _platform,
)
from prometheus_client import (
    process_collector as _process,
)

from pykubelet.controlplane.apiserver.requestinfo import RequestInfo, parse_request_info
from pykubelet.controlplane.registry.resources import group_versions, lookup
from pysched.metrics import SchedulerMetrics

COMPONENT = "apiserver"
#: kube-apiserver's request duration buckets (endpoints/metrics requestLatencies)
REQUEST_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0,
                   4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)
_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope",
           "component")
#: non-resource paths reported by name; any other (a 404, say) is reported as "other"
_KNOWN_PATHS = ("/version", "/healthz", "/livez", "/readyz", "/metrics", "/cacerts",
                "/bootstrap/node", "/openapi/v2", "/openapi/v3", "/api", "/apis")
OTHER = "other"
#: the verbs reported; any other is "other" (endpoints/metrics validRequestMethods)
_VALID_VERBS = frozenset({"APPLY", "CONNECT", "CREATE", "DELETE", "DELETECOLLECTION", "GET",
                          "LIST", "PATCH", "POST", "PROXY", "PUT", "UPDATE", "WATCH",
                          "WATCHLIST"})


def _discovery_paths() -> frozenset[str]:
    """/api/v1, /apis/<group> and /apis/<group>/<version> of what is served."""
    out: set[str] = set()
    for group, version in group_versions():
        if group:
            out.update((f"/apis/{group}", f"/apis/{group}/{version}"))
        else:
            out.add(f"/api/{version}")
    return frozenset(out)


_DISCOVERY_PATHS = _discovery_paths()


def register_process_metrics(registry: CollectorRegistry) -> None:
    """process_* (CPU, memory, fds, start time), python_info and python_gc_*."""
    _process.ProcessCollector(registry=registry)
    _platform.PlatformCollector(registry=registry)
    _gc.GCCollector(registry=registry)


def _scope(info: RequestInfo) -> str:
    """CleanScope: resource (one named object, or a create), namespace, cluster, or none."""
    if info.name or info.verb == "create":
        return "resource"
    if info.namespace:
        return "namespace"
    if info.is_resource_request:
        return "cluster"
    return ""


def _verb(method: str, info: RequestInfo, scope: str) -> str:
    """The reported verb: the HTTP method, LIST for a GET of a collection, WATCH for a
    watch (CanonicalVerb and cleanVerb)."""
    if info.verb == "watch":
        return "WATCH"
    verb = "GET" if method.upper() == "HEAD" else method.upper()
    if verb == "GET" and scope != "resource":
        return "LIST"
    return verb if verb in _VALID_VERBS else OTHER


def _dry_run(values: list[str]) -> str:
    """cleanDryRun: the sorted distinct values, "invalid" unless each is All."""
    if not values:
        return ""
    if any(v != "All" for v in values):
        return "invalid"
    return "All"


def _served(info: RequestInfo) -> bool:
    """A resource (and subresource) this API server serves; anything else is "other"."""
    r = lookup(info.group, info.version, info.resource)
    if r is None:
        return False
    return not info.subresource or any(s.name == info.subresource for s in r.subresources)


def _non_resource_path(path: str) -> str:
    clean = "/" + path.strip("/")
    if clean.startswith("/openapi/v3/"):
        return "/openapi/v3"
    if clean in _DISCOVERY_PATHS or clean in _KNOWN_PATHS:
        return clean
    return OTHER



class WorkqueueMetrics:
    """workqueue_depth, workqueue_adds_total, workqueue_retries_total (client-go's
    component-base/metrics/prometheus/workqueue names), labelled by the queue's name."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.depth = Gauge("workqueue_depth", "Current depth of workqueue", ("name",),
                           registry=registry)
        self.adds = Counter("workqueue_adds_total", "Total number of adds handled by "
                            "workqueue", ("name",), registry=registry)
        self.retries = Counter("workqueue_retries_total", "Total number of retries handled "
                               "by workqueue", ("name",), registry=registry)

class ControlPlaneMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            (*_LABELS, "code"), registry=self.registry)
        self.latency = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            _LABELS, buckets=REQUEST_BUCKETS, registry=self.registry)
        self.scheduler = SchedulerMetrics(registry=self.registry)
        self.workqueue = WorkqueueMetrics(self.registry)  # the controllers' queues
        register_process_metrics(self.registry)

    def observe_request(self, method: str, path: str, code: int, seconds: float) -> None:
        """The API server's observer: one request, its path with the query."""
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        watch = (query.get("watch") or [""])[0].lower() not in ("", "0", "false")
        info = parse_request_info(method, parts.path, watch)
        dry_run = _dry_run(query.get("dryRun", []))
        if info.is_resource_request and _served(info):
            scope = _scope(info)
            labels = (_verb(method, info, scope), dry_run, info.group, info.version,
                      info.resource, info.subresource, scope, COMPONENT)
        else:
            path = parts.path if not info.is_resource_request else OTHER
            verb = method.upper() if method.upper() in _VALID_VERBS else OTHER
            labels = (verb, dry_run, "", "", "", _non_resource_path(path), "", COMPONENT)
        self.requests.labels(*labels, str(code)).inc()
        self.latency.labels(*labels).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
