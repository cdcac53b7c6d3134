"""What a lab made and which processes it runs, in ``<state dir>/lab.json``.

Written before the first thing is made and after every step, atomically (temp file and
rename), so `down` and `status` need no memory: a lab whose `up` crashed is still
described by its file. Processes are kept as (pid, start time), so a reused pid is never
mistaken for a node's process.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from pycni.atomic_files import write_atomic
from pykubelet.lab.layout import RUN_ROOT, STATE_ROOT, LabLayout

PHASE_CREATING = "creating"
PHASE_UP = "up"
PHASE_FAILED = "failed"


class StateError(ValueError):
    """A state file that cannot be read."""


@dataclass
class ProcessRef:
    """A process the lab started: its pid and start time (psutil's create_time)."""

    pid: int
    start_time: float

    @classmethod
    def of(cls, pid: int) -> ProcessRef:
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except psutil.Error:
            return cls(pid, 0.0)

    def alive(self) -> bool:
        """True while this very process runs (not a later one with the same pid)."""
        try:
            p = psutil.Process(self.pid)
            if p.status() == psutil.STATUS_ZOMBIE:
                return False
            return not self.start_time or abs(p.create_time() - self.start_time) < 0.05
        except psutil.Error:
            return False


@dataclass
class NodeProcesses:
    agent: ProcessRef | None = None
    control_plane: ProcessRef | None = None  # a separate `pykubelet control-plane`
    etcd: ProcessRef | None = None  # the node's etcd member (an etcd lab's control node)


@dataclass
class LabState:
    name: str
    nodes: int
    subnet_index: int
    state_root: str = str(STATE_ROOT)
    run_root: str = str(RUN_ROOT)
    phase: str = PHASE_CREATING
    kubeconfig: str = ""  # the file the context was merged into
    embedded_control_plane: bool = True  # node 1's agent runs the control plane
    control_planes: int = 1
    store: str = "sqlite"
    processes: dict[str, NodeProcesses] = field(default_factory=dict)
    front: ProcessRef | None = None  # the front load balancer on the host (several CPs)
    # how `up` started the control planes, so `restart-node` starts them the same way
    node_monitor_grace_period: float | None = None
    lease_duration: float | None = None
    scheduler_config: str = ""  # the lab's copy of `up --scheduler-config FILE`
    audit: bool = False  # `up --audit`: the control planes write an audit log
    registry: ProcessRef | None = None  # the local registry on the host (docker-registry)

    @property
    def layout(self) -> LabLayout:
        return LabLayout(self.name, self.nodes, self.subnet_index, Path(self.state_root),
                         Path(self.run_root), self.control_planes)

    def node_processes(self, node: str) -> NodeProcesses:
        return self.processes.setdefault(node, NodeProcesses())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LabState:
        def ref(d: dict[str, Any] | None) -> ProcessRef | None:
            return ProcessRef(**d) if d else None

        procs = {node: NodeProcesses(agent=ref(p.get("agent")),
                                     control_plane=ref(p.get("control_plane")),
                                     etcd=ref(p.get("etcd")))
                 for node, p in (data.get("processes") or {}).items()}
        return cls(
            name=data["name"], nodes=int(data["nodes"]), subnet_index=int(data["subnet_index"]),
            state_root=data.get("state_root", str(STATE_ROOT)),
            run_root=data.get("run_root", str(RUN_ROOT)),
            phase=data.get("phase", PHASE_CREATING), kubeconfig=data.get("kubeconfig", ""),
            embedded_control_plane=bool(data.get("embedded_control_plane", True)),
            control_planes=int(data.get("control_planes", 1)),
            store=str(data.get("store", "sqlite")),
            processes=procs, front=ref(data.get("front")),
            node_monitor_grace_period=_seconds(data.get("node_monitor_grace_period")),
            lease_duration=_seconds(data.get("lease_duration")),
            scheduler_config=str(data.get("scheduler_config") or ""),
            audit=bool(data.get("audit", False)),
            registry=ref(data.get("registry")))


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


def save(state: LabState) -> None:
    path = state.layout.state_file
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(state.to_json(), indent=1, sort_keys=True))


def load(path: Path) -> LabState | None:
    """The state in ``path``, or None when there is none."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StateError(f"{path}: unreadable lab state: {exc}") from None
    try:
        return LabState.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise StateError(f"{path}: malformed lab state: {exc}") from None


def require(layout: LabLayout) -> LabState:
    """The state of ``layout``'s lab, which must exist: StateError when it cannot be read or
    there is none (the message says how to make one), for the commands that act on a lab."""
    st = load(layout.state_file)
    if st is None:
        raise StateError(f"lab {layout.name!r} not found (create it with: pykubelet lab up "
                         f"--name {layout.name})")
    return st


def all_states(state_root: Path = STATE_ROOT) -> list[LabState]:
    """Every lab described under ``state_root`` (unreadable files are skipped)."""
    out: list[LabState] = []
    if not state_root.is_dir():
        return out
    for d in sorted(state_root.iterdir()):
        with contextlib.suppress(StateError):
            st = load(d / "lab.json")
            if st is not None:
                out.append(st)
    return out
