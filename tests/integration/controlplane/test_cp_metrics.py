"""The control plane's /metrics over HTTPS: only for callers allowed to read it, and its
counters move as pods are created and scheduled."""

from __future__ import annotations

import json

from cp_process import ControlPlaneProcess, FakeNode, wait_for
from prometheus_client.parser import text_string_to_metric_families
from test_cp_semantics import Raw

CP_BACKENDS = ("sqlite",)  # a client face / the process's metrics: the store is not the point


def scrape(raw: Raw) -> dict[str, float]:
    code, text = raw("GET", "/metrics")
    assert code == 200, text
    assert isinstance(text, str)
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}"] = s.value
    return out


def value(metrics: dict[str, float], name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for key, v in metrics.items():
        metric, _, rest = key.partition("{")
        have = dict(kv.split("=", 1) for kv in rest.rstrip("}").split(",") if kv)
        if metric == name and all(have.get(k) == want for k, want in labels.items()):
            total += v
    return total


def test_metrics_need_an_allowed_caller(cp: ControlPlaneProcess) -> None:
    raw = Raw(cp)
    assert raw("GET", "/metrics", token="")[0] == 401
    join = json.loads((cp.root / "tokens.json").read_text())["join"]
    code, body = raw("GET", "/metrics", token=join)
    assert code == 403
    assert body["message"] == 'forbidden: User "system:bootstrap" cannot get path "/metrics"'


def test_counters_move_when_pods_are_created_and_scheduled(cp: ControlPlaneProcess,
                                                           ns: str) -> None:
    raw = Raw(cp)
    node = FakeNode(cp, "metrics-node")
    try:
        before = scrape(raw)
        for i in range(3):
            code, _ = raw("POST", f"/api/v1/namespaces/{ns}/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"m{i}"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
            assert code == 201

        def scheduled() -> bool:
            now = scrape(raw)
            return (value(now, "scheduler_schedule_attempts_total", result="scheduled")
                    - value(before, "scheduler_schedule_attempts_total", result="scheduled")
                    >= 3)

        wait_for(scheduled, what="3 more scheduled attempts")
        after = scrape(raw)
        created = {"verb": "POST", "resource": "pods", "code": "201", "scope": "resource"}
        assert (value(after, "apiserver_request_total", **created)
                - value(before, "apiserver_request_total", **created)) == 3
        # (the embedded scheduler binds through the registry, not over HTTP: its binds
        # are scheduler_schedule_attempts_total, not apiserver requests)
        assert value(after, "apiserver_request_duration_seconds_count", verb="POST",
                     resource="pods") >= 3
        assert value(after, "scheduler_scheduling_attempt_duration_seconds_count",
                     result="scheduled", profile="default-scheduler") >= 3
        assert value(after, "scheduler_pending_pods", queue="active") == 0
        assert value(after, "process_resident_memory_bytes") > 0
    finally:
        node.delete()
