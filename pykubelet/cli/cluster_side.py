"""`pykubelet run` with a cluster: the control plane in this process when the config has
``controlPlane:``, and the node's side of the cluster (join, Node, Lease, pod source,
status, logs server) when it has ``server:`` or is itself the control node."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pykubelet.config import KubeletConfig

if TYPE_CHECKING:
    from pykubelet.controlplane.server import ControlPlaneThread
    from pykubelet.kubelet.agent import Kubelet
    from pykubelet.kubelet.cluster.node import APINode

log = logging.getLogger("pykubelet.run")


def control_plane_root(cfg: KubeletConfig) -> Path:
    return Path(cfg.rootDir) / "control-plane"


def _admin_labels(cp_thread: ControlPlaneThread, node: APINode) -> None:
    """The labels only an admin sets (node-role.kubernetes.io/control-plane), set by the
    control plane in this process once the node has registered, as kubeadm's
    mark-control-plane does."""
    while not node.reporter.registered.wait(1.0):
        if not cp_thread.loop.is_running():
            return
    fut = asyncio.run_coroutine_threadsafe(
        cp_thread.cp.label_node(node.node_name, node.admin_labels), cp_thread.loop)
    try:
        fut.result(30)
    except Exception as exc:
        log.warning("labelling node %s: %s", node.node_name, exc)


def start(cfg: KubeletConfig, agent: Kubelet) -> Callable[[], None] | None:
    """Start what the config asks for beside the agent; a stop function, or None."""
    if cfg.controlPlane is None and not cfg.server:
        return None
    from pykubelet.client.bootstrap import BootstrapError, join, join_in_child
    from pykubelet.kubelet.cluster.node import APINode, state_dir
    from pykubelet.version import git_version

    cp_thread = None
    server, token, ca_hash = cfg.server, cfg.token, cfg.caCertHash
    local = ""
    if cfg.controlPlane is not None:
        from pykubelet.controlplane.controllers import default_controllers
        from pykubelet.controlplane.election import default_identity
        from pykubelet.controlplane.server import ControlPlaneThread, Options
        from pykubelet.controlplane.storeconfig import etcd_config, leader_election

        options = Options(root=control_plane_root(cfg), listen=cfg.controlPlane.listen,
                          store_path=Path(cfg.controlPlane.store.sqlitePath),
                          etcd=etcd_config(cfg.controlPlane.store),
                          leader_election=leader_election(cfg.controlPlane),
                          identity=f"{agent.node_name}_{default_identity().split('_')[-1]}",
                          advertise_address=agent.host_ips[0],
                          node_monitor_grace_period=cfg.controlPlane.node_monitor_grace_seconds,
                          scheduler_config=Path(cfg.controlPlane.schedulerConfig)
                          if cfg.controlPlane.schedulerConfig else None,
                          service_cluster_ip_range=cfg.controlPlane.serviceClusterIPRange,
                          service_node_port_range=cfg.controlPlane.serviceNodePortRange,
                          cluster_dns=cfg.controlPlane.dnsServer,
                          cluster_dns_address=cfg.controlPlane.dnsAddress,
                          audit_log_path=cfg.controlPlane.auditLogPath,
                          audit_policy_file=Path(cfg.controlPlane.auditPolicyFile)
                          if cfg.controlPlane.auditPolicyFile else None)
        from pykubelet.cli.controlplane_cmd import config_errors

        with config_errors("controlPlane.schedulerConfig", "controlPlane.auditPolicyFile"):
            cp_thread = ControlPlaneThread(options)
        cp_thread.cp.controllers = default_controllers()
        try:
            cp_thread.start()
        except OSError as exc:
            raise click.ClickException(
                f"controlPlane.listen {cfg.controlPlane.listen}: cannot serve: "
                f"{exc.strerror or exc}") from None
        cp = cp_thread.cp
        assert cp.tokens is not None
        log.info("control plane serving on %s; admin kubeconfig %s", cp.local_url,
                 cp.kubeconfig_path)
        # the control node joins its own cluster like any other node
        server, token, ca_hash = cp.local_url, cp.tokens.join, cp.ca_hash
        local = cp.local_url
    servers = cfg.api_servers(local)
    lb = None
    if len(servers) > 1:  # the agent's own load balancer in front of them (k3s's)
        from pykubelet.client.loadbalancer import AGENT_STATE_FILE, LoadBalancer

        lb = LoadBalancer(servers, state_file=Path(cfg.rootDir) / AGENT_STATE_FILE)
        try:
            lb.start()
        except OSError as exc:
            if cp_thread is not None:
                cp_thread.stop()
            raise click.ClickException(f"apiServers: cannot start the load balancer: "
                                       f"{exc.strerror or exc}") from None
        log.info("api server load balancer on %s for %s", lb.url, ", ".join(servers))
        server = lb.url
    try:
        # a worker joins from a child process, so its agent never loads cryptography;
        # the control node has it loaded already (its PKI)
        joining = join if cfg.controlPlane is not None else join_in_child
        creds = joining(server, token, ca_hash, agent.node_name, agent.host_ips,
                        state_dir(cfg.rootDir), servers=servers)
    except BootstrapError as exc:
        if lb is not None:
            lb.stop()
        if cp_thread is not None:
            cp_thread.stop()
        raise click.ClickException(str(exc)) from None
    node = APINode(agent, creds, address=agent.host_ips[0], kubelet_version=git_version(),
                   control_plane=cfg.controlPlane is not None, server_port=cfg.port)
    node.start()
    log.info("node %s joined %s", agent.node_name, creds.server)
    if node.admin_labels:
        if cp_thread is not None:
            threading.Thread(target=_admin_labels, args=(cp_thread, node), daemon=True,
                             name="node-role").start()
        else:
            log.warning("nodeLabels %s: a node may not set these on itself (NodeRestriction); "
                        "an admin sets them (kubectl label node %s ...)",
                        ", ".join(sorted(node.admin_labels)), agent.node_name)

    def stop() -> None:
        node.stop()
        if lb is not None:
            lb.stop()
        if cp_thread is not None:
            cp_thread.stop()

    return stop
