"""The real agent in unit tests: a ``Kubelet`` over the in-memory runtime, without cgroups,
static pods or its HTTP server, and an ``APINode`` for its cluster side (issue 25: four test
modules built these each)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykubelet.api.types import Pod

if TYPE_CHECKING:
    from pykubelet.kubelet.agent import Kubelet
    from pykubelet.kubelet.cluster.node import APINode
    from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService


class NoCgroups:
    """Pod cgroups that are never made: the unit tests run without root."""

    def ensure(self, pod: Pod) -> str:
        return ""

    def remove(self, uid: str) -> None:
        pass


def wait_for(check: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    """``check()``'s first truthy answer, polled every 20 ms; fails after ``timeout``."""
    end = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


def new_kubelet(root: Path, runtime: FakeRuntimeService, *, node: str = "n1",
                logs_dir: Path | None = None, node_ips: Sequence[str] = ("192.0.2.1",),
                node_labels: dict[str, str] | None = None) -> Kubelet:
    """A Kubelet (not started) with its state under ``root``/root, pod logs in ``logs_dir``
    (default ``root``/logs) and 1 GiB of memory."""
    from pykubelet.config import KubeletConfig
    from pykubelet.kubelet.agent import Kubelet

    config = KubeletConfig(nodeName=node, rootDir=str(root / "root"), staticPodPath="",
                           podLogsDir=str(logs_dir or root / "logs"), healthzPort=0,
                           nodeLabels=dict(node_labels or {}))
    return Kubelet(config, runtime, pod_cgroups=NoCgroups(), memory_capacity=1 << 30,
                   node_ips=list(node_ips))


def offline_api_node(k: Kubelet, pki_dir: Path) -> APINode:
    """The cluster side of ``k`` with a node certificate of its own and an API server that
    is not there: for its lookups (logs, readings), never started. Close ``server.loop``
    after the test."""
    from pykubelet.client.bootstrap import NodeCredentials
    from pykubelet.controlplane.pki import PKI
    from pykubelet.kubelet.cluster.node import APINode

    pki = PKI(pki_dir)
    paths = pki.issue("kubelet", "system:node:n1", dns=["n1"], ips=["127.0.0.1"])
    creds = NodeCredentials("https://127.0.0.1:1", "t", pki.ca_pem,
                            paths.cert, paths.key)
    return APINode(k, creds, address="127.0.0.1", kubelet_version="v0", server_port=0)
