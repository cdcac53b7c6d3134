"""/metrics/resource's text: upstream's names, labels, help and millisecond timestamps,
parseable by a Prometheus parser; a failed read is a scrape error and nothing else."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykubelet.kubelet.stats import resource_metrics
from pykubelet.kubelet.stats.cri_stats import ContainerUsage, PodUsage
from pykubelet.kubelet.stats.node_stats import Usage

T = 1_700_000_000_123_456_789  # ns


def _pods() -> list[PodUsage]:
    app = ContainerUsage("app", 1_700_000_000_000_000_000, Usage(T, 1_500_000_000, 4096))
    return [PodUsage("default", "web", "u1", (app,), Usage(T, 1_500_000_000, 4096))]


def test_samples_as_kubelet_writes_them() -> None:
    text = resource_metrics.render(Usage(T, 32_802_404_612_066, 2_212_044_800), _pods()).decode()
    lines = text.splitlines()
    assert "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the " \
           "node in core-seconds" in lines
    assert "# TYPE node_cpu_usage_seconds_total counter" in lines
    assert "node_cpu_usage_seconds_total 32802.404612066 1700000000123" in lines
    assert "node_memory_working_set_bytes 2.2120448e+09 1700000000123" in lines
    assert 'container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} ' \
           '1.5 1700000000123' in lines
    assert 'container_memory_working_set_bytes{container="app",namespace="default",' \
           'pod="web"} 4096 1700000000123' in lines
    assert 'container_start_time_seconds{container="app",namespace="default",pod="web"} ' \
           '1.7e+09' in lines
    assert 'pod_cpu_usage_seconds_total{namespace="default",pod="web"} 1.5 1700000000123' \
        in lines
    assert 'pod_memory_working_set_bytes{namespace="default",pod="web"} 4096 1700000000123' \
        in lines
    assert "resource_scrape_error 0" in lines
    assert not any(ln.startswith("scrape_error") for ln in lines)  # hidden since 1.30
    names = [ln.split()[2] for ln in lines if ln.startswith("# TYPE")]
    assert names == sorted(names)


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (1, "1"), (4096, "4096"), (123456, "123456"), (1234567, "1.234567e+06"),
    (2212044800, "2.2120448e+09"), (32802.404612066, "32802.404612066"), (1.5, "1.5"),
    (0.0001, "0.0001"), (0.00001234, "1.234e-05"), (1e21, "1e+21"), (-2.5, "-2.5"),
    (1700000000.123456789, "1.7000000001234567e+09"),
])
def test_numbers_as_client_golang_writes_them(value: float, text: str) -> None:
    assert resource_metrics._number(value) == text


def test_a_prometheus_parser_reads_it() -> None:
    text = resource_metrics.render(Usage(T, 5_000_000_000, 100), _pods()).decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s
               for fam in text_string_to_metric_families(text) for s in fam.samples}
    node = samples[("node_cpu_usage_seconds_total", ())]
    assert node.value == 5.0
    assert node.timestamp == 1_700_000_000.123
    pod = samples[("pod_memory_working_set_bytes", (("namespace", "default"), ("pod", "web")))]
    assert pod.value == 4096


def test_no_pods_leaves_their_families_out() -> None:
    text = resource_metrics.render(Usage(T, 1, 1), []).decode()
    assert "container_" not in text
    assert "pod_" not in text
    assert "node_memory_working_set_bytes" in text


def test_a_failed_read_is_a_scrape_error_only() -> None:
    def broken() -> list[PodUsage]:
        raise RuntimeError("runtime down")

    text = resource_metrics.collect(lambda: Usage(T, 1, 1), broken).decode()
    assert "resource_scrape_error 1" in text.splitlines()
    assert "node_cpu_usage_seconds_total" not in text
