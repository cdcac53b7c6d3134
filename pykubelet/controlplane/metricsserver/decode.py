"""A kubelet's ``/metrics/resource`` text to one node's batch of points, as
metrics-server's scraper/client/resource/decode.go reads it: the node's and each
container's cumulative CPU (core-seconds) and working set, each with the time the kubelet
read it (the sample's timestamp, milliseconds), and containers' start times. Other
families, and samples without a timestamp, are ignored; so is a container without both
CPU and memory (decode.go's checkContainerMetrics)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NS_PER_MS = 1_000_000

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass
class Point:
    """Cumulative CPU (core-nanoseconds) and working set at ``timestamp_ns``;
    ``start_time_ns`` is the container's start (0 for a node)."""

    timestamp_ns: int = 0
    cpu_ns: int = 0
    memory_bytes: int = 0
    start_time_ns: int = 0
    has_cpu: bool = False
    has_memory: bool = False


@dataclass
class Batch:
    """One scrape of one node."""

    node: Point | None = None
    # (namespace, pod) -> container -> point
    pods: dict[tuple[str, str], dict[str, Point]] = field(default_factory=dict)


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def decode(text: str) -> Batch:
    """Parse the endpoint's body; lines it does not know are skipped."""
    node = Point()
    containers: dict[tuple[str, str, str], Point] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        name, raw_labels, raw_value, raw_ts = m.groups()
        if not name.startswith(("node_", "container_")):
            continue
        try:
            value = float(raw_value)
        except ValueError:
            continue
        labels = {k: _unescape(v) for k, v in _LABEL.findall(raw_labels or "")}
        if name.startswith("container_"):
            key = (labels.get("namespace", ""), labels.get("pod", ""),
                   labels.get("container", ""))
            if not all(key):
                continue
            point = containers.setdefault(key, Point())
        else:
            point = node
        ts = int(raw_ts) * NS_PER_MS if raw_ts else 0
        if name.endswith("_cpu_usage_seconds_total") and ts:
            point.cpu_ns, point.has_cpu = round(value * 1e9), True
            point.timestamp_ns = max(point.timestamp_ns, ts)
        elif name.endswith("_memory_working_set_bytes") and ts:
            point.memory_bytes, point.has_memory = int(value), True
            point.timestamp_ns = max(point.timestamp_ns, ts)
        elif name == "container_start_time_seconds":
            point.start_time_ns = round(value * 1e9)
    batch = Batch(node=node if node.has_cpu and node.has_memory else None)
    for (ns, pod, container), point in containers.items():
        if point.has_cpu and point.has_memory:
            batch.pods.setdefault((ns, pod), {})[container] = point
    return batch
