"""NodePorts: requested hostPorts must be free on the node."""

from __future__ import annotations

import pytest
from builders import make_node, make_pod, plugin_for, run_filter

from pysched.framework.status import Code
from pysched.plugins.node_ports import ERR_REASON


def _node_with(*ports: tuple[int, str, str]):  # type: ignore[no-untyped-def]
    pods = [
        make_pod(f"e{i}").node("n").host_port(p, proto, ip).obj()
        for i, (p, proto, ip) in enumerate(ports)
    ]
    return [make_node("n").obj()], pods


@pytest.mark.parametrize(
    ("existing", "want", "fits"),
    [
        ([], (8080, "TCP", ""), True),
        ([(8080, "TCP", "")], (8080, "TCP", ""), False),
        ([(8080, "UDP", "")], (8080, "TCP", ""), True),
        ([(8080, "TCP", "127.0.0.1")], (8080, "TCP", "127.0.0.2"), True),
        ([(8080, "TCP", "127.0.0.1")], (8080, "TCP", "0.0.0.0"), False),
        ([(8080, "TCP", "0.0.0.0")], (8080, "TCP", "127.0.0.1"), False),
    ],
)
def test_filter(existing, want, fits) -> None:  # type: ignore[no-untyped-def]
    nodes, pods = _node_with(*existing)
    pod = make_pod().host_port(want[0], want[1], want[2]).obj()
    s = run_filter(plugin_for("NodePorts", nodes, pods), pod, nodes, pods)["n"]
    if fits:
        assert s is None
    else:
        assert s is not None
        assert s.code == Code.UNSCHEDULABLE
        assert s.reasons == [ERR_REASON]
        assert ERR_REASON == "node(s) didn't have free ports for the requested pod ports"


def test_pod_without_host_ports_skips_and_sidecar_ports_count() -> None:
    nodes, pods = _node_with((9000, "TCP", ""))
    pl = plugin_for("NodePorts", nodes, pods)
    assert run_filter(
        pl, make_pod().container(ports=[{"containerPort": 9000}]).obj(), nodes, pods
    ) == {"n": None}
    sidecar = (
        make_pod()
        .init_container(sidecar=True, ports=[{"containerPort": 9000, "hostPort": 9000}])
        .obj()
    )
    s = run_filter(pl, sidecar, nodes, pods)["n"]
    assert s is not None
    assert s.code == Code.UNSCHEDULABLE
    plain_init = make_pod().init_container(ports=[{"containerPort": 9000, "hostPort": 9000}]).obj()
    assert run_filter(pl, plain_init, nodes, pods) == {"n": None}
