"""metrics-server's storage (pkg/storage/{node,pod}.go): the last two points of every node
and container, and the usage they give: CPU as the rate between the two (nanocores over
the window between their times), memory as the last working set.

A node or pod shows only once it has two usable points: a counter that went back or a
time that did not move drops the pair. A container that started after the previous point
(a restart, or a pod first seen within 10 s of its start) counts from its start with zero
CPU, as metrics-server does for fresh containers, so a new pod shows at its first scrape.
A pod shows only when every one of its containers has a usable pair; its timestamp and
window are those of its earliest container.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykubelet.controlplane.metricsserver.decode import Batch, Point

NS_PER_S = 1_000_000_000
#: a container seen for the first time counts from its start only when that is this recent
#: (a longer-running one would show its lifetime's average, not its current rate)
FRESH_NS = 10 * NS_PER_S


@dataclass(frozen=True)
class Usage:
    timestamp_ns: int
    window_ns: int
    cpu_nanocores: int
    memory_bytes: int


def usage_between(last: Point, prev: Point) -> Usage | None:
    """resourceUsage: None when the pair cannot give a rate."""
    window = last.timestamp_ns - prev.timestamp_ns
    if window <= 0 or last.cpu_ns < prev.cpu_ns:
        return None
    rate = (last.cpu_ns - prev.cpu_ns) * NS_PER_S // window
    return Usage(last.timestamp_ns, window, rate, last.memory_bytes)


def _previous(last: Point, stored_last: Point | None, stored_prev: Point | None
              ) -> Point | None:
    """The point to pair with a new ``last``: the stored last one if it is older, else the
    stored previous one; a container started since counts from its start."""
    fresh = stored_last is None and 0 < last.timestamp_ns - last.start_time_ns <= FRESH_NS
    if last.start_time_ns and (fresh or (stored_last is not None
                                         and last.start_time_ns > stored_last.timestamp_ns)):
        if 0 < last.start_time_ns < last.timestamp_ns:
            return Point(timestamp_ns=last.start_time_ns, cpu_ns=0,
                         start_time_ns=last.start_time_ns)
        return None
    if stored_last is not None and stored_last.timestamp_ns < last.timestamp_ns:
        return stored_last
    if stored_prev is not None and stored_prev.timestamp_ns < last.timestamp_ns:
        return stored_prev
    return None


class Storage:
    """The points of the nodes scraped, replaced node by node at each scrape."""

    def __init__(self) -> None:
        # node -> (last, prev)
        self._nodes: dict[str, tuple[Point, Point | None]] = {}
        # node -> (namespace, pod) -> container -> (last, prev)
        self._pods: dict[str, dict[tuple[str, str], dict[str, tuple[Point, Point | None]]]] = {}

    def store(self, node: str, batch: Batch) -> None:
        """One scrape of ``node``: what it no longer reports is forgotten."""
        if batch.node is not None:
            old = self._nodes.get(node)
            prev = _previous(batch.node, old[0] if old else None, old[1] if old else None)
            self._nodes[node] = (batch.node, prev)
        else:
            self._nodes.pop(node, None)
        old_pods = self._pods.get(node, {})
        pods: dict[tuple[str, str], dict[str, tuple[Point, Point | None]]] = {}
        for ref, containers in batch.pods.items():
            stored = old_pods.get(ref, {})
            pods[ref] = {}
            for name, last in containers.items():
                s_last, s_prev = stored.get(name, (None, None))
                pods[ref][name] = (last, _previous(last, s_last, s_prev))
        self._pods[node] = pods

    def forget(self, keep: set[str]) -> None:
        """Drop the nodes not in ``keep`` (gone, or no longer Ready)."""
        for node in [n for n in self._nodes if n not in keep]:
            del self._nodes[node]
        for node in [n for n in self._pods if n not in keep]:
            del self._pods[node]

    def node_usage(self, node: str) -> Usage | None:
        pair = self._nodes.get(node)
        if pair is None or pair[1] is None:
            return None
        return usage_between(pair[0], pair[1])

    def pod_usage(self, namespace: str, pod: str
                  ) -> tuple[Usage, list[tuple[str, Usage]]] | None:
        """The pod's earliest container's time and window, and each container's usage."""
        for pods in self._pods.values():
            containers = pods.get((namespace, pod))
            if containers is None:
                continue
            out: list[tuple[str, Usage]] = []
            for name in sorted(containers):
                last, prev = containers[name]
                usage = usage_between(last, prev) if prev is not None else None
                if usage is None:
                    return None
                out.append((name, usage))
            if not out:
                return None
            earliest = min((u for _, u in out), key=lambda u: u.timestamp_ns)
            return earliest, out
        return None
