"""`lab status`: what a lab's state file says, checked against the live processes and
the API (nodes' readiness, the pods on each node, the scheduler's leader).

The JSON form is DESIGN.md's contract: ``{"name", "nodes": [{"name", "address", "ready",
"agentPid", "controlPlanePid", "etcdPid"}], "leader"}``, to which it adds, per node,
``apiServer`` (the API server its agent uses now: its load balancer's current server when
it has several) and, for an etcd lab, ``members`` (each etcd member: name, client URL,
pid, healthy, leader) and ``front`` (the front address of several control planes). The
table adds the pods.
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import yaml

from pykubelet.client.loadbalancer import AGENT_STATE_FILE
from pykubelet.lab import processes
from pykubelet.lab.create import node_ready
from pykubelet.lab.layout import NodeLayout
from pykubelet.lab.provider import NetnsProvider
from pykubelet.lab.state import LabState, ProcessRef

SCHEDULER_LEASE = ("kube-system", "kube-scheduler")


@dataclass
class NodeReport:
    name: str
    address: str
    ready: bool
    agent_pid: int | None
    control_plane_pid: int | None
    etcd_pid: int | None = None
    api_server: str = ""
    pods: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address, "ready": self.ready,
                "agentPid": self.agent_pid, "controlPlanePid": self.control_plane_pid,
                "etcdPid": self.etcd_pid, "apiServer": self.api_server or None}


@dataclass
class MemberReport:
    """One etcd member, as its own /v3/maintenance/status answers."""

    name: str
    client_url: str
    pid: int | None
    healthy: bool
    leader: bool

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "clientURL": self.client_url, "pid": self.pid,
                "healthy": self.healthy, "leader": self.leader}


@dataclass
class LabReport:
    name: str
    nodes: list[NodeReport]
    leader: str | None
    phase: str = ""
    subnet: str = ""
    context: str = ""
    api: str = ""
    api_error: str = ""
    members: list[MemberReport] = field(default_factory=list)
    front: str = ""
    registry: str = ""  # ADDR:PORT of the lab's local registry ("": a lab made without)
    registry_pid: int | None = None
    registry_error: str = ""  # why it does not serve ("" while it does)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "nodes": [n.to_json() for n in self.nodes],
                               "leader": self.leader}
        if self.registry:
            out["registry"] = self.registry
            out["registryPid"] = self.registry_pid
        if self.members:
            out["members"] = [m.to_json() for m in self.members]
        if self.front:
            out["front"] = self.front
        return out


def _pid(ref: ProcessRef | None, *args: str) -> int | None:
    """The recorded process while it lives, else (given ``args``, what its command line
    holds) the one a person started again in its place."""
    if ref is not None and ref.alive():
        return ref.pid
    return processes.find(*args) if ref is not None and args else None


def _servers(st: LabState) -> list[str]:
    """Where status asks the API: the front address, then each control node's server."""
    lab = st.layout
    return ([lab.front_server] if st.front is not None else []) + [
        n.api_server for n in lab.control_nodes()]


def _client_for(st: LabState):  # type: ignore[no-untyped-def]
    """An admin client on the first API server that answers, or the error of the last."""
    from pykubelet.client.rest import ClientError, RESTClient

    admin = NetnsProvider.admin_kubeconfig(st.layout)
    if admin is None:
        return None, "no admin kubeconfig yet"
    error = ""
    for server in _servers(st):
        try:
            client = RESTClient.from_kubeconfig(admin, user_agent="pykubelet-lab")
            client.server, client.timeout = server, 5.0
            client.request("GET", "/version", timeout=3)
            return client, ""
        except (ClientError, OSError, ValueError) as exc:
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None, error


def agent_api_server(node: NodeLayout) -> str:
    """The API server the node's agent uses: its load balancer's current server (the
    state file the agent keeps, as k3s's agent-load-balancer.json), else its config's."""
    try:
        lb = json.loads((node.root_dir / AGENT_STATE_FILE).read_text())
        if lb.get("currentServer"):
            return str(lb["currentServer"])
    except (OSError, ValueError, AttributeError):
        pass
    try:
        cfg = yaml.safe_load(node.config_path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return ""
    if cfg.get("controlPlane"):
        return node.api_server
    return str(cfg.get("server") or "")


def etcd_members(st: LabState) -> list[MemberReport]:
    if st.store != "etcd":
        return []
    out = []
    for node in st.layout.control_nodes():
        procs = st.processes.get(node.name)
        healthy, leader = False, False
        try:
            req = urllib.request.Request(f"{node.etcd_client_url}/v3/maintenance/status",
                                         data=b"{}", method="POST")
            with urllib.request.urlopen(req, timeout=2) as r:
                answer = json.load(r)
            member = str((answer.get("header") or {}).get("member_id") or "")
            healthy = bool(member) and str(answer.get("leader") or "0") != "0"
            leader = healthy and member == str(answer.get("leader"))
        except (OSError, ValueError):
            pass
        out.append(MemberReport(node.etcd_name, node.etcd_client_url,
                                _pid(procs.etcd, "--data-dir", str(node.etcd_data_dir))
                                if procs else None, healthy, leader))
    return out


def registry_status(st: LabState) -> tuple[int | None, str]:
    """(pid, "") of the lab's running registry process, else (None, why not)."""
    from pykubelet.lab import image_server

    if image_server.running(st) is not None and st.registry is not None:
        return st.registry.pid, ""
    if st.registry is None:
        return None, "not started"
    return None, f"not running (pid {st.registry.pid} exited)"


def report(st: LabState) -> LabReport:
    lab = st.layout
    nodes_api: dict[str, dict[str, Any]] = {}
    pods_by_node: dict[str, list[str]] = {}
    leader: str | None = None
    client, api_error = _client_for(st)
    if client is not None:
        from pykubelet.client.rest import LEASES, NODES, PODS, ClientError

        try:
            for n in client.list(NODES).get("items") or []:
                nodes_api[n["metadata"]["name"]] = n
            for p in client.list(PODS).get("items") or []:
                meta, spec = p.get("metadata") or {}, p.get("spec") or {}
                phase = (p.get("status") or {}).get("phase", "")
                pods_by_node.setdefault(spec.get("nodeName") or "", []).append(
                    f"{meta.get('namespace')}/{meta.get('name')} ({phase})")
            if st.control_planes == 1:
                leader = lab.control_node.name  # the one control plane, while it answers
            with contextlib.suppress(ClientError):
                lease = client.get(LEASES, SCHEDULER_LEASE[1], SCHEDULER_LEASE[0])
                spec = lease.get("spec") or {}
                holder = spec.get("holderIdentity") or ""
                leader = next((n.name for n in lab.control_nodes()
                               if holder == n.name or holder.startswith(n.name + "_")), leader)
        except (ClientError, OSError, ValueError) as exc:
            api_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    registry_pid, registry_error = registry_status(st)
    if registry_pid is not None:
        from pykubelet.lab import image_server

        if not image_server.serving(lab.registry_address):
            registry_error = f"pid {registry_pid} does not answer on /v2/"
    out = []
    for node in lab.node_layouts():
        procs = st.processes.get(node.name)
        agent = _pid(procs.agent, "--config", str(node.config_path)) if procs else None
        cp: int | None = None
        if node.is_control_plane and procs is not None:
            cp = agent if st.embedded_control_plane else _pid(
                procs.control_plane, "--root", str(node.control_plane_root))
        api_node = nodes_api.get(node.name)
        out.append(NodeReport(
            name=node.name, address=node.address,
            ready=bool(api_node and node_ready(api_node) and agent),
            agent_pid=agent, control_plane_pid=cp,
            etcd_pid=_pid(procs.etcd, "--data-dir", str(node.etcd_data_dir)) if procs else None,
            api_server=agent_api_server(node) if agent else "",
            pods=sorted(pods_by_node.get(node.name, []))))
    return LabReport(st.name, out, leader if not api_error else None, phase=st.phase,
                     subnet=str(lab.subnet), context=lab.context,
                     api=lab.front_server if st.front is not None else
                     lab.control_node.api_server, api_error=api_error,
                     members=etcd_members(st),
                     front=lab.front_server if st.front is not None else "",
                     registry=lab.registry_address if st.registry is not None else "",
                     registry_pid=registry_pid, registry_error=registry_error)


def render_table(r: LabReport) -> str:
    lines = [f"lab {r.name} ({r.phase}): {r.subnet}, API {r.api}, context {r.context}"]
    if r.api_error:
        lines.append(f"API: {r.api_error}")
    rows = [("NAME", "ADDRESS", "READY", "AGENT", "CONTROL-PLANE", "ETCD", "API-SERVER",
             "PODS")]
    for n in r.nodes:
        rows.append((n.name, n.address, str(n.ready), str(n.agent_pid or "-"),
                     str(n.control_plane_pid or "-"), str(n.etcd_pid or "-"),
                     n.api_server or "-", str(len(n.pods))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    for n in r.nodes:
        for p in n.pods:
            lines.append(f"  {n.name}: {p}")
    for m in r.members:
        lines.append(f"etcd member {m.name} {m.client_url}: pid {m.pid or '-'}, "
                     f"{'healthy' if m.healthy else 'unhealthy'}"
                     + (", raft leader" if m.leader else ""))
    if r.registry and not r.registry_error:
        lines.append(f"registry: {r.registry} (pid {r.registry_pid})")
    elif r.registry and r.registry_pid is not None:
        lines.append(f"registry: {r.registry} {r.registry_error}")
    elif r.registry:
        first = r.nodes[0].name if r.nodes else "node1"
        lines.append(f"registry: {r.registry} {r.registry_error}; start it again with: "
                     f"pykubelet lab restart-node {first} --name {r.name}")
    if r.leader:
        lines.append(f"leader: {r.leader}")
    return "\n".join(lines)
