"""`pykubelet lab up/down/status/restart-node/load`: a multi-node lab on one host (kind's habits).

`up` prints a ✓/✗ line per step and returns once every node is Ready, with the context
``pykube-NAME`` merged into kubectl's kubeconfig and made current; on failure it removes
what it made (unless ``--retain``). `down` removes every trace, and works after a crash.
`status` lists the nodes, their addresses, readiness, pids and pods, and the lab's local
registry (``-o json``: the DESIGN.md shape, with ``registry``). `load` puts an image onto
every node, as `kind load` does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from pykubelet.lab.layout import (
    RUN_ROOT,
    STATE_ROOT,
    LayoutError,
    parse_duration,
    validate_control_planes,
    validate_name,
    validate_nodes,
)


def _name(value: str) -> str:
    try:
        return validate_name(value)
    except LayoutError as exc:
        raise click.ClickException(str(exc)) from None


@click.group("lab")
@click.option("--state-dir", default=str(STATE_ROOT), show_default=True, hidden=True,
              type=click.Path(file_okay=False), help="where labs keep their state")
@click.option("--run-dir", default=str(RUN_ROOT), show_default=True, hidden=True,
              type=click.Path(file_okay=False), help="where labs keep their sockets")
@click.pass_context
def lab(ctx: click.Context, state_dir: str, run_dir: str) -> None:
    """A multi-node lab on this host: each node a network namespace running its own
    pykubelet, node 1 also the control plane."""
    ctx.obj = {"state_root": Path(state_dir), "run_root": Path(run_dir)}


@lab.command("up")
@click.option("--nodes", type=int, default=1, show_default=True, help="how many nodes")
@click.option("--name", default="lab", show_default=True, help="the lab's name")
@click.option("--wait", "wait", default="2m", show_default=True,
              help="how long to wait for every node to be Ready (0: do not wait)")
@click.option("--retain", is_flag=True, help="keep what was made when up fails")
@click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
              help="the kubeconfig to merge the context into (default: as kubectl picks)")
@click.option("--node-monitor-grace-period", type=float, default=None,
              help="seconds without a lease before a node is NotReady (tests shorten it)")
@click.option("--control-planes", type=int, default=1, show_default=True,
              help="how many nodes run a control plane (more than one: --store etcd)")
@click.option("--store", type=click.Choice(["sqlite", "etcd"]), default="sqlite",
              show_default=True,
              help="the control plane's store: SQLite on node 1, or an etcd cluster with "
                   "one member per control node")
@click.option("--leader-elect-lease-duration", default="15s", show_default=True,
              help="the control planes' leader election lease (etcd labs; renew deadline "
                   "and retry period scale with it as kube-scheduler's 15s/10s/2s)")
@click.option("--scheduler-config", "scheduler_config", default=None,
              type=click.Path(dir_okay=False),
              help="a KubeSchedulerConfiguration (profiles, plugin weights, extenders) for "
                   "the lab's scheduler, as kube-scheduler's --config")
@click.option("--audit", is_flag=True,
              help="the control planes write an audit log (audit.log beside their store) "
                   "with a Metadata-level policy; off by default, as kube-apiserver's")
@click.pass_context
def up(ctx: click.Context, nodes: int, name: str, wait: str, retain: bool,
       kubeconfig: str | None, node_monitor_grace_period: float | None,
       control_planes: int, store: str, leader_elect_lease_duration: str,
       scheduler_config: str | None, audit: bool) -> None:
    """Create a lab of NODES nodes and wait until every node is Ready.

    The lab runs a local OCI registry on the host's end of its bridge (10.250.K.1:5000),
    holding library/busybox, which every node pulls from as an insecure registry.

    With --store etcd the control nodes (1..CONTROL_PLANES) each run an etcd member and a
    control plane beside their agent; the scheduler and controllers run on the one that
    leads, agents fail over between the API servers, and with several control planes the
    kubectl context names a front address on the host that balances over them."""
    from pykubelet.lab.create import LabError, Options
    from pykubelet.lab.create import up as create

    try:
        validate_name(name)
        validate_nodes(nodes)
        validate_control_planes(control_planes, nodes, store)
        seconds = parse_duration(wait)
        lease = parse_duration(leader_elect_lease_duration, "--leader-elect-lease-duration")
        if lease < 1:
            raise LayoutError("--leader-elect-lease-duration: must be at least 1s")
    except LayoutError as exc:
        raise click.ClickException(str(exc)) from None
    if scheduler_config is not None:  # refused here, before anything of the lab is made
        from pykubelet.controlplane.schedulerconfig import (
            SchedulerConfigError,
            load_scheduler_config,
        )

        try:
            load_scheduler_config(scheduler_config)
        except SchedulerConfigError as exc:
            raise click.ClickException(f"--scheduler-config {exc}") from None
    opts = Options(name=name, nodes=nodes, wait=seconds, retain=retain, kubeconfig=kubeconfig,
                   node_monitor_grace_period=node_monitor_grace_period,
                   control_planes=control_planes, store=store, lease_duration=lease,
                   scheduler_config=Path(scheduler_config).resolve() if scheduler_config
                   else None, audit=audit, **ctx.obj)
    click.echo(f"Creating lab {name!r} with {nodes} node{'s' if nodes != 1 else ''} ...",
               err=True)
    try:
        done = create(opts)
    except LabError as exc:
        raise click.ClickException(str(exc)) from None
    total = done.timings.get("total", 0.0)
    click.echo(f"lab {name!r} is up in {total:.1f}s; kubectl context {done.lab.context} "
               f"({done.kubeconfig_file}):", err=True)
    click.echo(f"  kubectl get nodes -o wide\n  pykubelet lab status --name {name}\n"
               f"  pykubelet lab down --name {name}", err=True)


@lab.command("down")
@click.option("--name", default="lab", show_default=True, help="the lab's name")
@click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
              help="also remove the context from this kubeconfig")
@click.pass_context
def down(ctx: click.Context, name: str, kubeconfig: str | None) -> None:
    """Remove the lab: pods, processes, namespaces, links, mounts, cgroups, directories
    and its kubeconfig context. Safe to repeat."""
    from pykubelet.lab import teardown
    from pykubelet.lab.create import LabError, lab_lock
    from pykubelet.lab.layout import LabLayout
    from pykubelet.lab.status import StatusPrinter

    _name(name)
    if os.geteuid() != 0:
        raise click.ClickException("lab down: must run as root")
    probe = LabLayout(name, 0, 0, ctx.obj["state_root"], ctx.obj["run_root"])
    click.echo(f"Deleting lab {name!r} ...", err=True)
    try:
        with lab_lock(probe):
            removed = teardown.down(name, ctx.obj["state_root"], ctx.obj["run_root"],
                                    kubeconfig, printer=StatusPrinter())
    except LabError as exc:
        raise click.ClickException(str(exc)) from None
    if not removed.existed:
        click.echo(f"lab {name!r}: nothing to remove", err=True)
        return
    click.echo(f"lab {name!r} removed ({removed.processes} processes, {removed.mounts} mounts, "
               f"{removed.namespaces} namespaces, {removed.links} links)", err=True)
    for note in removed.notes:
        click.echo(f"note: {note}", err=True)


@lab.command("restart-node")
@click.argument("node")
@click.option("--name", default="lab", show_default=True, help="the lab's name")
@click.option("--wait", "wait", default="2m", show_default=True,
              help="how long to wait for the node to be Ready (0: do not wait)")
@click.pass_context
def restart_node(ctx: click.Context, node: str, name: str, wait: str) -> None:
    """Start again whatever of NODE is not running (its etcd member, its control plane,
    its agent; and the lab's front address) as `lab up` started it, and wait until the
    node is Ready. Running processes are left alone; the node's pods, state and etcd data
    are picked up where they were."""
    from pykubelet.lab.create import LabError
    from pykubelet.lab.restart import restart_node as restart

    _name(name)
    try:
        seconds = parse_duration(wait)
    except LayoutError as exc:
        raise click.ClickException(str(exc)) from None
    if os.geteuid() != 0:
        raise click.ClickException("lab restart-node: must run as root")
    try:
        done = restart(name, node, ctx.obj["state_root"], ctx.obj["run_root"], seconds)
    except LabError as exc:
        raise click.ClickException(str(exc)) from None
    for what, pid in done.started:
        click.echo(f"{done.node}: started the {what} (pid {pid})", err=True)
    if not done.started:
        running = ", ".join(f"{what} (pid {pid})" for what, pid in done.running)
        click.echo(f"{done.node}: nothing to start; running: {running}", err=True)
    elif seconds > 0:
        click.echo(f"{done.node}: Ready", err=True)


@lab.command("load")
@click.argument("image")
@click.option("--name", default="lab", show_default=True, help="the lab's name")
@click.option("--root", "host_root", default="/var/lib/pykubelet", show_default=True,
              type=click.Path(file_okay=False),
              help="the state dir of this host's image store, where IMAGE is looked up")
@click.pass_context
def load(ctx: click.Context, image: str, name: str, host_root: str) -> None:
    """Put an image onto every node of the lab (kind's `kind load docker-image`): IMAGE
    is an archive file (docker-archive or OCI layout), or an image of this host's image
    store (`pykubelet image ls`), copied with its tags. Pods then start it with
    imagePullPolicy IfNotPresent (a tag other than latest), no registry needed."""
    from pykubelet.lab.create import LabError
    from pykubelet.lab.load import load as load_image

    _name(name)
    if os.geteuid() != 0:
        raise click.ClickException("lab load: must run as root")
    try:
        done = load_image(name, image, ctx.obj["state_root"], ctx.obj["run_root"],
                          Path(host_root))
    except LabError as exc:
        raise click.ClickException(str(exc)) from None
    tags = ", ".join(done.tags) or "<none>"
    click.echo(f"Image {done.image_id} ({tags}) loaded onto {len(done.nodes)} "
               f"node{'s' if len(done.nodes) != 1 else ''}: {', '.join(done.nodes)}",
               err=True)


@lab.command("status")
@click.option("--name", default="lab", show_default=True, help="the lab's name")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def status(ctx: click.Context, name: str, output: str) -> None:
    """The lab's nodes (addresses, readiness, pids and pods) and its local registry."""
    from pykubelet.lab import state
    from pykubelet.lab.layout import LabLayout
    from pykubelet.lab.report import render_table, report

    _name(name)
    try:
        st = state.require(LabLayout(name, 0, 0, ctx.obj["state_root"], ctx.obj["run_root"]))
    except state.StateError as exc:
        raise click.ClickException(str(exc)) from None
    r = report(st)
    if output == "json":
        click.echo(json.dumps(r.to_json(), indent=2))
    else:
        click.echo(render_table(r))
