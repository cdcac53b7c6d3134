"""`pykubelet control-plane`: the control plane alone, no node (like
``k3s server --disable-agent``): the Kubernetes API on HTTPS, the store, the scheduler,
node lifecycle and pod GC. It writes an admin kubeconfig (mode 0600) once it serves and
prints the join command other nodes use."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from pykubelet.cli.signals import stop_on_signals

DEFAULT_ROOT = "/var/lib/pykubelet/control-plane"


@contextmanager
def config_errors(scheduler_config: str, audit_policy_file: str) -> Iterator[None]:
    """The control plane's configuration errors, raised while it is built, as click errors
    naming the setting they came from (a flag here, a config field in ``pykubelet run``)."""
    from pykubelet.controlplane.apiserver.audit.policy import PolicyError
    from pykubelet.controlplane.schedulerconfig import SchedulerConfigError

    try:
        yield
    except SchedulerConfigError as exc:
        raise click.ClickException(f"{scheduler_config} {exc}") from None
    except PolicyError as exc:
        raise click.ClickException(f"{audit_policy_file}: {exc}") from None


@click.group("control-plane", invoke_without_command=True)
@click.option("--root", "root", default=DEFAULT_ROOT, show_default=True,
              type=click.Path(file_okay=False), help="state: store, certificates, tokens")
@click.option("--listen", default="0.0.0.0:6443", show_default=True, help="ADDR:PORT for HTTPS")
@click.option("--kubeconfig", "kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="where to write the admin kubeconfig (default ROOT/admin.kubeconfig)")
@click.option("--advertise-address", default="", help="the address nodes reach the API on")
@click.option("--tls-san", "tls_sans", multiple=True,
              help="another name or IP address for the serving certificate (repeatable), "
                   "such as a load balancer's in front of several control planes")
@click.option("--identity", default="",
              help="the holder identity in leader election (default: HOSTNAME_UUID); a lab "
                   "names the node it runs on")
@click.option("--node-monitor-grace-period", type=float, default=40.0, show_default=True,
              help="seconds without a node lease before the node is NotReady (Unknown)")
@click.option("--default-watch-cache-size", type=click.IntRange(min=1), default=10_000,
              show_default=True, help="events kept per resource for resuming watches")
@click.option("--pod-gc-period", type=float, default=20.0, show_default=True,
              help="seconds between pod garbage collections")
@click.option("--etcd-servers", default="",
              help="comma-separated etcd endpoints (http(s)://HOST:PORT): the store on etcd "
                   "instead of SQLite under ROOT")
@click.option("--etcd-cafile", default="", help="CA bundle that signs etcd's certificates")
@click.option("--etcd-certfile", default="", help="client certificate for etcd")
@click.option("--etcd-keyfile", default="", help="client key for etcd")
@click.option("--etcd-prefix", default="", help="prefix of every key in etcd")
@click.option("--leader-elect/--no-leader-elect", default=None,
              help="run the scheduler and controllers only while holding their Leases "
                   "(default: on with etcd, off with SQLite, which one control plane owns)")
@click.option("--leader-elect-lease-duration", default="15s", show_default=True)
@click.option("--leader-elect-renew-deadline", default="10s", show_default=True)
@click.option("--leader-elect-retry-period", default="2s", show_default=True)
@click.option("--scheduler-config", "scheduler_config", default="",
              type=click.Path(dir_okay=False),
              help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) for the "
                   "embedded scheduler: profiles, plugin weights, extenders (kube-scheduler's "
                   "--config)")
@click.option("--service-cluster-ip-range", default="10.96.0.0/12", show_default=True,
              help="the CIDR Services' ClusterIPs come from (the first is the kubernetes "
                   "Service's)")
@click.option("--service-node-port-range", default="30000-32767", show_default=True,
              help="the ports NodePort Services take")
@click.option("--token-auth-file", "token_auth_file", default=None,
              type=click.Path(dir_okay=False, exists=True),
              help="static bearer tokens of users, CSV token,user,uid,\"group1,group2\" "
                   "(kube-apiserver's --token-auth-file); RBAC decides what they may do")
@click.option("--cluster-dns/--no-cluster-dns", default=True, show_default=True,
              help="serve the cluster DNS here and list it in the kube-dns Service")
@click.option("--cluster-dns-address", default="",
              help="the cluster DNS's address (default: the advertise address)")
@click.option("--cluster-dns-port", default=53, show_default=True, type=int,
              help="the cluster DNS's port, UDP and TCP")
@click.option("--metric-resolution", type=click.FloatRange(min=0.1), default=15.0,
              show_default=True,
              help="seconds between scrapes of the nodes' resource metrics while the "
                   "metrics API is in use (metrics-server's --metric-resolution)")
@click.option("--audit-log-path", default="",
              help="write the audit log (audit.k8s.io/v1 Event JSON lines) to this file, "
                   "'-' for standard output; needs --audit-policy-file")
@click.option("--audit-policy-file", default="", type=click.Path(dir_okay=False),
              help="the audit policy (audit.k8s.io/v1 Policy): the level of each request")
@click.option("--audit-log-maxage", default=0, show_default=True, type=int,
              help="days to keep rotated audit files (0: no limit)")
@click.option("--audit-log-maxbackup", default=0, show_default=True, type=int,
              help="rotated audit files to keep (0: all)")
@click.option("--audit-log-maxsize", default=0, show_default=True, type=int,
              help="megabytes of the audit file before it is rotated (0: 100)")
@click.option("--request-timeout", default="1m0s", show_default=True,
              help="the most a request that is not a watch or a stream may take before "
                   "its 504 Timeout (a Go duration; a request's ?timeout= may shorten it)")
@click.option("-v", "--verbose", is_flag=True, help="debug logging")
@click.pass_context
def control_plane(ctx: click.Context, root: str, listen: str, kubeconfig: str | None,
                  advertise_address: str, tls_sans: tuple[str, ...], identity: str,
                  node_monitor_grace_period: float,
                  default_watch_cache_size: int, pod_gc_period: float, etcd_servers: str,
                  etcd_cafile: str, etcd_certfile: str, etcd_keyfile: str, etcd_prefix: str,
                  leader_elect: bool | None, leader_elect_lease_duration: str,
                  leader_elect_renew_deadline: str, leader_elect_retry_period: str,
                  scheduler_config: str, service_cluster_ip_range: str,
                  service_node_port_range: str, token_auth_file: str | None,
                  cluster_dns: bool, cluster_dns_address: str, cluster_dns_port: int,
                  metric_resolution: float,
                  audit_log_path: str, audit_policy_file: str, audit_log_maxage: int,
                  audit_log_maxbackup: int, audit_log_maxsize: int, request_timeout: str,
                  verbose: bool) -> None:
    """Run the control plane until SIGTERM/SIGINT."""
    ctx.obj = {"root": root}
    if ctx.invoked_subcommand is not None:
        return
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from pykubelet.controlplane.controllers import default_controllers
    from pykubelet.controlplane.server import ControlPlane, Options, split_listen

    try:
        split_listen(listen)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--listen") from None
    from pykubelet.api.machinery.duration import parse_duration

    try:
        request_timeout_s = parse_duration(request_timeout)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--request-timeout") from None
    if request_timeout_s <= 0:
        raise click.BadParameter("must be more than 0", param_hint="--request-timeout")
    from pykubelet.config import API_VERSION, KIND, KubeletConfigError, decode_config
    from pykubelet.controlplane.storeconfig import etcd_config, leader_election

    store: dict[str, object] = {}
    if etcd_servers:
        store["etcd"] = {"endpoints": [e.strip() for e in etcd_servers.split(",")],
                         "caFile": etcd_cafile, "certFile": etcd_certfile,
                         "keyFile": etcd_keyfile, "prefix": etcd_prefix}
    elect: dict[str, object] = {"leaseDuration": leader_elect_lease_duration,
                                "renewDeadline": leader_elect_renew_deadline,
                                "retryPeriod": leader_elect_retry_period}
    if leader_elect is not None:
        elect["leaderElect"] = leader_elect
    try:  # the same checks as the node config's controlPlane section
        cfg = decode_config({"apiVersion": API_VERSION, "kind": KIND,
                             "controlPlane": {"leaderElection": elect,
                                               "serviceClusterIPRange": service_cluster_ip_range,
                                               "serviceNodePortRange": service_node_port_range,
                                               **({"store": store} if store else {})}})
    except KubeletConfigError as exc:
        raise click.UsageError(str(exc).replace("controlPlane.", "", 1)) from None
    assert cfg.controlPlane is not None
    etcd = etcd_config(cfg.controlPlane.store)
    options = Options(root=Path(root), listen=listen,
                      kubeconfig=Path(kubeconfig) if kubeconfig else None,
                      advertise_address=advertise_address, extra_sans=list(tls_sans),
                      identity=identity, node_monitor_grace_period=node_monitor_grace_period,
                      watch_cache_size=default_watch_cache_size,
                      pod_gc_period=pod_gc_period, etcd=etcd,
                      leader_election=leader_election(cfg.controlPlane, explicit=leader_elect),
                      scheduler_config=Path(scheduler_config) if scheduler_config else None,
                      service_cluster_ip_range=service_cluster_ip_range,
                      service_node_port_range=service_node_port_range,
                      token_auth_file=Path(token_auth_file) if token_auth_file else None,
                      cluster_dns=cluster_dns, cluster_dns_address=cluster_dns_address,
                      cluster_dns_port=cluster_dns_port,
                      metric_resolution=metric_resolution, audit_log_path=audit_log_path,
                      audit_policy_file=Path(audit_policy_file) if audit_policy_file else None,
                      audit_log_maxage=audit_log_maxage, audit_log_maxbackup=audit_log_maxbackup,
                      audit_log_maxsize=audit_log_maxsize, request_timeout=request_timeout_s)
    if audit_log_path and not audit_policy_file:
        logging.getLogger(__name__).warning(
            "--audit-log-path without --audit-policy-file: no audit events are written")
    with config_errors("--scheduler-config", "--audit-policy-file"):
        cp = ControlPlane(options)
    cp.controllers = default_controllers()

    async def main() -> None:
        stop = stop_on_signals()
        from pykubelet.controlplane.storage import StorageError

        try:
            await cp.start()
        except OSError as exc:
            await cp.stop()
            raise click.ClickException(
                f"cannot serve on {listen}: {exc.strerror or exc}") from None
        except StorageError as exc:  # the store is unreachable, or not ours to join
            await cp.stop()
            raise click.ClickException(str(exc)) from None
        from pykubelet.controlplane.collector import tune_after_start

        tune_after_start()  # startup's objects frozen: collections walk only newer ones
        click.echo(f"control plane serving on {cp.local_url}; admin kubeconfig: "
                   f"{cp.kubeconfig_path}; identity {cp.identity}", err=True)
        # the token itself never goes to a log: it is printed on request only
        click.echo(f"join other nodes with the output of: pykubelet control-plane --root {root} "
                   "join-command", err=True)
        await stop.wait()
        await cp.stop()

    try:
        asyncio.run(main())
    except PermissionError as exc:
        raise click.ClickException(f"{exc.filename}: {exc.strerror}") from None
    sys.exit(0)


@control_plane.command("kubeconfig-user")
@click.option("--client-name", required=True, help="the user: the certificate's CN")
@click.option("--org", "orgs", multiple=True, help="a group: the certificate's O, repeatable")
@click.pass_context
def kubeconfig_user(ctx: click.Context, client_name: str, orgs: tuple[str, ...]) -> None:
    """Print a kubeconfig for a user with a new client certificate the cluster CA signs
    (kubeadm kubeconfig user): the API server takes it as CLIENT_NAME in the ORG groups,
    and RBAC decides what they may do. The key is printed, never kept."""
    import yaml

    from pykubelet.client.kubeconfig import cert_kubeconfig
    from pykubelet.controlplane.pki import PKI

    root = Path(ctx.obj["root"])
    pki = PKI(root)
    if not pki.ca_cert_path.exists() or not pki.ca_key_path.exists():
        raise click.ClickException(f"{root}: no control plane state here (start it first)")
    server_file = root / "server"
    server = server_file.read_text().strip() if server_file.exists() else "https://ADDRESS:6443"
    cert, key = pki.sign_client(client_name, orgs)
    click.echo(yaml.safe_dump(cert_kubeconfig(server, pki.ca_pem, client_name, cert, key),
                              sort_keys=False), nl=False)


@control_plane.command("join-command")
@click.pass_context
def join_command(ctx: click.Context) -> None:
    """Print what a node needs to join: server, token and CA hash."""
    from pykubelet.controlplane.pki import PKI, Tokens, ca_cert_hash

    root = Path(ctx.obj["root"])
    pki = PKI(root)
    if not pki.ca_cert_path.exists() or not (root / "tokens.json").exists():
        raise click.ClickException(f"{root}: no control plane state here (start it first)")
    from pykubelet.controlplane.server import join_command as render

    tokens = Tokens(root / "tokens.json")
    server_file = root / "server"
    server = server_file.read_text().strip() if server_file.exists() else "https://ADDRESS:6443"
    click.echo(render(server, tokens.join, ca_cert_hash(pki.ca_pem)))
