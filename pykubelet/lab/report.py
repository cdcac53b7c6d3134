"""`lab status`: what a lab's state file says, checked against the live processes and
the API (nodes' readiness, the pods on each node, the scheduler's leader).

The JSON form is DESIGN.md's contract, exactly: ``{"name", "nodes": [{"name", "address",
"ready", "agentPid", "controlPlanePid", "etcdPid"}], "leader"}``; the table adds the pods.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from pykubelet.lab.create import node_ready
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
    pods: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address, "ready": self.ready,
                "agentPid": self.agent_pid, "controlPlanePid": self.control_plane_pid,
                "etcdPid": self.etcd_pid}


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

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "nodes": [n.to_json() for n in self.nodes],
                "leader": self.leader}


def _pid(ref: ProcessRef | None) -> int | None:
    return ref.pid if ref is not None and ref.alive() else None


def report(st: LabState) -> LabReport:
    lab = st.layout
    nodes_api: dict[str, dict[str, Any]] = {}
    pods_by_node: dict[str, list[str]] = {}
    leader: str | None = None
    api_error = ""
    admin = NetnsProvider.admin_kubeconfig(lab)
    if admin is None:
        api_error = "no admin kubeconfig yet"
    else:
        from pykubelet.client.rest import LEASES, NODES, PODS, ClientError, RESTClient

        try:
            client = RESTClient.from_kubeconfig(admin, user_agent="pykubelet-lab")
            client.timeout = 5.0
            for n in client.list(NODES).get("items") or []:
                nodes_api[n["metadata"]["name"]] = n
            for p in client.list(PODS).get("items") or []:
                meta, spec = p.get("metadata") or {}, p.get("spec") or {}
                phase = (p.get("status") or {}).get("phase", "")
                pods_by_node.setdefault(spec.get("nodeName") or "", []).append(
                    f"{meta.get('namespace')}/{meta.get('name')} ({phase})")
            leader = lab.control_node.name  # the one control plane, while it answers
            with contextlib.suppress(ClientError):
                lease = client.get(LEASES, SCHEDULER_LEASE[1], SCHEDULER_LEASE[0])
                holder = (lease.get("spec") or {}).get("holderIdentity") or ""
                leader = next((n.name for n in lab.node_layouts()
                               if holder == n.name or holder.startswith(n.name + "_")), leader)
        except (ClientError, OSError, ValueError) as exc:
            api_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    out = []
    for node in lab.node_layouts():
        procs = st.processes.get(node.name)
        agent = _pid(procs.agent) if procs else None
        cp: int | None = None
        if node.is_control_plane and procs is not None:
            cp = agent if st.embedded_control_plane else _pid(procs.control_plane)
        api_node = nodes_api.get(node.name)
        out.append(NodeReport(
            name=node.name, address=node.address,
            ready=bool(api_node and node_ready(api_node) and agent),
            agent_pid=agent, control_plane_pid=cp,
            pods=sorted(pods_by_node.get(node.name, []))))
    return LabReport(st.name, out, leader if not api_error else None, phase=st.phase,
                     subnet=str(lab.subnet), context=lab.context,
                     api=lab.control_node.api_server, api_error=api_error)


def render_table(r: LabReport) -> str:
    lines = [f"lab {r.name} ({r.phase}): {r.subnet}, API {r.api}, context {r.context}"]
    if r.api_error:
        lines.append(f"API: {r.api_error}")
    rows = [("NAME", "ADDRESS", "READY", "AGENT", "CONTROL-PLANE", "PODS")]
    for n in r.nodes:
        rows.append((n.name, n.address, str(n.ready), str(n.agent_pid or "-"),
                     str(n.control_plane_pid or "-"), str(len(n.pods))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    for n in r.nodes:
        for p in n.pods:
            lines.append(f"  {n.name}: {p}")
    if r.leader:
        lines.append(f"leader: {r.leader}")
    return "\n".join(lines)
