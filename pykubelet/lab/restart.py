"""`pykubelet lab restart-node`: start again whatever of one node is not running (its etcd
member, its control plane, its agent; and the lab's front address and local registry) the
way `lab up` started it, then wait until the node is Ready. What still runs is left alone,
and what the node holds (its pods' containers, its runtime's and agent's state, its etcd
data) is picked up where it was, as after a daemon restart on a real machine."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pykubelet.lab import image_server, processes, state
from pykubelet.lab.create import (
    API_TIMEOUT,
    POLL,
    Context,
    LabError,
    Options,
    admin_client,
    check_alive,
    etcd_healthy,
    locked_lab,
    not_ready_reason,
    wait_api,
)
from pykubelet.lab.layout import NodeLayout
from pykubelet.lab.provider import NetnsProvider
from pykubelet.lab.state import ProcessRef


@dataclass
class Restarted:
    node: str
    started: list[tuple[str, int]] = field(default_factory=list)  # (what, pid)
    running: list[tuple[str, int]] = field(default_factory=list)  # left alone


def restart_node(name: str, node_name: str, state_root: Path, run_root: Path,
                 wait: float) -> Restarted:
    """Start NODE's processes that are not running; LabError (one line) when the lab or
    node is unknown, or a process exits or the node is not Ready within ``wait``."""
    with locked_lab(name, state_root, run_root) as st:
        if st.phase != state.PHASE_UP:
            raise LabError(f"lab {name!r} is {st.phase}, not up: remove it with: pykubelet "
                           f"lab down --name {name}")
        nodes = {n.name: n for n in st.layout.node_layouts()}
        node = nodes.get(node_name)
        if node is None:
            raise LabError(f"lab {name!r} has no node {node_name!r} (its nodes: "
                           f"{', '.join(nodes)})")
        ctx = Context(Options(name=name, nodes=st.nodes, wait=wait, state_root=state_root,
                              run_root=run_root, control_planes=st.control_planes,
                              store=st.store,
                              node_monitor_grace_period=st.node_monitor_grace_period,
                              lease_duration=st.lease_duration), st, NetnsProvider())
        return _restart(ctx, node)


def _restart(ctx: Context, node: NodeLayout) -> Restarted:
    st, provider = ctx.state, ctx.provider
    procs = st.node_processes(node.name)
    done = Restarted(node.name)
    etcd = st.store == "etcd" and node.is_control_plane
    own_control_plane = etcd or (node.is_control_plane and not st.embedded_control_plane)

    def start(what: str, ref: ProcessRef | None, starter: Callable[[], ProcessRef],
              adopt: Callable[[ProcessRef], None], *args: str) -> None:
        """Start it unless it runs: the recorded process, or one a person started again
        in its place (found as `lab status` finds it: ``args`` in its command line),
        which the lab then records."""
        if ref is not None and ref.alive():
            done.running.append((what, ref.pid))
            return
        pid = processes.find(*args)
        if pid is not None:
            adopt(ProcessRef.of(pid))
            done.running.append((what, pid))
        else:
            done.started.append((what, starter().pid))
        ctx.save()

    def set_etcd(ref: ProcessRef) -> None:
        procs.etcd = ref

    def set_control_plane(ref: ProcessRef) -> None:
        procs.control_plane = ref

    def set_agent(ref: ProcessRef) -> None:
        procs.agent = ref

    def set_front(ref: ProcessRef) -> None:
        st.front = ref

    if etcd:
        start("etcd member", procs.etcd, lambda: provider.start_etcd(st, node), set_etcd,
              "--data-dir", str(node.etcd_data_dir))
        end = time.monotonic() + API_TIMEOUT
        while not etcd_healthy(node.etcd_client_url):
            check_alive(ctx, [node])
            if time.monotonic() > end:
                raise LabError(f"{node.name}: etcd did not become healthy on "
                               f"{node.etcd_client_url} within {API_TIMEOUT:.0f}s; see "
                               f"{node.etcd_log}")
            time.sleep(POLL)
    if own_control_plane:
        start("control plane", procs.control_plane, lambda: provider.start_control_plane(
            st, node, st.node_monitor_grace_period, st.lease_duration), set_control_plane,
            "--root", str(node.control_plane_root))
        wait_api(ctx, [node])
    since = time.time()
    start("agent", procs.agent, lambda: provider.start_agent(st, node), set_agent,
          "--config", str(node.config_path))
    agent_started = bool(done.started) and done.started[-1][0] == "agent"
    if st.front is not None:
        start("front load balancer", st.front, lambda: provider.start_front(st), set_front,
              "--state-file", str(ctx.lab.front_state_file))
    if st.registry is not None:  # a lab made before the registry has none to start
        _restart_registry(ctx, done)
    if ctx.options.wait > 0:
        _wait_node_ready(ctx, node, since if agent_started else None)
    return done


def _restart_registry(ctx: Context, done: Restarted) -> None:
    """The lab's local registry, started again (its data kept, the busybox tags pushed
    if missing) when it died, as the front address is: it is the lab's, not a node's."""
    st = ctx.state
    before = st.registry
    try:
        ref = image_server.running(st)
        if ref is not None:
            done.running.append(("local registry", ref.pid))
        else:
            image_server.start(st)
            ctx.save()
            assert st.registry is not None
            done.started.append(("local registry", st.registry.pid))
        image_server.ensure(st, ctx.lab.busybox_archive)
    except image_server.ImageServerError as exc:
        raise LabError(str(exc)) from None
    finally:
        if st.registry != before:
            ctx.save()


def _wait_node_ready(ctx: Context, node: NodeLayout, since: float | None) -> None:
    """Until the API says the node is Ready; after an agent's start, also with its Lease
    renewed since (a Ready left over from before the restart does not count). Past the
    wait, the error says what was last seen instead."""
    from pykubelet.client.rest import ClientError, StatusError

    admin = NetnsProvider.admin_kubeconfig(ctx.lab)
    if admin is None:
        raise LabError("the lab's admin kubeconfig is missing")
    client = admin_client(admin)
    if ctx.state.front is not None:
        client.server = ctx.lab.front_server
    end = time.monotonic() + ctx.options.wait
    why = "the API server was not asked yet"
    while True:
        check_alive(ctx, [node])
        obj: dict[str, object] | None = None
        lease: dict[str, object] | None = None
        try:
            try:
                obj = client.request("GET", f"/api/v1/nodes/{node.name}")
            except StatusError as exc:
                if not exc.not_found:
                    raise
            if since is not None and obj is not None:
                try:
                    lease = client.request(
                        "GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/"
                               f"leases/{node.name}")
                except StatusError as exc:
                    if not exc.not_found:
                        raise
            why = not_ready_reason(obj, lease, since)
        except (ClientError, OSError, ValueError) as exc:
            why = f"the API server ({client.server}) did not answer: {exc}"
        if not why:
            return
        if time.monotonic() > end:
            raise LabError(f"{node.name} not Ready after {ctx.options.wait:.0f}s: {why}; see "
                           f"{node.agent_log}")
        time.sleep(POLL * 2)
