"""NodeMetrics/PodMetrics as metrics-server writes them: quantities, windows, times."""

from __future__ import annotations

from pykubelet.controlplane.metricsserver import objects
from pykubelet.controlplane.metricsserver.storage import Usage

S = 1_000_000_000


def test_go_durations() -> None:
    assert objects.go_duration(15 * S + 6_000_000) == "15.006s"
    assert objects.go_duration(60 * S + S // 2) == "1m0.5s"
    assert objects.go_duration(500_000_000) == "500ms"
    assert objects.go_duration(20 * S) == "20s"
    assert objects.go_duration(0) == "0s"


def test_usage_quantities_as_resource_quantity_writes_them() -> None:
    assert objects.usage_quantities(Usage(0, 0, 1_234_567, 4096 * 1000)) == {
        "cpu": "1234567n", "memory": "4000Ki"}
    assert objects.usage_quantities(Usage(0, 0, 5_000_000, 4097)) == {
        "cpu": "5m", "memory": "4097"}


def test_pod_metrics_object() -> None:
    pod = {"metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                        "uid": "u"}}
    u = Usage(1_700_000_015 * S, 15 * S, 10_000_000, 1 << 20)
    m = objects.pod_metrics(pod, u, [("app", u)], now=1_700_000_020)
    assert m == {
        "kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {"name": "web", "namespace": "default",
                     "creationTimestamp": "2023-11-14T22:13:40Z", "labels": {"app": "web"}},
        "timestamp": "2023-11-14T22:13:35Z", "window": "15s",
        "containers": [{"name": "app", "usage": {"cpu": "10m", "memory": "1Mi"}}]}


def test_discovery_names_both_resources() -> None:
    rl = objects.resource_list()
    assert rl["groupVersion"] == "metrics.k8s.io/v1beta1"
    assert [(r["name"], r["kind"], r["namespaced"], r["verbs"]) for r in rl["resources"]] == [
        ("nodes", "NodeMetrics", False, ["get", "list"]),
        ("pods", "PodMetrics", True, ["get", "list"])]
