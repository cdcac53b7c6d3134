"""What a lab node reads (pure): its `pykubelet run` config (DESIGN.md "Node config") and
its CNI network list.

Node 1's config carries ``controlPlane:`` (listening on its lab address); the others carry
``server``, ``token`` and ``caCertHash`` from node 1's join command. In an etcd lab the
control planes are processes of their own, so every node joins, with ``apiServers``
naming each control node's API server when there are several. Every path is the
node's own, so nothing is shared between nodes or with the host's /var/lib/pykubelet.
Every node trusts the lab's local registry (the host's end of the bridge) as insecure.
The CNI network is a bridge ``cni0`` with the node's pod CIDR and no masquerade: pods
reach pods on other nodes by their own addresses through the host-gw routes.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pykubelet.config import API_VERSION, KIND, ControlPlaneConfig, decode_config
from pykubelet.lab.layout import HEALTHZ_PORT, POD_SUPERNET, NodeLayout

CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"  # kubeadm's, as the agent's

CNI_BIN_DIR = "/opt/cni/bin:/usr/lib/cni"
CNI_BRIDGE = "cni0"


class JoinError(ValueError):
    """A join command that does not say --server, --token and --ca-cert-hash."""


@dataclass(frozen=True)
class JoinInfo:
    server: str
    token: str
    ca_cert_hash: str


CLUSTER_DNS_IP = "10.96.0.10"  # the kube-dns Service's ClusterIP (kubeadm's)


def parse_join_command(text: str) -> JoinInfo:
    """``--server URL --token T --ca-cert-hash H`` (as `control-plane join-command` prints)."""
    words = shlex.split(text.strip())
    values: dict[str, str] = {}
    it = iter(words)
    for w in it:
        if w.startswith("--"):
            key, eq, val = w[2:].partition("=")
            values[key] = val if eq else next(it, "")
    missing = [k for k in ("server", "token", "ca-cert-hash") if not values.get(k)]
    if missing:
        raise JoinError(f"join command: missing {', '.join('--' + k for k in missing)}")
    return JoinInfo(values["server"], values["token"], values["ca-cert-hash"])


def node_monitor_grace_configurable() -> bool:
    """Whether node configs take ``controlPlane.nodeMonitorGracePeriod`` (an embedded
    control plane's node-monitor grace, which tests shorten)."""
    return "nodeMonitorGracePeriod" in {f.name for f in fields(ControlPlaneConfig)}


def audit_log(node: NodeLayout) -> Path:
    """Where a control node's control plane writes the audit log (``up --audit``)."""
    return node.control_plane_root / "audit.log"


def node_config(node: NodeLayout, join: JoinInfo | None,
                node_monitor_grace_period: float | None = None, *,
                api_servers: list[str] | None = None,
                scheduler_config: str = "", audit_policy: str = "") -> dict[str, Any]:
    """The node's KubeletConfiguration; ``join`` is required for every node but an
    embedded control node. With ``api_servers`` (an etcd lab, whose control planes run as
    their own processes) every node joins: its preferred API server is ``server`` and
    the whole list is ``apiServers``, which its agent load-balances over."""
    cfg: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "nodeName": node.name,
        "rootDir": str(node.root_dir),
        "runDir": str(node.node_run_dir),
        "containerRuntimeEndpoint": "",
        "staticPodPath": str(node.manifests_dir),
        "cniConfDir": str(node.cni_conf_dir),
        "cniBinDir": CNI_BIN_DIR,
        "podCIDR": node.pod_cidr,
        "podLogsDir": str(node.pod_logs_dir),
        "healthzBindAddress": node.address,
        "healthzPort": HEALTHZ_PORT,
        "nodeLabels": {},
        "registerWithTaints": [],
        "insecureRegistries": [node.registry_address],  # the lab's registry, plain HTTP
        # every node proxies Services, in its own netns (so never the host's tables)
        "serviceProxy": {"enabled": True, "clusterCIDR": f"{POD_SUPERNET}.0.0/16"},
        # ClusterFirst pods ask the kube-dns Service (node 1's control plane serves it)
        "clusterDNS": [CLUSTER_DNS_IP],
        "clusterDomain": "cluster.local",
    }
    embedded = node.is_control_plane and not api_servers
    if embedded:
        cfg["controlPlane"] = {"listen": node.api_listen,
                               "storePath": str(node.control_plane_root / "store.db")}
        if node_monitor_grace_period is not None and node_monitor_grace_configurable():
            cfg["controlPlane"]["nodeMonitorGracePeriod"] = f"{node_monitor_grace_period:g}s"
        if scheduler_config:
            cfg["controlPlane"]["schedulerConfig"] = scheduler_config
        if audit_policy:  # `up --audit`: the log beside the control plane's store
            cfg["controlPlane"]["auditPolicyFile"] = audit_policy
            cfg["controlPlane"]["auditLogPath"] = str(audit_log(node))
    elif join is None:
        raise JoinError(f"{node.name}: a joining node needs node 1's join command")
    else:
        cfg.update(server=api_servers[0] if api_servers else join.server, token=join.token,
                   caCertHash=join.ca_cert_hash)
        if api_servers and len(api_servers) > 1:
            cfg["apiServers"] = list(api_servers)
        # a control plane beside it (not in it): the lab labels the Node with the admin's
        # credentials once it is Ready (NodeRestriction keeps node-role labels from nodes)
    decode_config(cfg)  # the agent's own strict decoder: a lab never writes a bad config
    return cfg


def cni_conflist(node: NodeLayout) -> dict[str, Any]:
    """The node's default network: pycni's bridge and host-local, then portmap."""
    return {
        "cniVersion": "1.0.0",
        "name": node.network_name,
        "plugins": [
            {"type": "pycni-bridge", "bridge": CNI_BRIDGE, "isGateway": True, "ipMasq": False,
             "hairpinMode": True,
             "ipam": {"type": "pycni-host-local", "dataDir": str(node.cni_data_dir),
                      "ranges": [[{"subnet": node.pod_cidr}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
