"""Pods' /etc/resolv.conf from the agent's clusterDNS, clusterDomain and resolvConf, on
real runtimes: ClusterFirst names the cluster DNS with the namespace's searches, a
hostNetwork pod with ClusterFirst gets the node's (resolvConf), as upstream's kubelet."""

from __future__ import annotations

import pytest
from agent_harness import busybox_pod

pytestmark = [pytest.mark.root, pytest.mark.runc, pytest.mark.netns]


def test_resolv_conf_by_dns_policy(agent_factory, endpoint, tmp_path):
    node_resolv = tmp_path / "resolv.conf"
    node_resolv.write_text("nameserver 192.0.2.53\nsearch node.example\n")
    h = agent_factory(endpoint)
    h.start(h.config(clusterDNS=["10.96.0.10"], clusterDomain="k.example",
                     resolvConf=str(node_resolv)))
    h.write("cf", busybox_pod("cf", "sleep 3600"))
    h.write("hn", busybox_pod("hn", "sleep 3600", hostNetwork=True))
    p = h.wait_running("cf")
    _, out = h.exec(p["metadata"]["uid"], "app", ["cat", "/etc/resolv.conf"])
    assert out == ("search default.svc.k.example svc.k.example k.example node.example\n"
                   "nameserver 10.96.0.10\noptions ndots:5\n")
    p = h.wait_running("hn")
    _, out = h.exec(p["metadata"]["uid"], "app", ["cat", "/etc/resolv.conf"])
    assert out == "search node.example\nnameserver 192.0.2.53\n"
