"""``pycni``: cnitool-like commands over the runtime side, plus ``install`` and ``conf``.

``pycni add/check/del --netns PATH ID`` does what kubelet's CNI code does for a
sandbox: the loopback network first, then the default network chosen from the
conf dir by libcni's rules (``pycni conf`` shows which). Like cnitool, the
defaults come from ``NETCONFPATH``, ``CNI_PATH``, ``CNI_IFNAME``, ``CNI_ARGS``
and ``CAP_ARGS`` when set.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any, NoReturn

import click

from pycni import defaults
from pycni.errors import CNIError

DEFAULT_CONF_DIR = defaults.CONF_DIR
DEFAULT_CACHE_DIR = defaults.CACHE_DIR


def _fail(err: Exception) -> NoReturn:
    """Every error once, as one line on stderr, and exit 1. A program reading our stdout
    (not a terminal) also gets a CNI error there as its spec JSON, as from a plugin."""
    if isinstance(err, CNIError) and not sys.stdout.isatty():
        click.echo(json.dumps(err.to_dict(_error_version()), indent=4))
    click.echo(f"Error: {err}", err=True)
    sys.exit(1)


def _error_version() -> str:
    from pycni.spec import SPEC_VERSION

    return SPEC_VERSION


def _bin_dirs(values: tuple[str, ...]) -> list[str]:
    return defaults.split_path(*values) or defaults.split_path(
        os.environ.get("CNI_PATH") or defaults.BIN_PATH
    )


def _netns_path(netns: str) -> str:
    return netns if "/" in netns else os.path.join("/run/netns", netns)


def _cni_args(value: str | None) -> list[tuple[str, str]]:
    text = value if value is not None else os.environ.get("CNI_ARGS", "")
    out: list[tuple[str, str]] = []
    for pair in text.split(";"):
        if not pair:
            continue
        key, sep, val = pair.partition("=")
        if not sep:
            raise click.BadParameter(f'invalid pair "{pair}" (want KEY=VALUE)', param_hint="--args")
        out.append((key, val))
    return out


def _cap_args(value: str | None) -> dict[str, Any]:
    text = value if value is not None else os.environ.get("CAP_ARGS", "")
    if not text:
        return {}
    try:
        caps = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--capability-args") from exc
    if not isinstance(caps, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--capability-args")
    return caps


@click.group()
@click.version_option(package_name="pykube-node", prog_name="pycni")
def main() -> None:
    """pycni: CNI plugins and the CNI runtime side in Python."""


def _runtime_options(f: Any) -> Any:
    options = [
        click.option("--netns", required=True, help="netns path (or a name in /run/netns)"),
        click.option(
            "--conf-dir",
            default=lambda: os.environ.get("NETCONFPATH") or DEFAULT_CONF_DIR,
            show_default="$NETCONFPATH or /etc/cni/net.d",
            help="CNI conf dir",
        ),
        click.option(
            "--bin-dir",
            multiple=True,
            help="plugin dirs, searched in order (repeatable or ':'-separated) "
            f"[default: $CNI_PATH or {defaults.BIN_PATH}]",
        ),
        click.option("--cache-dir", default=DEFAULT_CACHE_DIR, show_default=True),
        click.option(
            "--ifname",
            default=lambda: os.environ.get("CNI_IFNAME") or "eth0",
            show_default="$CNI_IFNAME or eth0",
        ),
        click.option("--args", "cni_args", default=None, help="CNI_ARGS: K=V;K2=V2"),
        click.option(
            "--network",
            default=None,
            help="run the network with this name (as cnitool) instead of the default one",
        ),
        click.option("--capability-args", default=None, help="capability args as JSON (CAP_ARGS)"),
        click.option(
            "--exec/--in-process",
            "exec_plugins",
            default=False,
            help="exec our own plugins too instead of calling them in-process",
        ),
        click.argument("container_id", metavar="ID"),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _setup(
    netns: str,
    conf_dir: str,
    bin_dir: tuple[str, ...],
    cache_dir: str,
    ifname: str,
    cni_args: str | None,
    capability_args: str | None,
    exec_plugins: bool,
    container_id: str,
    network: str | None,
) -> tuple[Any, Any, Any]:
    from pycni.libcni import CNIConfig, RuntimeConf

    rt = RuntimeConf(
        container_id=container_id,
        netns=_netns_path(netns),
        ifname=ifname,
        args=_cni_args(cni_args),
        capability_args=_cap_args(capability_args),
    )
    cni = CNIConfig(_bin_dirs(bin_dir), cache_dir=cache_dir, in_process=not exec_plugins)
    return cni, rt, lambda: _select_network(conf_dir, network)


def _select_network(conf_dir: str, name: str | None) -> Any:
    """The named network (libcni's LoadConfList), or the default one of the dir."""
    if name is None:
        return _default_network(conf_dir)
    from pycni.conf import load_conf_list

    return load_conf_list(conf_dir, name)


def _default_network(conf_dir: str) -> Any:
    from pycni.conf import load_conf_dir

    net, warnings = load_conf_dir(conf_dir)
    for w in warnings:
        click.echo(f"Warning: {w}", err=True)
    return net


@main.command()
@_runtime_options
def add(**kw: Any) -> None:
    """Set up the loopback, then the default network, in the namespace; print the result."""
    from pycni.conf import ConfError, loopback_network

    cni, rt, select = _setup(**kw)
    try:
        net = select()
        cni.add_network_list(loopback_network(), rt)
    except (CNIError, ConfError) as exc:
        _fail(exc)
    try:
        result = cni.add_network_list(net, rt)
    except CNIError as exc:
        # a failed add leaves nothing: the loopback's cached result goes too
        with contextlib.suppress(CNIError):
            cni.del_network_list(loopback_network(), rt)
        _fail(exc)
    click.echo(result.to_json(net.cni_version or None))


@main.command()
@_runtime_options
def check(**kw: Any) -> None:
    """CHECK the default network against the cached result of ADD."""
    from pycni.conf import ConfError

    cni, rt, select = _setup(**kw)
    try:
        cni.check_network_list(select(), rt)
    except (CNIError, ConfError) as exc:
        _fail(exc)


@main.command(name="del")
@_runtime_options
def delete(**kw: Any) -> None:
    """Tear down the default network, then the loopback (both idempotent)."""
    from pycni.conf import ConfError, loopback_network

    cni, rt, select = _setup(**kw)
    first: Exception | None = None
    try:
        cni.del_network_list(select(), rt)
    except (CNIError, ConfError) as exc:
        first = exc
    try:
        cni.del_network_list(loopback_network(), rt)
    except CNIError as exc:
        first = first or exc
    if first is not None:
        _fail(first)


@main.command()
@click.option(
    "--conf-dir",
    default=lambda: os.environ.get("NETCONFPATH") or DEFAULT_CONF_DIR,
    show_default="$NETCONFPATH or /etc/cni/net.d",
)
@click.option("-o", "--output", type=click.Choice(["summary", "json"]), default="summary",
              show_default=True,
              help="summary: name, version, plugin types and file; json: the whole list")
def conf(conf_dir: str, output: str) -> None:
    """Print the network list libcni's rules select from the conf dir."""
    from pycni.conf import ConfError

    try:
        net = _default_network(conf_dir)
    except ConfError as exc:
        _fail(exc)
    if output == "json":  # as libcni runs it (a .conf file up-converted to a list)
        click.echo(json.dumps(net.raw, indent=2))
        return
    doc = {
        "name": net.name,
        "cniVersion": net.cni_version,
        "plugins": [{"type": p.get("type")} for p in net.plugins],
        "file": net.file,
    }
    click.echo(json.dumps(doc, indent=2))


@main.command()
@click.option("--bin-dir", required=True, help="directory to write the plugin executables into")
@click.option(
    "--drop-in",
    is_flag=True,
    help="also write them as loopback, bridge, host-local (replacing those in DIR)",
)
def install(bin_dir: str, drop_in: bool) -> None:
    """Write the pycni-* plugin executables into a CNI bin dir."""
    from pycni.install import install as do_install

    try:
        written = do_install(bin_dir, drop_in=drop_in)
    except OSError as exc:
        click.echo(f"Error: cannot write into {bin_dir}: {exc.strerror}", err=True)
        sys.exit(1)
    for path in written:
        click.echo(path)


if __name__ == "__main__":
    main()
