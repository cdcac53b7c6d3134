"""kube-apiserver's request metrics from the API server's observer: upstream's verbs,
scopes and labels, read back with prometheus-client's own parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from pykubelet.controlplane.metrics import ControlPlaneMetrics


def samples(m: ControlPlaneMetrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    out = {}
    for fam in text_string_to_metric_families(m.exposition().decode()):
        for s in fam.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


def request(verb: str, resource: str = "pods", scope: str = "namespace", code: str = "200",
            subresource: str = "", group: str = "", version: str = "v1",
            dry_run: str = "") -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"verb": verb, "dry_run": dry_run, "group": group, "version": version,
                         "resource": resource, "subresource": subresource, "scope": scope,
                         "component": "apiserver", "code": code}.items()))


def test_verbs_scopes_and_codes_as_upstream_reports_them() -> None:
    m = ControlPlaneMetrics()
    m.observe_request("GET", "/api/v1/namespaces/default/pods", 200, 0.01)
    m.observe_request("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=5",
                      200, 30.0)
    m.observe_request("GET", "/api/v1/watch/namespaces/default/pods", 200, 1.0)
    m.observe_request("GET", "/api/v1/namespaces/default/pods/web", 404, 0.002)
    m.observe_request("POST", "/api/v1/namespaces/default/pods", 201, 0.02)
    m.observe_request("POST", "/api/v1/namespaces/default/pods?dryRun=All", 201, 0.02)
    m.observe_request("PATCH", "/api/v1/namespaces/default/pods/web/status", 200, 0.02)
    m.observe_request("GET", "/api/v1/nodes", 200, 0.01)
    m.observe_request("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
                      200, 0.003)
    m.observe_request("DELETE", "/api/v1/namespaces/default/pods", 200, 0.1)
    got = samples(m, "apiserver_request_total")
    assert got[request("LIST")] == 1
    assert got[request("WATCH")] == 2  # ?watch=true and the legacy /watch/ path
    assert got[request("GET", scope="resource", code="404")] == 1
    assert got[request("POST", scope="resource", code="201")] == 1  # a create's scope
    assert got[request("POST", scope="resource", code="201", dry_run="All")] == 1
    assert got[request("PATCH", scope="resource", subresource="status")] == 1
    assert got[request("LIST", resource="nodes", scope="cluster")] == 1
    assert got[request("PUT", resource="leases", scope="resource",
                       group="coordination.k8s.io")] == 1
    assert got[request("DELETE", scope="namespace")] == 1  # deletecollection
    counts = samples(m, "apiserver_request_duration_seconds_count")
    assert sum(counts.values()) == 10
    buckets = samples(m, "apiserver_request_duration_seconds_bucket")
    watch = dict(request("WATCH"))
    del watch["code"]
    le_60 = tuple(sorted({**watch, "le": "60.0"}.items()))
    assert buckets[le_60] == 2


def test_non_resource_requests_name_their_path_and_nothing_else() -> None:
    m = ControlPlaneMetrics()
    for path in ("/healthz", "/metrics", "/openapi/v3/api/v1", "/apis/policy/v1", "/x/y/z",
                 "/random-404"):
        m.observe_request("GET", path, 200, 0.001)
    got = {dict(k)["subresource"]: v for k, v in samples(m, "apiserver_request_total").items()}
    assert got == {"/healthz": 1, "/metrics": 1, "/openapi/v3": 1, "/apis/policy/v1": 1,
                   "other": 2}


def test_scheduler_and_process_metrics_share_the_registry() -> None:
    m = ControlPlaneMetrics()
    m.scheduler.observe_attempt("scheduled", "default-scheduler", 0.004)
    names = {f.name for f in text_string_to_metric_families(m.exposition().decode())}
    assert {"scheduler_schedule_attempts", "scheduler_scheduling_attempt_duration_seconds",
            "scheduler_pending_pods", "process_resident_memory_bytes",
            "process_start_time_seconds", "apiserver_request"} <= names


def test_label_values_are_bounded_as_upstream_bounds_them() -> None:
    """Issue 24: 10,000 anonymous ``GET /apis/<random>?dryRun=<random>`` made as many
    series (54 MB of /metrics). Unknown groups, resources and paths are ``other``, verbs
    outside upstream's set ``other``, dryRun values other than All ``invalid``
    (cleanVerb, cleanDryRun)."""
    m = ControlPlaneMetrics()
    for i in range(300):
        m.observe_request("GET", f"/apis/g{i}?dryRun=x{i}", 401, 0.001)
        m.observe_request("GET", f"/apis/g{i}/v1/things", 404, 0.001)
        m.observe_request("GET", f"/api/v1/namespaces/d/thing{i}s", 404, 0.001)
        m.observe_request("GET", f"/api/v1/namespaces/d/pods/p/sub{i}", 404, 0.001)
        m.observe_request("GET", f"/random/{i}", 404, 0.001)
        m.observe_request(f"VERB{i}", "/api/v1/namespaces/d/pods", 405, 0.001)
        m.observe_request("POST", f"/api/v1/namespaces/d/pods?dryRun=All&dryRun=All&x={i}",
                          201, 0.001)
    got = samples(m, "apiserver_request_total")
    assert len(got) <= 8, sorted(got)
    assert got[request("GET", resource="", group="", version="", scope="", code="401",
                       subresource="other", dry_run="invalid")] == 300
    assert got[request("POST", scope="resource", code="201", dry_run="All")] == 300
    assert got[request("other", scope="namespace", code="405")] == 300
    # what is served keeps its own labels
    m.observe_request("GET", "/apis/coordination.k8s.io", 200, 0.001)
    m.observe_request("GET", "/apis/coordination.k8s.io/v1", 200, 0.001)
    m.observe_request("GET", "/api/v1/namespaces/d/pods/p/log", 200, 0.001)
    got = samples(m, "apiserver_request_total")
    assert got[request("GET", resource="", group="", version="", scope="",
                       subresource="/apis/coordination.k8s.io")] == 1
    assert got[request("GET", resource="", group="", version="", scope="",
                       subresource="/apis/coordination.k8s.io/v1")] == 1
    assert got[request("GET", scope="resource", subresource="log")] == 1
