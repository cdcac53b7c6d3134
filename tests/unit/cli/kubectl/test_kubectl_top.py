"""``pykubectl top``'s tables as kubectl's metricsutil printer lays them out."""

from __future__ import annotations

from typing import Any

from pykubelet.cli.kubectl.top import format_nodes, format_pods


def _node(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "usage": {"cpu": cpu, "memory": memory}}


def _pod(ns: str, name: str, *containers: tuple[str, str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "containers": [{"name": c, "usage": {"cpu": cpu, "memory": mem}}
                           for c, cpu, mem in containers]}


def test_nodes_with_percentages_of_allocatable_and_unknown_ones() -> None:
    metrics = [_node("n2", "250000000n", "1536Mi"), _node("n1", "1234567n", "4097Ki")]
    available = {"n1": {"cpu": "2", "memory": "8Gi"}, "n2": {"cpu": "1", "memory": "2Gi"},
                 "n3": {"cpu": "1", "memory": "1Gi"}}
    assert format_nodes(metrics, available) == (
        "NAME   CPU(cores)   CPU(%)      MEMORY(bytes)   MEMORY(%)   \n"
        "n1     2m           0%          4Mi             0%          \n"
        "n2     250m         25%         1536Mi          75%         \n"
        "n3     <unknown>    <unknown>   <unknown>       <unknown>   \n")


def test_nodes_sorted_by_cpu_largest_first_without_headers() -> None:
    metrics = [_node("a", "1m", "1Mi"), _node("b", "5m", "1Mi")]
    out = format_nodes(metrics, {"a": {}, "b": {}}, no_headers=True, sort_by="cpu")
    assert [line.split()[0] for line in out.splitlines()] == ["b", "a"]


def test_pods_sum_their_containers() -> None:
    metrics = [_pod("default", "web", ("app", "1500000n", "3Mi"), ("side", "500000n", "1Mi")),
               _pod("default", "db", ("pg", "0", "0"))]
    assert format_pods(metrics) == (
        "NAME   CPU(cores)   MEMORY(bytes)   \n"
        "db     0m           0Mi             \n"
        "web    2m           4Mi             \n")


def test_pods_with_containers_across_namespaces() -> None:
    metrics = [_pod("b", "x", ("c2", "1m", "1Mi"), ("c1", "2m", "2Mi")),
               _pod("a", "y", ("c", "3m", "3Mi"))]
    assert format_pods(metrics, containers=True, with_namespace=True) == (
        "NAMESPACE   POD   NAME   CPU(cores)   MEMORY(bytes)   \n"
        "a           y     c      3m           3Mi             \n"
        "b           x     c1     2m           2Mi             \n"
        "b           x     c2     1m           1Mi             \n")


def test_nothing_prints_nothing() -> None:
    assert format_nodes([], {}) == ""
    assert format_pods([]) == ""
