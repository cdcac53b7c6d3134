"""The node config (DESIGN.md "Node config"): a strict KubeletConfiguration-like YAML.

Unknown keys and ill-typed values are errors that name the field, as every decoder here.
Field names follow upstream KubeletConfiguration where one exists. Loading changes no
state: it only reads the file.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from pycni import defaults as cni_defaults
from pykubelet.api.machinery.duration import parse_duration

API_VERSION = "pykubelet.io/v1alpha1"
KIND = "KubeletConfiguration"
DEFAULT_CONFIG_PATH = Path("/etc/pykubelet/config.yaml")


class KubeletConfigError(ValueError):
    """The node's config file is malformed; the message names the field and the problem
    (pysched's ConfigError is the scheduler's KubeSchedulerConfiguration)."""


DEFAULT_STORE_PATH = "/var/lib/pykubelet/store.db"


@dataclass(frozen=True)
class SQLiteStoreConfig:
    """The embedded store: one SQLite file."""

    path: str = DEFAULT_STORE_PATH


@dataclass(frozen=True)
class EtcdStoreConfig:
    """An etcd cluster as the store (kube-apiserver's ``--etcd-servers``, ``--etcd-cafile``,
    ``--etcd-certfile``, ``--etcd-keyfile``, ``--etcd-prefix``)."""

    endpoints: list[str] = field(default_factory=list)
    caFile: str = ""
    certFile: str = ""
    keyFile: str = ""
    prefix: str = ""


@dataclass(frozen=True)
class StoreConfig:
    """``controlPlane.store``: exactly one backend, ``sqlite`` (the default) or ``etcd``;
    the fields mirror the YAML, so ``asdict`` writes a config that reads back."""

    sqlite: SQLiteStoreConfig | None = field(default_factory=SQLiteStoreConfig)
    etcd: EtcdStoreConfig | None = None

    @property
    def sqlitePath(self) -> str:
        return self.sqlite.path if self.sqlite is not None else DEFAULT_STORE_PATH


@dataclass(frozen=True)
class LeaderElectionConfig:
    """``controlPlane.leaderElection``, as KubeSchedulerConfiguration's ``leaderElection``:
    the scheduler loop and the controllers run on one control plane at a time."""

    leaderElect: bool = True
    leaseDuration: str = "15s"
    renewDeadline: str = "10s"
    retryPeriod: str = "2s"

    def seconds(self) -> tuple[float, float, float]:
        """(lease duration, renew deadline, retry period) in seconds."""
        return (parse_duration(self.leaseDuration), parse_duration(self.renewDeadline),
                parse_duration(self.retryPeriod))


@dataclass(frozen=True)
class ControlPlaneConfig:
    """Present only on the control node: where the API listens and where the store lives."""

    listen: str = "0.0.0.0:6443"
    storePath: str = DEFAULT_STORE_PATH  # shorthand for store: {sqlite: {path: ...}}
    store: StoreConfig = field(default_factory=StoreConfig)
    leaderElection: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    # kube-controller-manager's --node-monitor-grace-period, as a duration ("40s")
    nodeMonitorGracePeriod: str = "40s"
    # a KubeSchedulerConfiguration file for the embedded scheduler, as --scheduler-config
    schedulerConfig: str = ""
    # kube-apiserver's --service-cluster-ip-range and --service-node-port-range
    serviceClusterIPRange: str = "10.96.0.0/12"
    serviceNodePortRange: str = "30000-32767"
    # the cluster DNS served beside the API (the kube-dns Service's endpoints), on
    # dnsAddress (default: the node's address), port 53 UDP and TCP
    dnsServer: bool = True
    dnsAddress: str = ""
    # the audit log, as kube-apiserver's --audit-policy-file and --audit-log-path (off
    # unless both are set)
    auditPolicyFile: str = ""
    auditLogPath: str = ""

    @property
    def node_monitor_grace_seconds(self) -> float:
        return parse_duration(self.nodeMonitorGracePeriod)


#: kube-proxy's --proxy-mode values this agent implements
PROXY_MODES = ("iptables", "nftables")


@dataclass(frozen=True)
class ServiceProxyConfig:
    """The node's service proxy (kube-proxy's iptables mode, in the agent): off unless
    enabled; the rest as KubeProxyConfiguration names them, with its defaults."""

    enabled: bool = False
    # kube-proxy's --proxy-mode: "iptables" (KUBE-* chains through iptables-restore) or
    # "nftables" (one "ip kube-proxy" table through nft -f)
    mode: str = "iptables"
    # --cluster-cidr: traffic to a cluster IP from outside it is masqueraded
    clusterCIDR: str = ""
    minSyncPeriod: str = "1s"  # iptables.minSyncPeriod: at most one sync per this (burst 2)
    syncPeriod: str = "30s"  # iptables.syncPeriod: a sync at least this often
    masqueradeAll: bool = False

    def sync_periods(self) -> tuple[float, float]:
        return parse_duration(self.minSyncPeriod), parse_duration(self.syncPeriod)


@dataclass(frozen=True)
class KubeletConfig:
    """The node agent's configuration, with DESIGN.md's defaults."""

    nodeName: str = ""
    # the address this node registers and advertises (kubelet's --node-ip); default: the
    # address on the default route's interface, else the first global one
    nodeIP: str = ""
    rootDir: str = "/var/lib/pykubelet"
    runDir: str = "/run/pykubelet"
    containerRuntimeEndpoint: str = ""
    staticPodPath: str = "/etc/pykubelet/manifests"
    cniConfDir: str = "/etc/cni/net.d"
    cniBinDir: str = cni_defaults.BIN_PATH  # a search path, as CNI_PATH
    podCIDR: str = "10.244.1.0/24"
    podLogsDir: str = "/var/log/pods"
    healthzBindAddress: str = "127.0.0.1"
    healthzPort: int = 10248
    port: int = 10250  # the node's server (logs, exec, attach, port-forward), kubelet's `port`
    nodeLabels: dict[str, str] = field(default_factory=dict)
    registerWithTaints: list[dict[str, Any]] = field(default_factory=list)
    allocatable: dict[str, str] = field(default_factory=dict)
    controlPlane: ControlPlaneConfig | None = None
    imageGCHighThresholdPercent: int = 85  # image GC starts at this disk usage ...
    imageGCLowThresholdPercent: int = 80  # ... and frees down to this one
    server: str = ""
    token: str = ""
    caCertHash: str = ""
    # every API server this agent may use (https://HOST:PORT, in preference order); with
    # more than one, the agent talks to them through a local load balancer (k3s's agent
    # load balancer). ``server`` stays the join server, first unless listed elsewhere.
    apiServers: list[str] = field(default_factory=list)
    # registries the embedded runtime pulls from over plain HTTP (HOST or HOST:PORT), as
    # containerd's insecure registry hosts; loopback always may. The lab names its own.
    insecureRegistries: list[str] = field(default_factory=list)
    # the embedded runtime served from the agent's own process (one interpreter, not
    # two: ~40 MiB less), rather than as a `pykubelet runtime` child the agent supervises
    runtimeInAgent: bool = False
    serviceProxy: ServiceProxyConfig = field(default_factory=ServiceProxyConfig)
    # pods' DNS (KubeletConfiguration's names): ClusterFirst pods get clusterDNS as their
    # nameservers; empty (upstream's default), they fall back to resolvConf, the node's
    clusterDNS: list[str] = field(default_factory=list)
    clusterDomain: str = "cluster.local"
    resolvConf: str = "/etc/resolv.conf"
    apiVersion: str = API_VERSION
    kind: str = KIND

    @property
    def node_name(self) -> str:
        """The node name, defaulting to the host name as kubelet does (lower-cased)."""
        return self.nodeName or socket.gethostname().lower()

    @property
    def runtime_endpoint(self) -> str:
        """The CRI endpoint: the configured one, else the embedded runtime's socket."""
        return self.containerRuntimeEndpoint or f"unix://{Path(self.runDir) / 'cri.sock'}"

    @property
    def uses_embedded_runtime(self) -> bool:
        return not self.containerRuntimeEndpoint

    def api_servers(self, local: str = "") -> list[str]:
        """The API servers this agent uses, in preference order, without duplicates: on
        the control node its own API (``local``) then ``apiServers`` (it joins itself, so
        ``server`` plays no part there, as before); elsewhere ``server`` first unless
        ``apiServers`` places it, then ``apiServers``."""
        listed = [u.rstrip("/") for u in self.apiServers]
        head = [local.rstrip("/")] if local else []
        if not local and self.server and self.server.rstrip("/") not in listed:
            head.append(self.server.rstrip("/"))
        out: list[str] = []
        for url in [*head, *listed]:
            if url not in out:
                out.append(url)
        return out


_STR_FIELDS = {
    "apiVersion", "kind", "nodeName", "nodeIP", "rootDir", "runDir", "containerRuntimeEndpoint",
    "staticPodPath", "cniConfDir", "cniBinDir", "podCIDR", "podLogsDir", "healthzBindAddress",
    "server", "token", "caCertHash", "clusterDomain", "resolvConf",
}


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise KubeletConfigError(f"{name}: expected a string, got {_type_name(value)} {value!r}")
    return value


def _check_str_map(name: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise KubeletConfigError(f"{name}: expected a mapping, got {_type_name(value)}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise KubeletConfigError(f"{name}: key {k!r} is not a string")
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise KubeletConfigError(f"{name}.{k}: expected a string, got {_type_name(v)}")
        out[k] = str(v)
    return out


def _decode_control_plane(value: Any) -> ControlPlaneConfig | None:
    if value is None:
        return None
    if value is True:
        return ControlPlaneConfig()
    if not isinstance(value, dict):
        raise KubeletConfigError(f"controlPlane: expected a mapping, got {_type_name(value)}")
    known = {f.name for f in fields(ControlPlaneConfig)}
    for key in value:
        if key not in known:
            raise KubeletConfigError(f"controlPlane.{key}: unknown field")
    kwargs: dict[str, Any] = {k: _check_str(f"controlPlane.{k}", v) for k, v in value.items()
                              if k not in ("store", "leaderElection", "dnsServer")}
    if "dnsServer" in value:
        if not isinstance(value["dnsServer"], bool):
            raise KubeletConfigError(f"controlPlane.dnsServer: expected a boolean, got "
                                     f"{_type_name(value['dnsServer'])}")
        kwargs["dnsServer"] = value["dnsServer"]
    if "store" in value:
        store = _decode_store(value["store"])
        if "storePath" in value and kwargs["storePath"] != (
                store.sqlite.path if store.sqlite is not None else DEFAULT_STORE_PATH):
            raise KubeletConfigError("controlPlane.storePath: give either storePath or store, "
                                     "not both (or the same SQLite path in both)")
        kwargs["store"] = store
        kwargs["storePath"] = store.sqlitePath
    elif "storePath" in value:
        kwargs["store"] = StoreConfig(sqlite=SQLiteStoreConfig(kwargs["storePath"]))
    if "leaderElection" in value:
        kwargs["leaderElection"] = _decode_leader_election(value["leaderElection"])
    cp = ControlPlaneConfig(**kwargs)
    _check_service_ranges(cp)
    try:
        if cp.node_monitor_grace_seconds <= 0:
            raise ValueError("must be positive")
    except ValueError as exc:
        raise KubeletConfigError(f"controlPlane.nodeMonitorGracePeriod: {exc} (a duration such as "
                                 f"\"40s\"), got {cp.nodeMonitorGracePeriod!r}") from None
    return cp


def _check_service_ranges(cp: ControlPlaneConfig) -> None:
    """kube-apiserver's checks of --service-cluster-ip-range (single stack: IPv4 here) and
    --service-node-port-range."""
    try:
        net = ipaddress.ip_network(cp.serviceClusterIPRange, strict=False)
    except ValueError:
        net = None
    if net is None or net.version != 4 or net.num_addresses < 4:
        raise KubeletConfigError(f"controlPlane.serviceClusterIPRange: expected an IPv4 CIDR "
                                 f"such as 10.96.0.0/12, got {cp.serviceClusterIPRange!r}")
    low, _, high = cp.serviceNodePortRange.partition("-")
    if not (low.isdigit() and high.isdigit() and 0 < int(low) <= int(high) <= 65535):
        raise KubeletConfigError(f"controlPlane.serviceNodePortRange: expected LOW-HIGH such "
                                 f"as 30000-32767, got {cp.serviceNodePortRange!r}")


def _check_fields(where: str, value: Any, known: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise KubeletConfigError(f"{where}: expected a mapping, got {_type_name(value)}")
    for key in value:
        if key not in known:
            raise KubeletConfigError(f"{where}.{key}: unknown field")
    return value


def _decode_store(value: Any) -> StoreConfig:
    where = "controlPlane.store"
    value = _check_fields(where, value, {"sqlite", "etcd"})
    given = {k: v for k, v in value.items() if v is not None}
    value = given or ({"sqlite": {}} if "sqlite" in value else {})  # `sqlite:` alone
    if len(value) != 1:
        raise KubeletConfigError(f"{where}: name exactly one backend, sqlite or etcd")
    if "sqlite" in value:
        sq = _check_fields(f"{where}.sqlite", value["sqlite"] or {}, {"path"})
        path = _check_str(f"{where}.sqlite.path", sq.get("path", DEFAULT_STORE_PATH))
        if not path.startswith("/"):
            raise KubeletConfigError(f"{where}.sqlite.path: must be an absolute path, got {path!r}")
        return StoreConfig(sqlite=SQLiteStoreConfig(path))
    where += ".etcd"
    etcd = _check_fields(where, value["etcd"], {f.name for f in fields(EtcdStoreConfig)})
    endpoints = etcd.get("endpoints")
    if not isinstance(endpoints, list) or not endpoints:
        raise KubeletConfigError(f"{where}.endpoints: expected a non-empty list of URLs, got "
                                 f"{endpoints!r}")
    for i, ep in enumerate(endpoints):
        _check_str(f"{where}.endpoints[{i}]", ep)
        scheme, sep, rest = ep.partition("://")
        host, _, port = rest.rstrip("/").rpartition(":")
        if scheme not in ("http", "https") or not sep or not host or not port.isdigit():
            raise KubeletConfigError(f"{where}.endpoints[{i}]: expected http(s)://HOST:PORT, got "
                                     f"{ep!r}")
    strs = {k: _check_str(f"{where}.{k}", etcd[k])
            for k in ("caFile", "certFile", "keyFile", "prefix") if k in etcd}
    for k in ("caFile", "certFile", "keyFile"):
        if strs.get(k) and not strs[k].startswith("/"):
            raise KubeletConfigError(f"{where}.{k}: must be an absolute path, got {strs[k]!r}")
    if bool(strs.get("certFile")) != bool(strs.get("keyFile")):
        raise KubeletConfigError(f"{where}.certFile: certFile and keyFile go together")
    tls = [k for k in ("caFile", "certFile") if strs.get(k)]
    if tls and not all(ep.startswith("https://") for ep in endpoints):
        raise KubeletConfigError(f"{where}.{tls[0]}: TLS files need https:// endpoints")
    return StoreConfig(sqlite=None, etcd=EtcdStoreConfig(endpoints=list(endpoints), **strs))


def _decode_leader_election(value: Any) -> LeaderElectionConfig:
    where = "controlPlane.leaderElection"
    value = _check_fields(where, value, {f.name for f in fields(LeaderElectionConfig)})
    kwargs: dict[str, Any] = {}
    for key, v in value.items():
        if key == "leaderElect":
            if not isinstance(v, bool):
                raise KubeletConfigError(f"{where}.leaderElect: expected true or false, got {v!r}")
            kwargs[key] = v
            continue
        text = _check_str(f"{where}.{key}", v)
        try:
            if parse_duration(text) <= 0:
                raise ValueError("must be positive")
        except ValueError as exc:
            raise KubeletConfigError(f"{where}.{key}: {exc} (a duration such as \"15s\")") from None
        kwargs[key] = text
    le = LeaderElectionConfig(**kwargs)
    duration, deadline, retry = le.seconds()
    # kube-scheduler's validation: leaseDuration > renewDeadline > retryPeriod
    if deadline >= duration:
        raise KubeletConfigError(f"{where}.renewDeadline: {le.renewDeadline} must be less than "
                                 f"leaseDuration ({le.leaseDuration})")
    if retry >= deadline:
        raise KubeletConfigError(f"{where}.retryPeriod: {le.retryPeriod} must be less than "
                                 f"renewDeadline ({le.renewDeadline})")
    return le


def _decode_taints(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise KubeletConfigError(f"registerWithTaints: expected a list, got {_type_name(value)}")
    out = []
    for i, taint in enumerate(value):
        where = f"registerWithTaints[{i}]"
        if not isinstance(taint, dict):
            raise KubeletConfigError(f"{where}: expected a mapping, got {_type_name(taint)}")
        for key in taint:
            if key not in ("key", "value", "effect"):
                raise KubeletConfigError(f"{where}.{key}: unknown field")
        if not taint.get("key"):
            raise KubeletConfigError(f"{where}.key: required")
        effect = taint.get("effect", "")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise KubeletConfigError(
                f"{where}.effect: must be NoSchedule, PreferNoSchedule or NoExecute, got {effect!r}"
            )
        out.append(dict(taint))
    return out


def _decode_api_servers(value: Any) -> list[str]:
    from pykubelet.client.loadbalancer import LoadBalancerError, parse_server

    if not isinstance(value, list):
        raise KubeletConfigError(f"apiServers: expected a list of https://HOST:PORT, got "
                                 f"{_type_name(value)}")
    for i, url in enumerate(value):
        _check_str(f"apiServers[{i}]", url)
        try:
            parse_server(url)
        except LoadBalancerError:
            raise KubeletConfigError(f"apiServers[{i}]: expected https://HOST:PORT, got {url!r}"
                                     ) from None
    return list(value)


_REGISTRY_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)"
                            r"(:[0-9]{1,5})?$")


def _decode_insecure_registries(value: Any) -> list[str]:
    """HOST or HOST:PORT, as an image reference's domain names a registry."""
    if not isinstance(value, list):
        raise KubeletConfigError(f"insecureRegistries: expected a list of HOST[:PORT], got "
                          f"{_type_name(value)}")
    for i, host in enumerate(value):
        if not isinstance(host, str):
            raise KubeletConfigError(f"insecureRegistries[{i}]: expected a string, got "
                              f"{_type_name(host)}")
        if not _REGISTRY_HOST.match(host):
            raise KubeletConfigError(f"insecureRegistries[{i}]: expected HOST[:PORT] (no scheme or "
                              f"path), got {host!r}")
    return list(value)


def _decode_service_proxy(value: Any) -> ServiceProxyConfig:
    where = "serviceProxy"
    value = _check_fields(where, value, {f.name for f in fields(ServiceProxyConfig)})
    kwargs: dict[str, Any] = {}
    for key, v in value.items():
        if key in ("enabled", "masqueradeAll"):
            if not isinstance(v, bool):
                raise KubeletConfigError(f"{where}.{key}: expected true or false, got {v!r}")
            kwargs[key] = v
        elif key == "mode":
            text = _check_str(f"{where}.{key}", v)
            if text not in PROXY_MODES:
                raise KubeletConfigError(f"{where}.{key}: unsupported value {text!r}: "
                                         f"supported values: {', '.join(PROXY_MODES)}")
            kwargs[key] = text
        elif key == "clusterCIDR":
            text = _check_str(f"{where}.{key}", v or "")
            if text:
                try:
                    ipaddress.ip_network(text)
                except ValueError as exc:
                    raise KubeletConfigError(f"{where}.{key}: {exc}") from None
            kwargs[key] = text
        else:
            text = _check_str(f"{where}.{key}", v)
            try:
                if parse_duration(text) <= 0:
                    raise ValueError("must be positive")
            except ValueError as exc:
                raise KubeletConfigError(f"{where}.{key}: {exc} (a duration such as \"1s\")"
                                         ) from None
            kwargs[key] = text
    sp = ServiceProxyConfig(**kwargs)
    low, high = sp.sync_periods()
    if low > high:
        raise KubeletConfigError(f"{where}.minSyncPeriod: {sp.minSyncPeriod} must not be above "
                                 f"syncPeriod ({sp.syncPeriod})")
    return sp


def _decode_cluster_dns(value: Any) -> list[str]:
    """clusterDNS: a list of IP addresses."""
    if not isinstance(value, list):
        raise KubeletConfigError(
            f"clusterDNS: expected a list of IP addresses, got {_type_name(value)}")
    out = []
    for i, ip in enumerate(value):
        text = _check_str(f"clusterDNS[{i}]", ip)
        try:
            out.append(str(ipaddress.ip_address(text)))
        except ValueError as exc:
            raise KubeletConfigError(f"clusterDNS[{i}]: {exc}") from exc
    return out


def decode_config(data: Any) -> KubeletConfig:
    """Decode a parsed YAML document strictly; raises KubeletConfigError naming the bad field.
    An empty document, or one without apiVersion and kind, is refused like any unknown
    one: a config that says nothing is more likely a mistake than a wish for defaults."""
    if data is None:
        raise KubeletConfigError(
            f"config: empty; a node config starts with apiVersion: {API_VERSION} "
            f"and kind: {KIND}"
        )
    if not isinstance(data, dict):
        raise KubeletConfigError(
            f"config: expected a mapping at the top level, got {_type_name(data)}")
    for key, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        if key not in data:
            raise KubeletConfigError(f"{key}: required ({want})")
    known = {f.name for f in fields(KubeletConfig)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise KubeletConfigError(f"{key}: unknown field")
        if key in _STR_FIELDS:
            kwargs[key] = _check_str(key, "" if value is None else value)
        elif key == "healthzPort":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
                raise KubeletConfigError(
                    f"healthzPort: expected an integer 0..65535, got {value!r}")
            kwargs[key] = value
        elif key == "port":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
                raise KubeletConfigError(f"port: expected an integer 1..65535, got {value!r}")
            kwargs[key] = value
        elif key in ("imageGCHighThresholdPercent", "imageGCLowThresholdPercent"):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
                raise KubeletConfigError(f"{key}: expected an integer 0..100, got {value!r}")
            kwargs[key] = value
        elif key in ("nodeLabels", "allocatable"):
            kwargs[key] = _check_str_map(key, value or {})
        elif key == "registerWithTaints":
            kwargs[key] = _decode_taints(value or [])
        elif key == "controlPlane":
            kwargs[key] = _decode_control_plane(value)
        elif key == "apiServers":
            kwargs[key] = _decode_api_servers(value or [])
        elif key == "insecureRegistries":
            kwargs[key] = _decode_insecure_registries(value or [])
        elif key == "runtimeInAgent":
            if not isinstance(value, bool):
                raise KubeletConfigError(f"runtimeInAgent: expected a boolean, got {value!r}")
            kwargs[key] = value
        elif key == "serviceProxy":
            kwargs[key] = _decode_service_proxy(value or {})
        elif key == "clusterDNS":
            kwargs[key] = _decode_cluster_dns(value or [])
    cfg = KubeletConfig(**kwargs)
    if cfg.apiVersion != API_VERSION:
        raise KubeletConfigError(f"apiVersion: expected {API_VERSION!r}, got {cfg.apiVersion!r}")
    if cfg.kind != KIND:
        raise KubeletConfigError(f"kind: expected {KIND!r}, got {cfg.kind!r}")
    if cfg.imageGCLowThresholdPercent > cfg.imageGCHighThresholdPercent:
        raise KubeletConfigError(
            f"imageGCLowThresholdPercent: {cfg.imageGCLowThresholdPercent} must not be above "
            f"imageGCHighThresholdPercent ({cfg.imageGCHighThresholdPercent})")
    try:
        ipaddress.ip_network(cfg.podCIDR)
    except ValueError as exc:
        raise KubeletConfigError(f"podCIDR: {exc}") from exc
    try:
        ipaddress.ip_address(cfg.healthzBindAddress)
    except ValueError as exc:
        raise KubeletConfigError(f"healthzBindAddress: {exc}") from exc
    if cfg.nodeIP:
        try:
            ipaddress.ip_address(cfg.nodeIP)
        except ValueError as exc:
            raise KubeletConfigError(f"nodeIP: {exc}") from exc
    if cfg.apiServers and not cfg.server and cfg.controlPlane is None:
        raise KubeletConfigError("apiServers: needs server (the server to join through) or "
                                 "controlPlane")
    ep = cfg.containerRuntimeEndpoint
    if ep and cfg.runtimeInAgent:
        raise KubeletConfigError(
            f"runtimeInAgent: serves the embedded runtime, but containerRuntimeEndpoint "
            f"names another ({ep!r})")
    if ep and not ep.startswith("unix://"):
        raise KubeletConfigError(
            f"containerRuntimeEndpoint: only unix:// endpoints are supported, got {ep!r}"
        )
    for name in ("rootDir", "runDir", "staticPodPath", "podLogsDir", "cniConfDir",
                 "resolvConf"):
        value = getattr(cfg, name)
        if value and not value.startswith("/"):
            raise KubeletConfigError(f"{name}: must be an absolute path, got {value!r}")
    dirs = cni_defaults.split_path(cfg.cniBinDir)
    if not dirs:
        raise KubeletConfigError("cniBinDir: must name at least one directory (DIR or DIR:DIR...)")
    for d in dirs:
        if not d.startswith("/"):
            raise KubeletConfigError(
                f"cniBinDir: {d!r} is not an absolute path (in {cfg.cniBinDir!r})")
    return cfg


def load_config(path: str | Path) -> KubeletConfig:
    """Read and decode the config file at ``path``."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise KubeletConfigError(f"{p}: cannot read: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeletConfigError(f"{p}: not valid YAML: {exc}") from exc
    try:
        return decode_config(data)
    except KubeletConfigError as exc:
        raise KubeletConfigError(f"{p}: {exc}") from None


SINGLE_NODE_LISTEN = "127.0.0.1:6443"


def single_node_default() -> KubeletConfig:
    """With no config file: control plane + node on this host (DESIGN.md), the API on
    loopback only: nobody asked to serve other hosts (a config's controlPlane.listen
    does)."""
    return replace(KubeletConfig(), controlPlane=ControlPlaneConfig(listen=SINGLE_NODE_LISTEN))
