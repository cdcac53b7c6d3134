"""`lab up`: kind's create as a list of idempotent steps over one context.

Each step says what it does (the ✓/✗ line), does it, and records what it made in the
lab's state file before the next one starts, so a failure at any point leaves a lab that
`down` removes completely, which `up` does itself unless ``--retain``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykubelet.api.machinery.timeutil import parse_time_or_none
from pykubelet.lab import (
    auditpolicy,
    image_server,
    kubecontext,
    network,
    processes,
    state,
    teardown,
)
from pykubelet.lab.layout import (
    RUN_ROOT,
    STATE_ROOT,
    LabLayout,
    LayoutError,
    NodeLayout,
    free_subnet_index,
    validate_control_planes,
    validate_name,
    validate_nodes,
)
from pykubelet.lab.nodeconfig import CONTROL_PLANE_LABEL, node_monitor_grace_configurable
from pykubelet.lab.provider import NetnsProvider, busybox_refs
from pykubelet.lab.state import LabState
from pykubelet.lab.status import StatusPrinter

DEFAULT_WAIT = 120.0
API_TIMEOUT = 60.0
POLL = 0.1


class LabError(RuntimeError):
    """`up` failed; the message is one line naming what and why."""


@dataclass
class Options:
    name: str = "lab"
    nodes: int = 1
    wait: float = DEFAULT_WAIT  # seconds for every node to be Ready; 0: do not wait
    retain: bool = False
    kubeconfig: str | None = None
    node_monitor_grace_period: float | None = None
    state_root: Path = STATE_ROOT
    run_root: Path = RUN_ROOT
    control_planes: int = 1
    store: str = "sqlite"
    lease_duration: float | None = None  # the control planes' leader election (etcd labs)
    scheduler_config: Path | None = None  # a KubeSchedulerConfiguration for the scheduler
    audit: bool = False  # the control planes' audit log (lab/auditpolicy.py's policy)


@dataclass
class Context:
    """What the steps share (kind's ActionContext)."""

    options: Options
    state: LabState
    provider: NetnsProvider
    archive: Path | None = None
    kubeconfig_file: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def lab(self) -> LabLayout:
        return self.state.layout

    def save(self) -> None:
        state.save(self.state)


Step = tuple[Callable[[Context], str], Callable[[Context], None]]


@contextlib.contextmanager
def lab_lock(lab: LabLayout) -> Iterator[None]:
    """One `up`/`down` of a lab at a time (a flock on <run root>/NAME.lock)."""
    lab.lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lab.lock_file, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabError(f"lab {lab.name!r} is busy: another `pykubelet lab` command is "
                           "working on it") from None
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked_lab(name: str, state_root: Path, run_root: Path) -> Iterator[LabState]:
    """The state of lab ``name``, which must exist, under the lab's lock: the commands that
    act on a lab (load, restart-node) read it so; LabError when it does not exist."""
    probe = LabLayout(name, 0, 0, state_root, run_root)
    with lab_lock(probe):
        try:
            st = state.require(probe)
        except state.StateError as exc:
            raise LabError(str(exc)) from None
        yield st


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- the steps
def _build_image(ctx: Context) -> None:
    ctx.archive = ctx.provider.build_image(ctx.lab)


def _network(ctx: Context) -> None:
    ctx.provider.provision_network(ctx.lab)


def _start_registry(ctx: Context) -> None:
    """The local registry on the bridge's host address, with the busybox tags (recorded
    in the state as soon as it starts, so `down` stops it whatever happens next)."""
    assert ctx.archive is not None
    try:
        image_server.start(ctx.state)
        ctx.save()
        image_server.ensure(ctx.state, ctx.archive)
    except image_server.ImageServerError as exc:
        raise LabError(str(exc)) from None


def _prepare_nodes(ctx: Context) -> None:
    assert ctx.archive is not None
    nodes = ctx.lab.node_layouts()
    with ThreadPoolExecutor(max_workers=min(4, len(nodes))) as pool:
        for f in [pool.submit(ctx.provider.prepare_node, n, ctx.archive) for n in nodes]:
            f.result()
    if ctx.state.store == "sqlite":  # node 1 embeds it; an etcd lab's nodes all join
        ctx.provider.write_config(ctx.lab.control_node, None,
                                  ctx.options.node_monitor_grace_period,
                                  scheduler_config=ctx.state.scheduler_config,
                                  audit_policy=str(ctx.lab.audit_policy_file)
                                  if ctx.state.audit else "")


def _start_etcd(ctx: Context) -> None:
    members = ctx.lab.control_nodes()
    for node in members:
        ctx.provider.start_etcd(ctx.state, node)
    ctx.save()
    end = time.monotonic() + API_TIMEOUT
    for node in members:
        while not etcd_healthy(node.etcd_client_url):
            check_alive(ctx, members)
            if time.monotonic() > end:
                raise LabError(f"{node.name}: etcd did not become healthy on "
                               f"{node.etcd_client_url} within {API_TIMEOUT:.0f}s; see "
                               f"{node.etcd_log}")
            time.sleep(POLL)


def etcd_healthy(client_url: str, timeout: float = 2.0) -> bool:
    """etcd's /health: true once the member serves with a leader (a quorum)."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"{client_url}/health", timeout=timeout) as r:
            return str(json.load(r).get("health")) == "true"
    except (OSError, ValueError):
        return False


def _start_control_planes(ctx: Context) -> None:
    """Node 1's first (it writes the cluster's CA and tokens into etcd), then the others,
    which read them; each is waited for on its own address."""
    first, *others = ctx.lab.control_nodes()
    opts = ctx.options
    ctx.provider.start_control_plane(ctx.state, first, opts.node_monitor_grace_period,
                                     opts.lease_duration)
    ctx.save()
    wait_api(ctx, [first])
    for node in others:
        ctx.provider.start_control_plane(ctx.state, node, opts.node_monitor_grace_period,
                                         opts.lease_duration)
    ctx.save()
    wait_api(ctx, others)
    if len(ctx.lab.control_nodes()) > 1:
        ctx.provider.start_front(ctx.state)
        ctx.save()
        wait_api(ctx, [], servers=[ctx.lab.front_server])


def wait_api(ctx: Context, nodes: list[NodeLayout], servers: list[str] | None = None) -> None:
    """Until every one of ``nodes``' API servers (or ``servers``) is ready."""
    end = time.monotonic() + API_TIMEOUT
    for server in servers if servers is not None else [n.api_server for n in nodes]:
        while NetnsProvider.admin_kubeconfig(ctx.lab) is None or not api_answers(ctx, server):
            check_alive(ctx, ctx.lab.control_nodes())
            if ctx.state.front is not None and processes.exited(ctx.state.front):
                raise LabError(f"the front load balancer exited: "
                               f"{processes.tail(ctx.lab.front_log, 1) or 'no output'}")
            if time.monotonic() > end:
                raise LabError(f"the API did not serve on {server} within "
                               f"{API_TIMEOUT:.0f}s; see {ctx.lab.state_dir}/nodes/*/*.log")
            time.sleep(POLL)


def _start_control_plane(ctx: Context) -> None:
    lab, node = ctx.lab, ctx.lab.control_node
    ctx.state.embedded_control_plane = processes.embedded_control_plane_available()
    if not ctx.state.embedded_control_plane:
        ctx.provider.start_control_plane(ctx.state, node, ctx.options.node_monitor_grace_period)
    ctx.provider.start_agent(ctx.state, node)
    ctx.save()
    end = time.monotonic() + API_TIMEOUT
    while NetnsProvider.admin_kubeconfig(lab) is None or not api_answers(ctx):
        check_alive(ctx, [node])
        if time.monotonic() > end:
            raise LabError(f"node1: the API did not serve on {node.api_server} within "
                           f"{API_TIMEOUT:.0f}s; see {node.dir}/*.log")
        time.sleep(POLL)


def api_answers(ctx: Context, server: str = "") -> bool:
    from pykubelet.client.rest import ClientError

    admin = NetnsProvider.admin_kubeconfig(ctx.lab)
    if admin is None:
        return False
    try:
        client = admin_client(admin)
        if server:
            client.server = server
        return client.request("GET", "/readyz", timeout=2) == "ok"
    except (ClientError, OSError, ValueError):
        return False


def admin_client(admin: Path):  # type: ignore[no-untyped-def]
    from pykubelet.client.rest import RESTClient

    return RESTClient.from_kubeconfig(admin, user_agent="pykubelet-lab")


def _join_nodes(ctx: Context) -> None:
    etcd = ctx.state.store == "etcd"  # then every node joins, node 1's agent too
    nodes = ctx.lab.node_layouts()[0 if etcd else 1:]
    if not nodes:
        return
    join = ctx.provider.join_info(ctx.lab)
    for node in nodes:
        ctx.provider.write_config(node, join, api_servers=ctx.lab.api_servers_for(node.index)
                                  if etcd else None)
        ctx.provider.start_agent(ctx.state, node)
    ctx.save()


def _wait_ready(ctx: Context) -> None:
    from pykubelet.client.rest import NODES, ClientError

    admin = NetnsProvider.admin_kubeconfig(ctx.lab)
    assert admin is not None
    client = admin_client(admin)
    want = {n.name for n in ctx.lab.node_layouts()}
    end = time.monotonic() + ctx.options.wait
    why = {n: "the API server was not asked yet" for n in want}
    while True:
        check_alive(ctx, ctx.lab.node_layouts())
        try:
            seen = {n["metadata"]["name"]: n for n in client.list(NODES).get("items") or []}
            why = {n: r for n in want if (r := not_ready_reason(seen.get(n), None, None))}
        except (ClientError, OSError, ValueError) as exc:
            why = {n: f"the API server ({client.server}) did not answer: {exc}" for n in want}
        if not why:
            _mark_control_planes(ctx, client)
            return
        if time.monotonic() > end:
            missing = "; ".join(f"{n}: {why[n]}" for n in sorted(why))
            raise LabError(f"not Ready after {ctx.options.wait:.0f}s: {missing}")
        time.sleep(POLL * 2)


def _mark_control_planes(ctx: Context, client: Any) -> None:
    """kubeadm's mark-control-plane, with the admin's credentials: a node may not set the
    node-role label on itself (NodeRestriction)."""
    from pykubelet.client.rest import MERGE_PATCH, NODES

    for node in ctx.lab.node_layouts():
        if node.is_control_plane:
            client.patch(NODES, node.name, {"metadata": {"labels": {CONTROL_PLANE_LABEL: ""}}},
                         content_type=MERGE_PATCH)


def node_ready(node: dict[str, object]) -> bool:
    status = node.get("status") or {}
    assert isinstance(status, dict)
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def not_ready_reason(node: dict[str, object] | None, lease: dict[str, object] | None,
                     since: float | None) -> str:
    """Why ``node`` (the API's Node, None when there is none) does not count as Ready yet,
    "" when it does: it must exist, have Ready=True and, after an agent's start at
    ``since``, a Lease renewed since then."""
    if node is None:
        return "its Node object does not exist (the agent registers it when it starts)"
    status = node.get("status") or {}
    assert isinstance(status, dict)
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"),
                 None)
    if ready is None:
        return "its Node has no Ready condition yet"
    if ready.get("status") != "True":
        said = ready.get("message") or ready.get("reason") or "no message"
        return f"Ready={ready.get('status')}: {said}"
    if since is None:
        return ""
    if lease is None:
        return "its Lease in kube-node-lease does not exist"
    if not renewed_after(lease, since):
        spec = lease.get("spec") or {}
        assert isinstance(spec, dict)
        return (f"Ready=True, but its Lease in kube-node-lease was last renewed at "
                f"{spec.get('renewTime') or 'no time'}, before the agent started")
    return ""


def renewed_after(lease: dict[str, object], since: float) -> bool:
    spec = lease.get("spec") or {}
    assert isinstance(spec, dict)
    renew = str(spec.get("renewTime") or "")
    at = parse_time_or_none(renew)
    if at is None:
        return False
    return at.timestamp() >= since - 1.0  # (renewTime has microseconds; clocks are the host's)


def check_alive(ctx: Context, nodes: list[NodeLayout]) -> None:
    """Fail fast, with the log's last line, when a node's process died."""
    for node in nodes:
        procs = ctx.state.node_processes(node.name)
        for what, ref, log in (("agent", procs.agent, node.agent_log),
                               ("control plane", procs.control_plane, node.control_plane_log),
                               ("etcd member", procs.etcd, node.etcd_log)):
            if ref is not None and processes.exited(ref):
                last = processes.tail(log, 1) or "no output"
                raise LabError(f"{node.name}: the {what} (pid {ref.pid}) exited: {last}")


def _publish_registry(ctx: Context) -> None:
    """kube-public/local-registry-hosting (KEP-1755), with the admin's credentials."""
    from pykubelet.client.rest import ClientError

    admin = NetnsProvider.admin_kubeconfig(ctx.lab)
    assert admin is not None
    client = admin_client(admin)
    if ctx.state.front is not None:
        client.server = ctx.lab.front_server
    try:
        image_server.publish(client, ctx.lab)
    except (ClientError, OSError) as exc:
        raise LabError(f"kube-public/{image_server.HOSTING_CONFIGMAP}: {exc}") from None


def _kubeconfig(ctx: Context) -> None:
    admin = NetnsProvider.admin_kubeconfig(ctx.lab)
    assert admin is not None
    front = ctx.lab.front_server if ctx.state.front is not None else ""
    ctx.kubeconfig_file = kubecontext.merge(admin, ctx.lab.context, ctx.options.kubeconfig,
                                            server=front)
    ctx.state.kubeconfig = str(ctx.kubeconfig_file)


def steps(options: Options) -> list[Step]:
    n, c = options.nodes, options.control_planes
    out: list[Step] = [
        (lambda _: f"Building the busybox image ({', '.join(busybox_refs())})", _build_image),
        (lambda x: f"Creating the lab network ({x.lab.bridge}, {x.lab.subnet})", _network),
        (lambda x: f"Starting the local registry ({x.lab.registry_address}: "
                   f"{', '.join(image_server.lab_preloaded_tags())})", _start_registry),
        (lambda _: f"Preparing {n} node{'s' if n > 1 else ''} (configs, CNI, images)",
         _prepare_nodes),
    ]
    if options.store == "etcd":
        out += [
            (lambda _: f"Starting etcd ({c} member{'s' if c > 1 else ''}: "
                       f"{_names(c)})", _start_etcd),
            (lambda x: f"Starting {c} control plane{'s' if c > 1 else ''} ({_names(c)})"
                       + (f", front address {x.lab.front_server}" if c > 1 else ""),
             _start_control_planes),
            (lambda _: f"Joining {_names(n)}", _join_nodes),
        ]
    else:
        out.append((lambda x: f"Starting the control plane on node1 "
                              f"({x.lab.control_node.api_server})", _start_control_plane))
        if n > 1:
            out.append((lambda _: f"Joining node2..node{n}", _join_nodes))
    if options.wait > 0:
        out.append((lambda _: f"Waiting for {n} node{'s' if n > 1 else ''} to be Ready",
                    _wait_ready))
    out.append((lambda _: f"Publishing the local registry (kube-public/"
                          f"{image_server.HOSTING_CONFIGMAP})", _publish_registry))
    out.append((lambda x: f"Setting kubectl context {x.lab.context}", _kubeconfig))
    return out


def _names(count: int) -> str:
    return "node1" if count == 1 else f"node1..node{count}"


# ---------------------------------------------------------------------- up
def _revive_registry(probe: LabLayout, printer: StatusPrinter) -> None:
    """`up` of a lab that is up leaves it as it is, but for its registry, which is
    started again when it died (its data kept, the busybox tags pushed if missing)."""
    try:
        st = state.load(probe.state_file)
    except state.StateError:
        return
    if st is None or st.phase != state.PHASE_UP or st.registry is None:
        return
    before = st.registry
    if image_server.running(st) is not None:
        if st.registry != before:  # one a person started again: the lab records it
            state.save(st)
        return
    printer.start(f"Starting the local registry again ({st.layout.registry_address})")
    try:
        image_server.ensure(st, st.layout.busybox_archive)
    except image_server.ImageServerError as exc:
        printer.end(False)
        state.save(st)
        raise LabError(str(exc)) from None
    state.save(st)
    printer.end(True)


def up(options: Options, printer: StatusPrinter | None = None) -> Context:
    """Create the lab; raises LabError (one line) after tearing down what it made,
    unless ``options.retain``."""
    try:
        validate_name(options.name)
        validate_nodes(options.nodes)
        validate_control_planes(options.control_planes, options.nodes, options.store)
    except LayoutError as exc:
        raise LabError(str(exc)) from None
    if os.geteuid() != 0:
        raise LabError("lab up: must run as root (namespaces, links, runc)")
    if (options.node_monitor_grace_period is not None and not node_monitor_grace_configurable()
            and processes.embedded_control_plane_available()):
        raise LabError("--node-monitor-grace-period: this build's node config has no "
                       "controlPlane.nodeMonitorGracePeriod to carry it")
    printer = printer or StatusPrinter()
    probe = LabLayout(options.name, options.nodes, 0, options.state_root, options.run_root)
    with lab_lock(probe):
        if teardown.exists(options.name, options.state_root, options.run_root):
            _revive_registry(probe, printer)
            raise LabError(f"lab {options.name!r} already exists (remove it with: pykubelet "
                           f"lab down --name {options.name})")
        with _flock(options.run_root / "subnets.lock"):  # two labs never pick one subnet
            used = {s.subnet_index for s in state.all_states(options.state_root)}
            try:
                k = free_subnet_index(used, network.host_networks())
            except LayoutError as exc:
                raise LabError(str(exc)) from None
            st = LabState(options.name, options.nodes, k, str(options.state_root),
                          str(options.run_root), control_planes=options.control_planes,
                          store=options.store,
                          embedded_control_plane=options.store == "sqlite",
                          node_monitor_grace_period=options.node_monitor_grace_period,
                          lease_duration=options.lease_duration, audit=options.audit)
            if options.scheduler_config is not None:  # the lab keeps its own copy
                st.scheduler_config = str(st.layout.scheduler_config_file)
            ctx = Context(options, st, NetnsProvider())
            ctx.save()  # before anything is made: `down` always knows the lab
            if options.scheduler_config is not None:
                st.layout.scheduler_config_file.write_bytes(
                    options.scheduler_config.read_bytes())
            if options.audit:
                st.layout.audit_policy_file.write_text(auditpolicy.POLICY)
        started = time.monotonic()
        for describe, run in steps(options):
            printer.start(describe(ctx))
            t0 = time.monotonic()
            try:
                run(ctx)
                ctx.save()
            except (Exception, KeyboardInterrupt) as exc:
                printer.end(False)
                ctx.state.phase = state.PHASE_FAILED
                with contextlib.suppress(OSError):
                    ctx.save()
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if not options.retain:
                    teardown.down(options.name, options.state_root, options.run_root,
                                  options.kubeconfig)
                    raise LabError(f"{msg} (the lab was removed; --retain keeps it)") from exc
                raise LabError(f"{msg} (kept for inspection: --retain)") from exc
            ctx.timings[run.__name__.strip("_")] = time.monotonic() - t0
            printer.end(True)
        ctx.timings["total"] = time.monotonic() - started
        ctx.state.phase = state.PHASE_UP
        ctx.save()
        return ctx
