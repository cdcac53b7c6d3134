"""The netns Provider (kind's providers.Provider for nodes that are network namespaces):
provision the network, lay out a node's files, start its processes, find the API.

Every method is idempotent over the lab's state, so a step that failed half-way can be
run again, and `down` can undo any prefix of it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import yaml

from pykubelet.lab import network, processes
from pykubelet.lab.layout import LabLayout, NodeLayout
from pykubelet.lab.nodeconfig import JoinInfo, cni_conflist, node_config, parse_join_command
from pykubelet.lab.state import LabState, ProcessRef

BUSYBOX_REF = "localhost/busybox:latest"


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
            build_busybox_image(lab.busybox_archive, name=BUSYBOX_REF)
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
        if not any(BUSYBOX_REF in img.repo_tags for img in store.list()):
            store.import_archive(archive, name=BUSYBOX_REF)

    def write_config(self, node: NodeLayout, join: JoinInfo | None,
                     node_monitor_grace_period: float | None = None) -> Path:
        cfg = node_config(node, join, node_monitor_grace_period)
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

    def start_control_plane(self, state: LabState, node: NodeLayout,
                            node_monitor_grace_period: float | None) -> ProcessRef:
        """`pykubelet control-plane` in node 1's namespace, for a build whose agent does not
        embed it (else the agent's ``controlPlane:`` config starts it)."""
        procs = state.node_processes(node.name)
        if procs.control_plane is not None and procs.control_plane.alive():
            return procs.control_plane
        args = ["control-plane", "--root", str(node.control_plane_root),
                "--listen", node.api_listen]
        if node_monitor_grace_period is not None:
            args += ["--node-monitor-grace-period", str(node_monitor_grace_period)]
        log = node.dir / "control-plane.log"
        procs.control_plane = processes.start_in_netns(node.netns, processes.pykubelet_argv(
            *args), log)
        return procs.control_plane

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
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
