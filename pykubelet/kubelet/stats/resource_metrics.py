"""kubelet's ``/metrics/resource`` (pkg/kubelet/metrics/collectors/resource_metrics.go):
Prometheus text of the node's, pods' and running containers' CPU and memory, each sample
with the time it was read (milliseconds, as the text format writes them), which is what
metrics-server computes its CPU rates from.

Names, help and labels are upstream's (``[STABLE]`` as component-base prints a stable
metric's help); families in name order as client_golang's gatherer sorts them. When the
stats cannot be read only ``resource_scrape_error 1`` is served. ``scrape_error``
(deprecated in 1.29) is hidden from 1.30 on, as component-base hides it in the kubelet
version we report.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from decimal import Decimal

from pykubelet.kubelet.stats.cri_stats import PodUsage
from pykubelet.kubelet.stats.node_stats import Usage

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NS_PER_S = 1_000_000_000

# name -> (type, help, stable)
FAMILIES: dict[str, tuple[str, str, bool]] = {
    "container_cpu_usage_seconds_total": (
        "counter", "Cumulative cpu time consumed by the container in core-seconds", True),
    "container_memory_working_set_bytes": (
        "gauge", "Current working set of the container in bytes", True),
    "container_start_time_seconds": (
        "gauge", "Start time of the container since unix epoch in seconds", True),
    "node_cpu_usage_seconds_total": (
        "counter", "Cumulative cpu time consumed by the node in core-seconds", True),
    "node_memory_working_set_bytes": (
        "gauge", "Current working set of the node in bytes", True),
    "pod_cpu_usage_seconds_total": (
        "counter", "Cumulative cpu time consumed by the pod in core-seconds", True),
    "pod_memory_working_set_bytes": (
        "gauge", "Current working set of the pod in bytes", True),
    "resource_scrape_error": (
        "gauge", "1 if there was an error while getting container metrics, 0 otherwise", True),
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: list[tuple[str, str]]) -> str:
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _number(value: float) -> str:
    """client_golang's writeFloat: strconv.AppendFloat(v, 'g', -1, 64), the shortest digits
    that read back, in exponent form when the exponent is below -4 or at least 6
    (``2.2120448e+09``, ``32802.404612066``, ``4096``)."""
    v = float(value)
    if v == 0:
        return "0"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    sign, digit_tuple, exp = Decimal(repr(v)).as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exp += len("".join(map(str, digit_tuple))) - len(digits)  # the zeros stripped
    dp = len(digits) + exp  # where the decimal point falls among the digits
    x = dp - 1
    minus = "-" if sign else ""
    if x < -4 or x >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{minus}{mantissa}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if dp <= 0:
        return f"{minus}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return f"{minus}{digits}{'0' * (dp - len(digits))}"
    return f"{minus}{digits[:dp]}.{digits[dp:]}"


class _Families:
    """Samples collected per family, rendered in name order."""

    def __init__(self) -> None:
        self.samples: dict[str, list[str]] = {name: [] for name in FAMILIES}

    def add(self, name: str, value: float, labels: list[tuple[str, str]] | None = None,
            timestamp_ns: int | None = None) -> None:
        ts = f" {timestamp_ns // 1_000_000}" if timestamp_ns else ""
        self.samples[name].append(f"{name}{_labels(labels or [])} {_number(value)}{ts}")

    def render(self) -> bytes:
        lines: list[str] = []
        for name in sorted(FAMILIES):
            if not self.samples[name]:
                continue  # client_golang leaves out a family with no samples
            kind, help_text, stable = FAMILIES[name]
            prefix = "[STABLE] " if stable else "[ALPHA] "
            lines.append(f"# HELP {name} {prefix}{help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(self.samples[name])
        return ("\n".join(lines) + "\n").encode()


def render(node: Usage | None, pods: list[PodUsage] | None) -> bytes:
    """The endpoint's body; ``None`` for either means its stats could not be read."""
    fam = _Families()
    error = 0 if node is not None and pods is not None else 1
    if node is not None and pods is not None:
        fam.add("node_cpu_usage_seconds_total", node.cpu_usage_core_nanoseconds / NS_PER_S,
                timestamp_ns=node.timestamp_ns)
        fam.add("node_memory_working_set_bytes", node.memory_working_set_bytes,
                timestamp_ns=node.timestamp_ns)
        for pod in pods:
            for c in pod.containers:
                labels = [("container", c.name), ("namespace", pod.namespace),
                          ("pod", pod.name)]
                if c.start_time_ns > 0:
                    fam.add("container_start_time_seconds", c.start_time_ns / NS_PER_S, labels)
                fam.add("container_cpu_usage_seconds_total",
                        c.usage.cpu_usage_core_nanoseconds / NS_PER_S, labels,
                        c.usage.timestamp_ns)
                fam.add("container_memory_working_set_bytes",
                        c.usage.memory_working_set_bytes, labels, c.usage.timestamp_ns)
            labels = [("namespace", pod.namespace), ("pod", pod.name)]
            fam.add("pod_cpu_usage_seconds_total",
                    pod.usage.cpu_usage_core_nanoseconds / NS_PER_S, labels,
                    pod.usage.timestamp_ns)
            fam.add("pod_memory_working_set_bytes", pod.usage.memory_working_set_bytes,
                    labels, pod.usage.timestamp_ns)
    fam.add("resource_scrape_error", error)
    return fam.render()


def collect(node: Callable[[], Usage], pods: Callable[[], list[PodUsage]]) -> bytes:
    """Read both and render; a failure of either is a scrape error, logged."""
    try:
        return render(node(), pods())
    except Exception as exc:
        log.error("Error getting summary for resourceMetric prometheus endpoint: %s", exc)
        return render(None, None)
