"""The scrape's decoding and metrics-server's storage rules: rates from two points,
pairs that cannot give one dropped, fresh containers counted from their start."""

from __future__ import annotations

from pykubelet.controlplane.metricsserver.decode import Batch, Point, decode
from pykubelet.controlplane.metricsserver.storage import Storage, usage_between

S = 1_000_000_000
T0 = 1_700_000_000_000  # ms


def _text(t_ms: int, node_cpu: float, web_cpu: float, start: float = 1_699_999_000.0) -> str:
    return f"""# HELP node_cpu_usage_seconds_total [STABLE] x
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total {node_cpu} {t_ms}
node_memory_working_set_bytes 2.0e+09 {t_ms}
container_cpu_usage_seconds_total{{container="app",namespace="default",pod="web"}} {web_cpu} {t_ms}
container_memory_working_set_bytes{{container="app",namespace="default",pod="web"}} 4096 {t_ms}
container_start_time_seconds{{container="app",namespace="default",pod="web"}} {start}
container_cpu_usage_seconds_total{{container="half",namespace="default",pod="web2"}} 1 {t_ms}
pod_cpu_usage_seconds_total{{namespace="default",pod="web"}} {web_cpu} {t_ms}
resource_scrape_error 0
"""


def test_decode_reads_node_and_complete_containers_only() -> None:
    batch = decode(_text(T0, 100.5, 2.25))
    assert batch.node == Point(T0 * 1_000_000, 100_500_000_000, 2_000_000_000, 0, True, True)
    assert list(batch.pods) == [("default", "web")]  # web2's container has no memory
    app = batch.pods[("default", "web")]["app"]
    assert app.cpu_ns == 2_250_000_000
    assert app.memory_bytes == 4096
    assert app.start_time_ns == 1_699_999_000 * S


def test_decode_of_a_failed_scrape_has_no_node() -> None:
    assert decode("resource_scrape_error 1\nscrape_error 1\n") == Batch()


def test_rate_over_two_scrapes() -> None:
    st = Storage()
    st.store("n1", decode(_text(T0, 100.0, 2.0)))
    assert st.node_usage("n1") is None  # one point: no rate yet
    assert st.pod_usage("default", "web") is None
    st.store("n1", decode(_text(T0 + 15_000, 103.0, 2.15)))
    node = st.node_usage("n1")
    assert node is not None
    assert node.cpu_nanocores == 200_000_000  # 3 core-seconds over 15 s
    assert node.window_ns == 15 * S
    assert node.memory_bytes == 2_000_000_000
    found = st.pod_usage("default", "web")
    assert found is not None
    earliest, containers = found
    assert containers[0][0] == "app"
    assert containers[0][1].cpu_nanocores == 10_000_000  # 0.15 s over 15 s: 10m
    assert earliest.timestamp_ns == (T0 + 15_000) * 1_000_000


def test_a_counter_going_back_gives_no_rate() -> None:
    last = Point(2 * S, 5, 0, 0, True, True)
    assert usage_between(last, Point(1 * S, 10, 0, 0, True, True)) is None
    assert usage_between(last, Point(2 * S, 1, 0, 0, True, True)) is None


def test_a_fresh_container_counts_from_its_start() -> None:
    st = Storage()
    start_s = T0 / 1000 - 5  # started 5 s before the first scrape
    st.store("n1", decode(_text(T0, 1.0, 0.5, start=start_s)))
    found = st.pod_usage("default", "web")
    assert found is not None
    assert found[1][0][1].cpu_nanocores == 100_000_000  # 0.5 s over 5 s
    st2 = Storage()  # started long ago: no lifetime average
    st2.store("n1", decode(_text(T0, 1.0, 0.5, start=start_s - 3600)))
    assert st2.pod_usage("default", "web") is None


def test_a_node_not_scraped_again_is_forgotten() -> None:
    st = Storage()
    st.store("n1", decode(_text(T0, 1.0, 0.5)))
    st.store("n1", decode(_text(T0 + 1000, 2.0, 0.6)))
    st.forget({"n2"})
    assert st.node_usage("n1") is None
    assert st.pod_usage("default", "web") is None
