"""The control plane process: store, watch cache, registry, the HTTPS API and the
controllers, on one asyncio loop (``pykubelet control-plane``, or a thread of
``pykubelet run`` on the control node).

Start-up order: certificates and tokens, the store (repairing what a crash left), the
watch cache loaded from it, the namespaces and priority classes every cluster has, the
API listening, the admin kubeconfig written, then the controllers and the scheduler.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from pycni.atomic_files import write_atomic
from pykubelet.client.kubeconfig import admin_kubeconfig, cert_kubeconfig, write_kubeconfig
from pykubelet.controlplane import errors, shared
from pykubelet.controlplane.apiextensions.serving import serve_custom_resources
from pykubelet.controlplane.apiserver.app import APIServer
from pykubelet.controlplane.apiserver.audit.backend import LogBackend, LogOptions
from pykubelet.controlplane.apiserver.audit.policy import load_policy
from pykubelet.controlplane.apiserver.filters.audit import AuditFilter
from pykubelet.controlplane.apiserver.filters.tokenfile import StaticTokens
from pykubelet.controlplane.apiserver.filters.x509 import (
    X509Authenticator,
    request_client_certificates,
)
from pykubelet.controlplane.apiserver.openapi import OpenAPI
from pykubelet.controlplane.apiserver.serving import APIServerRunner, server_tls_context
from pykubelet.controlplane.apiserver.subresources import SUBRESOURCES
from pykubelet.controlplane.election import Elector, LeaderElection, default_identity
from pykubelet.controlplane.freshness import RevisionReader
from pykubelet.controlplane.metrics import ControlPlaneMetrics
from pykubelet.controlplane.metricsserver.api import MetricsAPI
from pykubelet.controlplane.metricsserver.scraper import DEFAULT_RESOLUTION_S, Scraper
from pykubelet.controlplane.nodeproxy import NodeProxy
from pykubelet.controlplane.pki import (
    PKI,
    CSRRefused,
    Tokens,
    ca_cert_hash,
    host_addresses,
    make_private_dir,
)
from pykubelet.controlplane.registry import bootstrappolicy
from pykubelet.controlplane.registry.install import new_registry
from pykubelet.controlplane.registry.namespaces import SYSTEM_NAMESPACES
from pykubelet.controlplane.registry.priorityclasses import (
    SYSTEM_CLASSES,
    system_class,
)
from pykubelet.controlplane.registry.resources import (
    NAMESPACES,
    NODES,
    PRIORITY_CLASSES,
    SERVICE_ACCOUNTS,
)
from pykubelet.controlplane.registry.store import Context, User
from pykubelet.controlplane.schedulerconfig import load_scheduler_config
from pykubelet.controlplane.serviceaccount import keys as sa_keys
from pykubelet.controlplane.serviceaccount import tokenrequest
from pykubelet.controlplane.serviceaccount.authenticator import (
    ServiceAccountTokens,
    registry_uids,
)
from pykubelet.controlplane.storage import Storage, StorageError
from pykubelet.controlplane.storage.cacher import Cacher, TooLargeError
from pykubelet.controlplane.storage.etcd import EtcdConfig, EtcdStorage
from pykubelet.controlplane.storage.sqlite import SQLiteStorage

log = logging.getLogger(__name__)

Controller = Callable[["ControlPlane"], Awaitable[None]]

# /readyz's store check (kube-apiserver's etcd check and its --etcd-healthcheck-timeout)
STORE_CHECK_KEY = "/registry/health"
STORE_CHECK_TIMEOUT_S = 2.0
CONSISTENT_READ_TIMEOUT_S = 10.0
# the API server's own names (in its serving certificate and in-cluster clients' URLs)
API_DNS_NAMES = frozenset({"localhost", "kubernetes", "kubernetes.default",
                           "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
# the admin kubeconfig with a client certificate, beside the token one (--kubeconfig)
ADMIN_CERT_USER = "kubernetes-admin"
ADMIN_CERT_KUBECONFIG = "admin-cert.kubeconfig"


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"listen: expected ADDR:PORT, got {listen!r}")
    return host.strip("[]"), int(port)


@dataclass
class Options:
    """What a control plane may be told (the rest has upstream's defaults)."""

    root: Path
    listen: str = "0.0.0.0:6443"
    store_path: Path | None = None
    etcd: EtcdConfig | None = None  # the store on etcd instead of SQLite at store_path
    leader_election: LeaderElection | None = None  # None: this control plane runs them all
    identity: str = ""  # the holder identity in leader election (default: host_uuid)
    kubeconfig: Path | None = None
    advertise_address: str = ""
    durable: bool = True
    bookmark_interval: float = 60.0
    node_monitor_grace_period: float = 40.0
    node_monitor_period: float = 5.0
    pod_gc_period: float = 20.0
    watch_cache_size: int = 10_000
    scheduler: bool = True
    # a KubeSchedulerConfiguration file for the embedded scheduler (--scheduler-config)
    scheduler_config: Path | None = None
    controllers: bool = True
    extra_sans: list[str] = field(default_factory=list)
    # kube-apiserver's --service-cluster-ip-range and --service-node-port-range
    service_cluster_ip_range: str = "10.96.0.0/12"
    service_node_port_range: str = "30000-32767"
    # static bearer tokens of users (kube-apiserver's --token-auth-file: CSV
    # token,user,uid,"group1,group2")
    token_auth_file: Path | None = None
    # the cluster DNS served here (kube-dns's endpoints): off unless asked for, so
    # embedded test control planes leave port 53 alone; the CLI and node configs ask
    cluster_dns: bool = False
    cluster_dns_address: str = ""  # default: the advertise address
    cluster_dns_port: int = 53
    # kube-apiserver's --service-account-issuer and --api-audiences (empty: the issuer)
    service_account_issuer: str = tokenrequest.DEFAULT_ISSUER
    api_audiences: list[str] = field(default_factory=list)
    # the built-in metrics-server's scrape interval (its --metric-resolution), seconds
    metric_resolution: float = DEFAULT_RESOLUTION_S
    # the audit log (kube-apiserver's --audit-log-path, "-" standard output, and
    # --audit-policy-file; off unless both are given), rotated by --audit-log-maxage (days),
    # --audit-log-maxbackup (files) and --audit-log-maxsize (megabytes)
    audit_log_path: str = ""
    audit_policy_file: Path | None = None
    audit_log_maxage: int = 0
    audit_log_maxbackup: int = 0
    audit_log_maxsize: int = 0
    # kube-apiserver's --request-timeout: a request that is not long-running ends with a
    # 504 after it (apiserver.filters.timeout)
    request_timeout: float = 60.0


class ControlPlane:
    """One control plane: build it, ``await start()``, ``await stop()``."""

    def __init__(self, options: Options) -> None:
        self.options = options
        # first: a bad file refuses the control plane before anything is opened
        self.scheduler_config = load_scheduler_config(options.scheduler_config)
        self.audit_policy = (load_policy(options.audit_policy_file)
                             if options.audit_policy_file and options.audit_log_path else None)
        self.root = options.root
        self.pki = PKI(self.root)
        self.tokens: Tokens | None = None
        self.storage = open_storage(options)
        self.identity = options.identity or default_identity()
        self.electors: dict[str, Elector] = {}  # lease name -> its elector
        self.cacher = Cacher(self.storage)
        self.registry = new_registry(self.storage, self.cacher, options.watch_cache_size,
                                     service_ranges=(options.service_cluster_ip_range,
                                                     options.service_node_port_range))
        self.api: APIServer | None = None
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stack: contextlib.AsyncExitStack | None = None  # what start() opened
        self.controllers: list[Controller] = []
        self.port = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.serving = asyncio.Event()
        self.ca_hash = ""
        self.sa_issuer: tokenrequest.Issuer | None = None
        self.scheduler: Any = None  # the SchedulerRunner, once its controller runs
        self.metrics = ControlPlaneMetrics()
        self.revisions = RevisionReader(self._read_revision)  # for consistent reads

    # ------------------------------------------------------------------ addresses
    def advertise_address(self) -> str:
        host, _ = split_listen(self.options.listen)
        if self.options.advertise_address:
            return self.options.advertise_address
        if host not in ("0.0.0.0", "::", ""):
            return host
        addrs = [a for a in host_addresses() if not a.startswith("127.")]
        return addrs[0] if addrs else "127.0.0.1"

    @property
    def server_url(self) -> str:
        return f"https://{self.advertise_address()}:{self.port}"

    @property
    def local_url(self) -> str:
        host, _ = split_listen(self.options.listen)
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"https://{host}:{self.port}"

    def serving_names(self) -> tuple[list[str], list[str]]:
        """(DNS names, IPs) of the serving certificate: the addresses the server is reached
        at and those configured. On a wildcard listen every address of the host (and its
        name); on one address only that one (and loopback's), never the host's others."""
        host, _ = split_listen(self.options.listen)
        wildcard = host in ("0.0.0.0", "::", "")
        ips = {"127.0.0.1", *(a for a in self.options.extra_sans if a[:1].isdigit())}
        ips.update(host_addresses() if wildcard else [host])
        if self.options.advertise_address:
            ips.add(self.options.advertise_address)
        dns = {*API_DNS_NAMES, *(a for a in self.options.extra_sans if not a[:1].isdigit())}
        if wildcard:
            dns.add(socket.gethostname().lower())
        return sorted(dns), sorted(ips)

    def _ssl_context(self) -> ssl.SSLContext:
        dns, ips = self.serving_names()
        paths = self.pki.issue("apiserver", "kube-apiserver", dns=dns, ips=ips)
        ctx = server_tls_context(paths.cert, paths.key)
        request_client_certificates(ctx, self.pki.ca_pem)  # judged by the x509 authenticator
        return ctx

    def _kubelet_client_context(self) -> ssl.SSLContext:
        """What the API server shows nodes' servers, and how it checks theirs."""
        paths = self.pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                               server=False, client=True, organization="kubeadm:cluster-admins")
        # every connection names the node it means (NodeProxy's server_hostname), so the
        # node's certificate must hold that name: another node's does not do
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert_path))
        ctx.load_cert_chain(paths.cert, paths.key)
        return ctx

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Open the store, the watch cache, the API server and the controllers, in that
        order. Each step registers how it is undone on one AsyncExitStack (as aiohttp's
        runner enters its cleanup contexts), so a step that fails closes what the
        earlier ones opened, in reverse; :meth:`stop` unwinds the same stack."""
        async with contextlib.AsyncExitStack() as stack:
            await self._start(stack)
            self._stack = stack.pop_all()  # started: stop() unwinds it

    async def _start(self, stack: contextlib.AsyncExitStack) -> None:
        self.loop = asyncio.get_running_loop()
        make_private_dir(self.root)  # store, keys, tokens (etcd wants its data dir 0700)
        await self.storage.start()
        stack.push_async_callback(self.storage.close)
        stack.push_async_callback(self._cancel_tasks)
        shared_rev = 0
        if self.options.etcd is not None:  # one CA and one set of tokens for all of them
            shared_rev = (await shared.adopt(self.storage, self.pki,
                                             self.root / "tokens.json")).mod_revision
        self.pki.ensure_ca()
        self.ca_hash = ca_cert_hash(self.pki.ca_pem)
        if self.options.etcd is not None:
            sa_key = await shared.adopt_sa_key(self.storage, self.pki.dir)
        else:
            sa_key = sa_keys.ensure_key(self.pki.dir)
        issuer = self.sa_issuer = tokenrequest.Issuer(
            sa_keys.load_key_pem(sa_key), self.options.service_account_issuer,
            tuple(self.options.api_audiences))
        self.tokens = Tokens(self.root / "tokens.json")
        if self.options.etcd is not None:
            self._tasks.append(asyncio.create_task(
                shared.follow_node_tokens(self.storage, self.tokens, shared_rev),
                name="node-tokens"))
        await self.cacher.start()
        stack.push_async_callback(self.cacher.stop)
        await self._bootstrap_objects()
        host, port = split_listen(self.options.listen)
        node_proxy = NodeProxy(self.registry, self._kubelet_client_context())
        stack.push_async_callback(node_proxy.close)
        scraper = Scraper(lambda: (e.obj() for e in self.registry.store(NODES).select(
            None, None)), node_proxy.resource_metrics, self.options.metric_resolution)
        self._tasks.append(asyncio.create_task(scraper.run(), name="metrics-scraper"))
        self.api = APIServer(
            self.registry,
            self.tokens.identify,
            server_address=f"{self.advertise_address()}:{port}",
            ca_pem=self.pki.ca_pem,
            openapi=OpenAPI(),
            bookmark_interval=self.options.bookmark_interval,
            join_handler=self._join,
            subresources={**SUBRESOURCES,
                          ("serviceaccounts", "token"): tokenrequest.handler(issuer)},
            node_proxy=node_proxy,
            decisions=self._decision,
            observers=[self.metrics.observe_request],
            metrics=self.metrics.exposition,
            store_check=self.store_check,
            consistent_read=self.consistent_read if self.options.etcd is not None else None,
            token_users=self._token_users(issuer),
            metrics_api=MetricsAPI(self.registry, scraper),
            client_certs=X509Authenticator(self.pki.ca_pem),
            request_timeout=self.options.request_timeout,
        )
        if self.audit_policy is not None:
            backend = LogBackend(LogOptions(
                self.options.audit_log_path, self.options.audit_log_maxage,
                self.options.audit_log_maxbackup, self.options.audit_log_maxsize))
            stack.callback(backend.close)
            self.api.audit = AuditFilter(backend, self.audit_policy, self.api.requestor)
        custom = serve_custom_resources(self.api)  # CRDs and what they declare
        self._tasks.append(asyncio.create_task(custom.run(), name="customresources"))
        self._runner = APIServerRunner(self.api.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        # the controllers and watches end before the server's connections are closed
        # (a watch left open would hold the server's shutdown), then the node proxy
        stack.push_async_callback(self._close_serving)
        site = web.TCPSite(self._runner, host, port, ssl_context=self._ssl_context(),
                           reuse_address=True, backlog=1024)
        await site.start()
        self.port = port or _bound_port(site)
        self._write_kubeconfig()
        for controller in self.controllers:
            self._tasks.append(asyncio.create_task(self.guard(controller),
                                                   name=controller.__name__))
        self.serving.set()
        log.info("control plane serving on %s (store %s, revision %d)", self.local_url,
                 self.storage.path, self.cacher.rev)

    async def _cancel_tasks(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()

    async def _close_serving(self) -> None:
        """Undo serving in the order it must go: tasks, the cache's watchers, the node
        proxy, then the server (each of these is safe to undo twice)."""
        await self._cancel_tasks()
        await self.cacher.stop()
        if self.api is not None and self.api.node_proxy is not None:
            await self.api.node_proxy.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def store_check(self) -> None:
        """Readiness of the store, as kube-apiserver's etcd check: one read of a key
        nobody writes, within STORE_CHECK_TIMEOUT_S. On etcd the read is linearizable,
        so a member that lost quorum (its node cut off) fails it."""
        await asyncio.wait_for(self.storage.get(STORE_CHECK_KEY), STORE_CHECK_TIMEOUT_S)

    async def consistent_read(self) -> None:
        """Wait until the watch cache has the store's current revision (a linearizable
        read on etcd gives it), as kube-apiserver's consistent list from the cache; a
        store that cannot answer is 503. A cache that does not catch up has its watch
        opened again (one gone silent) and a second wait; then 504."""
        try:
            rev = await asyncio.wait_for(self.revisions.current(), CONSISTENT_READ_TIMEOUT_S)
        except (TimeoutError, StorageError) as exc:
            raise errors.service_unavailable(
                f"the store cannot answer: {exc or 'timed out'}") from None
        try:
            await self.cacher.wait_for(rev)
            return
        except TooLargeError as exc:
            self.cacher.rewatch(str(exc))
        try:
            await self.cacher.wait_for(rev)
        except TooLargeError as exc:
            raise errors.timeout(f"the watch cache did not catch up with the store: "
                                 f"{exc}") from None

    async def _read_revision(self) -> int:
        """The store's current revision, from a linearizable read (etcd)."""
        await asyncio.wait_for(self.storage.get(STORE_CHECK_KEY), CONSISTENT_READ_TIMEOUT_S)
        return self.storage.current_revision()

    async def guard(self, controller: Controller) -> None:
        """Run a controller; one that fails is logged and started again."""
        while True:
            try:
                await controller(self)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller %s failed; restarting it", controller.__name__)
                await asyncio.sleep(1.0)

    async def stop(self) -> None:
        """Undo what :meth:`start` did, in reverse (nothing when it never started)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _bootstrap_objects(self) -> None:
        """The namespaces, priority classes and RBAC policy every cluster has, and the
        system namespaces' ``default`` ServiceAccounts."""
        ctx = Context()
        ns_store = self.registry.store(NAMESPACES)
        for name in SYSTEM_NAMESPACES:
            if ns_store.lookup("", name) is None:
                with contextlib.suppress(errors.StatusError):
                    await ns_store.create(ctx, "", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": name}})
        pc_store = self.registry.store(PRIORITY_CLASSES)
        for name in SYSTEM_CLASSES:
            if pc_store.lookup("", name) is None:
                with contextlib.suppress(errors.StatusError):
                    await pc_store.create(ctx, "", system_class(name))
        await bootstrappolicy.reconcile(self.registry)
        sa_store = self.registry.store(SERVICE_ACCOUNTS)
        for name in SYSTEM_NAMESPACES:  # the serviceaccount controller's first pass, early
            if sa_store.lookup(name, "default") is None:
                with contextlib.suppress(errors.StatusError):
                    await sa_store.create(ctx, name, {"apiVersion": "v1",
                                                      "kind": "ServiceAccount",
                                                      "metadata": {"name": "default"}})

    def _decision(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The scheduler's last decision for a pod (pysched's decision log)."""
        sched = getattr(self.scheduler, "scheduler", None)
        last = getattr(sched, "last_decision", None)
        return last(namespace, name) if last is not None else None

    def _token_users(self, issuer: tokenrequest.Issuer) -> Callable[[str], User | None]:
        """The users of ``--token-auth-file`` (read once at start, as kube-apiserver),
        then service accounts' tokens (the union of upstream's token authenticators)."""
        static = (StaticTokens.load(self.options.token_auth_file).user
                  if self.options.token_auth_file is not None else lambda _token: None)
        accounts = ServiceAccountTokens(issuer.issuer, issuer.api_audiences,
                                        [issuer.key.public_key()], registry_uids(self.registry))

        def users(token: str) -> User | None:
            return static(token) or accounts.user(token)

        return users

    async def _join(self, node: str, body: dict[str, Any], peer: str) -> dict[str, Any]:
        """A node's bootstrap: its own token, and its serving certificate signed from its
        CSR (its key never leaves it) for its own name and the addresses it joins from
        (``peer``, the request's source)."""
        assert self.tokens is not None
        api_dns, api_ips = self.serving_names()
        # this host's addresses, whichever the API listens on: a node on this host (the
        # single-node default, where the API listens on loopback) joins with the host's
        local = {*api_ips, *host_addresses()}
        if node in API_DNS_NAMES or (node in api_dns and not is_local(peer, local)):
            raise errors.StatusError(403, errors.FORBIDDEN,
                                  f"node name {node!r} is a name of the API server")
        csr = body.get("csr")
        certificate = ""
        if csr:
            if not isinstance(csr, str):
                raise errors.bad_request("csr: expected a PEM string")
            try:
                certificate = self.pki.sign_node_csr(
                    csr.encode(), node, join_addresses(peer, local)).decode()
            except CSRRefused as exc:
                raise errors.StatusError(403, errors.FORBIDDEN, str(exc)) from None
            except ValueError as exc:
                raise errors.bad_request(str(exc)) from None
        again = node in self.tokens.nodes
        answer: dict[str, Any] = {"nodeName": node, "token": self.tokens.new_node_token(node)}
        if certificate:
            answer["certificate"] = certificate
        if self.options.etcd is not None:  # good on every API server over this store
            await shared.publish_node_token(self.storage, node, answer["token"])
        if again:
            log.warning("node %r joined again: the credentials it had before no longer work",
                        node)
        log.info("node %r joined", node)
        return answer

    async def label_node(self, name: str, labels: dict[str, str]) -> None:
        """Add labels to a Node with the control plane's own authority (kubeadm's
        mark-control-plane: the node-role label is no node's to set on itself)."""
        def add(node: dict[str, Any]) -> dict[str, Any]:
            meta = node.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **labels}
            return node

        await self.registry.store(NODES).guaranteed_update("", name, add)

    # ------------------------------------------------------------------ outputs
    def _write_kubeconfig(self) -> None:
        assert self.tokens is not None
        out = self.options.kubeconfig or self.root / "admin.kubeconfig"
        config = admin_kubeconfig(self.local_url, self.pki.ca_pem, self.tokens.admin)
        # kubeadm's admin identity beside the token one, written first (the token one's
        # presence says the control plane serves): a client certificate of kubernetes-admin in
        # system:masters (kubeadm's super-admin.conf group; its admin.conf since 1.29 binds
        # kubeadm:cluster-admins to cluster-admin instead)
        admin = self.pki.issue_client("admin", ADMIN_CERT_USER, ("system:masters",))
        write_kubeconfig(out.with_name(ADMIN_CERT_KUBECONFIG), cert_kubeconfig(
            self.local_url, self.pki.ca_pem, ADMIN_CERT_USER, admin.cert.read_bytes(),
            admin.key.read_bytes()))
        write_kubeconfig(out, config)
        self.kubeconfig_path = out
        write_atomic(self.root / "server", self.server_url + "\n")

    def join_command(self) -> str:
        assert self.tokens is not None
        return join_command(self.server_url, self.tokens.join, self.ca_hash)


def open_storage(options: Options) -> Storage:
    """The store the options name: etcd, else SQLite (events under an etcd lease there,
    kube-apiserver's --event-ttl)."""
    if options.etcd is not None:
        from dataclasses import replace

        from pykubelet.controlplane.registry.events import EVENT_TTL_S
        from pykubelet.controlplane.registry.resources import EVENTS

        ttls = {EVENTS.storage_prefix: EVENT_TTL_S, **options.etcd.key_ttls}
        return EtcdStorage(replace(options.etcd, key_ttls=ttls))
    return SQLiteStorage(options.store_path or options.root / "store.db",
                         durable=options.durable)


def _peer_ip(peer: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(peer)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_local(peer: str, local_addresses: Collection[str]) -> bool:
    """Does a request from ``peer`` come from this host?"""
    ip = _peer_ip(peer)
    return ip is not None and (ip.is_loopback or str(ip) in local_addresses)


def join_addresses(peer: str, local_addresses: Collection[str]) -> set[str]:
    """The addresses a joining node may hold in its serving certificate: the one its
    join request comes from; a node on the control plane's own host (joining over
    loopback, or from one of the host's addresses) may hold the host's. Never a loopback
    address (the API server's own, in every kubeconfig this host writes)."""
    ip = _peer_ip(peer)
    if ip is None:
        return set()
    if is_local(peer, local_addresses):
        return {a for a in local_addresses if not ipaddress.ip_address(a).is_loopback}
    return {str(ip)}


def join_command(server: str, token: str, ca_hash: str) -> str:
    """What a node needs to join: the server, the join token, the CA's hash (the node
    config's ``server``, ``token`` and ``caCertHash``)."""
    return f"--server {server} --token {token} --ca-cert-hash {ca_hash}"


def _bound_port(site: web.TCPSite) -> int:
    server = site._server
    assert server is not None
    sockets = getattr(server, "sockets", None) or []
    return int(sockets[0].getsockname()[1]) if sockets else 0


class ControlPlaneThread:
    """A control plane on its own event loop thread (inside ``pykubelet run``)."""

    def __init__(self, options: Options) -> None:
        self.cp = ControlPlane(options)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="control-plane",
                                        daemon=True)
        self.error: BaseException | None = None

    def start(self, timeout: float = 60.0) -> None:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self.cp.start(), self.loop)
        fut.result(timeout)

    async def _abort_transports(self) -> None:
        transports = getattr(self.loop, "_transports", None) or {}  # the selector loop's
        for transport in list(transports.values()):
            if transport is not None and not transport.is_closing():
                transport.abort()
        await asyncio.sleep(0)  # their connection_lost runs

    def stop(self) -> None:
        fut = asyncio.run_coroutine_threadsafe(self.cp.stop(), self.loop)
        with contextlib.suppress(Exception):
            fut.result(30)
        # TLS connections whose peer left wait up to 30 s for its close_notify: end them
        # with the loop rather than leave their sockets open
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._abort_transports(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()
