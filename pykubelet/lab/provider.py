"""The netns Provider (kind's providers.Provider for nodes that are network namespaces):
provision the network, lay out a node's files, start its processes, find the API.

Every method is idempotent over the lab's state, so a step that failed half-way can be
run again, and `down` can undo any prefix of it.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import uuid
from pathlib import Path

import yaml

from pycni.atomic_files import write_atomic
from pykubelet.lab import network, processes
from pykubelet.lab.layout import ETCD_CLIENT_PORT, ETCD_PEER_PORT, LabLayout, NodeLayout
from pykubelet.lab.nodeconfig import (
    JoinInfo,
    audit_log,
    cni_conflist,
    node_config,
    parse_join_command,
)
from pykubelet.lab.state import LabState, ProcessRef

BUSYBOX_REPO = "localhost/busybox"
BUSYBOX_REF = f"{BUSYBOX_REPO}:latest"


@functools.cache
def busybox_refs() -> tuple[str, ...]:
    """The tags of the lab's busybox: its real release (``localhost/busybox:1.35``, which
    kubelet's IfNotPresent default never pulls) and ``latest`` (which means pull Always)."""
    from pykubelet.runtime.image_build import busybox_version

    version = busybox_version()
    return (f"{BUSYBOX_REPO}:{version}", BUSYBOX_REF) if version else (BUSYBOX_REF,)


class ProvisionError(RuntimeError):
    """A node could not be provisioned or started; the message says which and why."""


class NetnsProvider:
    """Nodes as network namespaces on a host bridge, each running its own pykubelet."""

    # ------------------------------------------------------------------ network
    def provision_network(self, lab: LabLayout) -> None:
        network.ensure_bridge(lab)
        for node in lab.node_layouts():
            network.ensure_node_link(lab, node)

    # ------------------------------------------------------------------ images
    def build_image(self, lab: LabLayout) -> Path:
        """The offline busybox image, built once per lab."""
        from pykubelet.runtime.image_build import build_busybox_image

        if not lab.busybox_archive.exists():
            build_busybox_image(lab.busybox_archive, name=busybox_refs()[0])
        return lab.busybox_archive

    # ------------------------------------------------------------------ node files
    def prepare_node(self, node: NodeLayout, archive: Path) -> None:
        """The node's directories, CNI network list and images (its config comes later,
        once node 1's join command is known)."""
        from pykubelet.runtime.images import ImageStore

        for d in (node.root_dir, node.manifests_dir, node.cni_conf_dir, node.cni_data_dir,
                  node.pod_logs_dir, node.node_run_dir):
            d.mkdir(parents=True, exist_ok=True)
        conf = node.cni_conf_dir / "10-pykube-lab.conflist"
        _write_atomic(conf, json.dumps(cni_conflist(node), indent=2) + "\n")
        store = ImageStore(node.root_dir / "images")
        for ref in busybox_refs():
            if not any(ref in img.repo_tags for img in store.list()):
                store.import_archive(archive, name=ref)

    def write_config(self, node: NodeLayout, join: JoinInfo | None,
                     node_monitor_grace_period: float | None = None,
                     api_servers: list[str] | None = None, scheduler_config: str = "",
                     audit_policy: str = "") -> Path:
        cfg = node_config(node, join, node_monitor_grace_period, api_servers=api_servers,
                          scheduler_config=scheduler_config, audit_policy=audit_policy)
        _write_atomic(node.config_path, yaml.safe_dump(cfg, sort_keys=False))
        return node.config_path

    # ------------------------------------------------------------------ processes
    def start_agent(self, state: LabState, node: NodeLayout) -> ProcessRef:
        """`pykubelet run --config` inside the node's namespace (unless it already runs)."""
        procs = state.node_processes(node.name)
        if procs.agent is not None and procs.agent.alive():
            return procs.agent
        argv = processes.pykubelet_argv("run", "--config", str(node.config_path))
        procs.agent = processes.start_in_netns(node.netns, argv, node.agent_log)
        return procs.agent

    def start_etcd(self, state: LabState, node: NodeLayout) -> ProcessRef:
        """The node's member of the lab's etcd cluster (Debian's etcd-server), in its
        namespace, on its lab address; a member whose data directory exists rejoins with
        it (etcd ignores the initial-cluster flags then)."""
        from pykubelet.controlplane.storage.etcdserver import ETCD, EtcdServer

        procs = state.node_processes(node.name)
        if procs.etcd is not None and procs.etcd.alive():
            return procs.etcd
        if shutil.which(ETCD) is None:
            raise ProvisionError("--store etcd: etcd is not installed (Debian package "
                                 "etcd-server)")
        member = EtcdServer(node.etcd_data_dir, name=node.etcd_name, host=node.address,
                            client_port=ETCD_CLIENT_PORT, peer_port=ETCD_PEER_PORT,
                            initial_cluster=state.layout.etcd_initial_cluster)
        procs.etcd = processes.start_in_netns(node.netns, member.command(), node.etcd_log)
        return procs.etcd

    def start_control_plane(self, state: LabState, node: NodeLayout,
                            node_monitor_grace_period: float | None,
                            lease_duration: float | None = None) -> ProcessRef:
        """`pykubelet control-plane` in a control node's namespace: node 1's for a build
        whose agent does not embed it, every control node's in an etcd lab (over the lab's
        etcd cluster, its own member first, with leader election)."""
        procs = state.node_processes(node.name)
        if procs.control_plane is not None and procs.control_plane.alive():
            return procs.control_plane
        lab = state.layout
        args = ["control-plane", "--root", str(node.control_plane_root),
                "--listen", node.api_listen]
        if node_monitor_grace_period is not None:
            args += ["--node-monitor-grace-period", str(node_monitor_grace_period)]
        if state.scheduler_config:
            args += ["--scheduler-config", state.scheduler_config]
        if state.audit:
            args += ["--audit-policy-file", str(lab.audit_policy_file),
                     "--audit-log-path", str(audit_log(node))]
        if state.store == "etcd":
            args += ["--etcd-servers", ",".join(lab.etcd_endpoints_for(node.index)),
                     "--leader-elect", "--identity", f"{node.name}_{uuid.uuid4()}",
                     "--tls-san", lab.gateway]
            if lease_duration is not None:  # kube-scheduler's ratios: 15s, 10s, 2s
                args += ["--leader-elect-lease-duration", f"{lease_duration:g}s",
                         "--leader-elect-renew-deadline", f"{lease_duration * 2 / 3:g}s",
                         "--leader-elect-retry-period", f"{max(0.2, lease_duration / 7.5):g}s"]
        procs.control_plane = processes.start_in_netns(node.netns, processes.pykubelet_argv(
            *args), node.control_plane_log)
        return procs.control_plane

    def start_front(self, state: LabState) -> ProcessRef:
        """The lab's front address on the host (kind's HA load balancer): a TCP load
        balancer on the bridge's host address over every control node's API server."""
        if state.front is not None and state.front.alive():
            return state.front
        lab = state.layout
        argv = processes.pykubelet_argv("load-balancer", "--listen", lab.front_listen,
                                        "--state-file", str(lab.front_state_file))
        for n in lab.control_nodes():
            argv += ["--server", n.api_server]
        state.front = processes.start_detached(argv, lab.front_log)
        return state.front

    # ------------------------------------------------------------------ the API
    @staticmethod
    def api_endpoint(lab: LabLayout) -> str:
        return lab.control_node.api_server

    @staticmethod
    def admin_kubeconfig(lab: LabLayout) -> Path | None:
        """The admin kubeconfig node 1's control plane wrote once it served."""
        root = lab.control_node.control_plane_root
        for p in (root / "admin.kubeconfig", root.parent / "admin.kubeconfig"):
            if p.exists():
                return p
        return None

    def join_info(self, lab: LabLayout) -> JoinInfo:
        """What joining nodes need: node 1's `pykubelet control-plane --root R join-command`."""
        root = lab.control_node.control_plane_root
        proc = subprocess.run(
            processes.pykubelet_argv("control-plane", "--root", str(root), "join-command"),
            capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise ProvisionError(f"join-command: {proc.stderr.strip() or proc.returncode}")
        return parse_join_command(proc.stdout)

    @staticmethod
    def list_nodes(state: LabState) -> list[NodeLayout]:
        return state.layout.node_layouts()


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
