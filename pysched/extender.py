"""Scheduler extenders: HTTP webhooks that filter nodes, add weighted scores, bind pods and take
part in preemption (kube-scheduler's HTTPExtender, pkg/scheduler/extender.go).

Configuration is KubeSchedulerConfiguration's ``extenders`` (kubescheduler.config.k8s.io/v1
Extender), decoded strictly and validated as pkg/scheduler/apis/config/validation does
(validateExtenders): a prioritizing extender needs a positive weight, at most one extender
binds, managed resources are extended resource names, each named once.

The wire is k8s.io/kube-scheduler/extender/v1, whose Go types carry no json tags, so the keys
are the Go field names: ``ExtenderArgs{Pod, Nodes, NodeNames}``, ``ExtenderFilterResult{Nodes,
NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error}``, ``HostPriorityList
[{Host, Score}]``, ``ExtenderBindingArgs{PodName, PodNamespace, PodUID, Node}``,
``ExtenderBindingResult{Error}``, ``ExtenderPreemptionArgs{Pod, NodeNameToVictims,
NodeNameToMetaVictims}``, ``ExtenderPreemptionResult{NodeNameToMetaVictims}``. Go's decoder
matches keys case-insensitively, so replies are read the same way.

Each call is a POST of JSON to ``urlPrefix/verb`` with ``httpTimeout`` (default 5 s); anything
but 200 is an error. A node-cache-capable extender gets node names instead of Node objects.
Every call is timed and reported to ``observer(extender, verb, result, seconds)`` (the
scheduler's metrics), and what it said lands in the attempt's record (``pykubectl why``).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykubelet.api.machinery.codec import encode
from pykubelet.api.machinery.duration import parse_duration
from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched.configfields import known_object, typed

MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority
DEFAULT_EXTENDER_TIMEOUT = 5.0  # DefaultExtenderTimeout
EXTENDER_NAME = "Extender"  # framework.ExtenderName: an extender among UnschedulablePlugins

FILTER, PRIORITIZE, BIND, PREEMPT = "filter", "prioritize", "bind", "preempt"

Observer = Callable[[str, str, str, float], None]  # (extender, verb, result, seconds)


class ExtenderConfigError(ValueError):
    """A bad ``extenders`` entry; the message names the field."""


class ExtenderError(Exception):
    """An extender call failed (transport, status code, undecodable reply, or its Error)."""


# ---------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class ManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class TLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """config.Extender (v1), defaulted."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: TLSConfig | None = None
    http_timeout: float = 0.0  # seconds; 0 -> DEFAULT_EXTENDER_TIMEOUT
    node_cache_capable: bool = False
    managed_resources: tuple[ManagedResource, ...] = field(default_factory=tuple)
    ignorable: bool = False


def _check(d: Any, path: str, known: set[str]) -> dict[str, Any]:
    return known_object(d, path, known, ExtenderConfigError)


def _typed(d: Mapping[str, Any], key: str, path: str, typ: type, default: Any) -> Any:
    return typed(d, key, path, default, typ, ExtenderConfigError)


def _is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-prefixed name outside kubernetes.io/, not
    requests.*, that a "requests." prefix keeps a valid qualified name."""
    if "/" not in name or name.startswith("requests."):
        return False
    prefix, _, short = name.partition("/")
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return False
    dns = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    qual = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
    return (
        len(prefix) <= 253
        and bool(dns.match(prefix))
        and 0 < len(short) <= 63
        and bool(qual.match(short))
    )


def _decode_tls(v: Any, path: str) -> TLSConfig:
    d = _check(
        v,
        path,
        {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData",
         "caData"},
    )
    import base64

    def data(key: str) -> bytes:
        raw = _typed(d, key, path, str, "")
        try:
            return base64.b64decode(raw, validate=True) if raw else b""
        except ValueError:
            raise ExtenderConfigError(f"{path}.{key}: illegal base64 data") from None

    insecure = _typed(d, "insecure", path, bool, False)
    if insecure and (d.get("caFile") or d.get("caData")):
        # client-go's TLSConfigFor refuses it, so kube-scheduler does not start
        raise ExtenderConfigError(
            f"{path}.insecure: Invalid value: true: specifying a root certificates file with "
            "the insecure flag is not allowed"
        )
    return TLSConfig(
        insecure=insecure,
        server_name=_typed(d, "serverName", path, str, ""),
        cert_file=_typed(d, "certFile", path, str, ""),
        key_file=_typed(d, "keyFile", path, str, ""),
        ca_file=_typed(d, "caFile", path, str, ""),
        cert_data=data("certData"),
        key_data=data("keyData"),
        ca_data=data("caData"),
    )


def decode_extenders(items: Sequence[Any], path: str = "extenders") -> list[ExtenderConfig]:
    """Decode and validate KubeSchedulerConfiguration.extenders (validateExtenders)."""
    out: list[ExtenderConfig] = []
    binders = 0
    managed: set[str] = set()
    for i, raw in enumerate(items):
        p = f"{path}[{i}]"
        d = _check(
            raw,
            p,
            {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
             "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
             "ignorable"},
        )
        url = _typed(d, "urlPrefix", p, str, "")
        if not url:
            raise ExtenderConfigError(f"{p}.urlPrefix: Required value")
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ExtenderConfigError(
                f"{p}.urlPrefix: Invalid value: {url!r}: must be an http or https URL"
            )
        weight = _typed(d, "weight", p, int, 0)
        prioritize = _typed(d, "prioritizeVerb", p, str, "")
        if prioritize and weight <= 0:
            raise ExtenderConfigError(
                f"{p}.weight: Invalid value: {weight}: must have a positive weight applied to it"
            )
        bind = _typed(d, "bindVerb", p, str, "")
        if bind:
            binders += 1
        timeout = 0.0
        if d.get("httpTimeout") is not None:
            tv = d["httpTimeout"]
            if not isinstance(tv, str):
                raise ExtenderConfigError(
                    f"{p}.httpTimeout: expected a duration string such as \"5s\", got "
                    f"{type(tv).__name__}"
                )
            try:
                timeout = parse_duration(tv)
            except ValueError as exc:
                raise ExtenderConfigError(f"{p}.httpTimeout: {exc}") from None
            if timeout < 0:
                raise ExtenderConfigError(
                    f"{p}.httpTimeout: Invalid value: {tv!r}: must not be negative"
                )
        resources: list[ManagedResource] = []
        mp = f"{p}.managedResources"
        mlist = _typed(d, "managedResources", p, list, [])
        for j, r in enumerate(mlist):
            rp = f"{mp}[{j}]"
            rd = _check(r, rp, {"name", "ignoredByScheduler"})
            name = _typed(rd, "name", rp, str, "")
            if not _is_extended_resource_name(name):
                raise ExtenderConfigError(
                    f"{rp}.name: Invalid value: {name!r}: must be a standard extended resource "
                    "name (a domain-prefixed name outside kubernetes.io)"
                )
            if name in managed:
                raise ExtenderConfigError(
                    f"{rp}.name: Invalid value: {name!r}: duplicate extender managed resource "
                    "name"
                )
            managed.add(name)
            resources.append(ManagedResource(name, _typed(rd, "ignoredByScheduler", rp, bool,
                                                          False)))
        tls = None
        if d.get("tlsConfig") is not None:
            tls = _decode_tls(d["tlsConfig"], f"{p}.tlsConfig")
        out.append(
            ExtenderConfig(
                url_prefix=url,
                filter_verb=_typed(d, "filterVerb", p, str, ""),
                preempt_verb=_typed(d, "preemptVerb", p, str, ""),
                prioritize_verb=prioritize,
                bind_verb=bind,
                weight=weight,
                enable_https=_typed(d, "enableHTTPS", p, bool, False),
                tls_config=tls,
                http_timeout=timeout,
                node_cache_capable=_typed(d, "nodeCacheCapable", p, bool, False),
                managed_resources=tuple(resources),
                ignorable=_typed(d, "ignorable", p, bool, False),
            )
        )
    if binders > 1:
        raise ExtenderConfigError(
            f"{path}: Invalid value: \"found {binders} extenders implementing bind\": only one "
            "extender can implement bind"
        )
    return out


def ignored_extended_resources(configs: Iterable[ExtenderConfig]) -> list[str]:
    """Managed resources with ignoredByScheduler: NodeResourcesFit ignores them (New)."""
    return [r.name for c in configs for r in c.managed_resources if r.ignored_by_scheduler]


# ---------------------------------------------------------------- wire helpers


def pod_json(pod: Pod) -> dict[str, Any]:
    return {"kind": "Pod", "apiVersion": "v1", **encode(pod)}


def node_json(node: Node) -> dict[str, Any]:
    return {"kind": "Node", "apiVersion": "v1", **encode(node)}


def _field(d: Any, name: str) -> Any:
    """Go's encoding/json match: the exact key first, else a case-insensitive one."""
    if not isinstance(d, dict):
        return None
    if name in d:
        return d[name]
    low = name.lower()
    for k, v in d.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


def _failed_map(v: Any, what: str) -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
        raise ExtenderError(f"extender reply: {what}: expected a map of node name to reason")
    return {str(k): x for k, x in v.items()}


@dataclass(slots=True)
class Victims:
    """extenderv1.Victims: the pods preemption would evict on a node."""

    pods: list[Pod]
    num_pdb_violations: int = 0


# ---------------------------------------------------------------- the client


class HTTPExtender:
    """One configured extender (HTTPExtender)."""

    def __init__(self, cfg: ExtenderConfig, observer: Observer | None = None) -> None:
        self.cfg = cfg
        self.observer = observer
        self.timeout = cfg.http_timeout or DEFAULT_EXTENDER_TIMEOUT
        self.managed = {r.name for r in cfg.managed_resources}
        u = urllib.parse.urlsplit(cfg.url_prefix)
        self._https = u.scheme == "https"  # the URL decides, as with Go's transport
        self._host = u.hostname or ""
        self._port = u.port or (443 if self._https else 80)
        self._base = u.path.rstrip("/")
        self._ssl = self._ssl_context() if self._https else None
        self._local = threading.local()

    # -------------------------------------------------------- identity
    def name(self) -> str:
        """Name: the URL prefix identifies an extender (its score's and verdicts' name)."""
        return self.cfg.url_prefix

    def is_ignorable(self) -> bool:
        return self.cfg.ignorable

    def is_filter(self) -> bool:
        return bool(self.cfg.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.cfg.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.cfg.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """An extender managing resources is interested in pods asking for one of them."""
        if not self.managed:
            return True
        for c in (*pod.spec.containers, *pod.spec.init_containers):
            res = c.resources
            if any(r in self.managed for r in res.requests) or any(
                r in self.managed for r in res.limits
            ):
                return True
        return False

    # -------------------------------------------------------- verbs
    def _node_args(self, pod: Pod, nodes: Sequence[Any]) -> dict[str, Any]:
        if self.cfg.node_cache_capable:
            return {"Pod": pod_json(pod), "Nodes": None, "NodeNames": [ni.name for ni in nodes]}
        return {
            "Pod": pod_json(pod),
            "Nodes": {"kind": "NodeList", "apiVersion": "v1", "metadata": {},
                      "items": [node_json(ni.node) for ni in nodes]},
            "NodeNames": None,
        }

    def filter(
        self, pod: Pod, nodes: Sequence[Any]
    ) -> tuple[list[Any], dict[str, str], dict[str, str]]:
        """(feasible node infos, failed node -> reason, unresolvable node -> reason)."""
        if not self.cfg.filter_verb:
            return list(nodes), {}, {}
        by_name = {ni.name: ni for ni in nodes}
        result = self.send(self.cfg.filter_verb, self._node_args(pod, nodes), FILTER)
        err = _field(result, "Error")
        if err:
            raise ExtenderError(str(err))
        out: list[Any] = []
        names = _field(result, "NodeNames")
        node_list = _field(result, "Nodes")
        claimed: list[Any] = []  # the nodes that passed, by name, in the extender's order
        if self.cfg.node_cache_capable and names is not None:
            if not isinstance(names, list):
                raise ExtenderError("extender reply: NodeNames: expected a list")
            claimed = names
        elif node_list is not None:
            claimed = [((item or {}).get("metadata") or {}).get("name", "")
                       for item in _field(node_list, "items") or []]
        for n in claimed:
            ni = by_name.get(n)
            if ni is None:
                raise ExtenderError(
                    f"extender {self.name()!r} claims a filtered node {n!r} which is not "
                    "found in the input node list"
                )
            out.append(ni)
        return (
            out,
            _failed_map(_field(result, "FailedNodes"), "FailedNodes"),
            _failed_map(_field(result, "FailedAndUnresolvableNodes"),
                        "FailedAndUnresolvableNodes"),
        )

    def prioritize(self, pod: Pod, nodes: Sequence[Any]) -> tuple[list[tuple[str, int]], int]:
        """(HostPriorityList as (host, score), weight)."""
        if not self.cfg.prioritize_verb:
            return [(ni.name, 0) for ni in nodes], 0
        result = self.send(self.cfg.prioritize_verb, self._node_args(pod, nodes), PRIORITIZE)
        if result is None:
            return [], self.cfg.weight
        if not isinstance(result, list):
            raise ExtenderError("extender reply: expected a HostPriorityList (a list)")
        out: list[tuple[str, int]] = []
        append = out.append
        for hp in result:  # thousands of nodes: the exact keys first, cheaply
            try:
                host, score = hp["Host"], hp["Score"]
            except (KeyError, TypeError):
                host, score = _field(hp, "Host"), _field(hp, "Score")
            if type(host) is not str or type(score) is not int:
                raise ExtenderError("extender reply: HostPriority needs Host and an integer Score")
            append((host, score))
        return out, self.cfg.weight

    def bind(self, pod: Pod, node_name: str) -> None:
        if not self.cfg.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = {"PodName": pod.metadata.name, "PodNamespace": pod.metadata.namespace,
                "PodUID": pod.metadata.uid, "Node": node_name}
        result = self.send(self.cfg.bind_verb, args, BIND)
        err = _field(result, "Error")
        if err:
            raise ExtenderError(str(err))

    def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], node_info: Callable[[str], Any]
    ) -> dict[str, Victims]:
        """ProcessPreemption: the extender's answer, its MetaVictims (UIDs) turned back into
        the pods on each node (``node_info(name)`` gives the snapshot's NodeInfo)."""
        if not self.cfg.preempt_verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.name()} but run into "
                "ProcessPreemption"
            )
        args: dict[str, Any] = {"Pod": pod_json(pod)}
        if self.cfg.node_cache_capable:
            args["NodeNameToVictims"] = None
            args["NodeNameToMetaVictims"] = {
                n: {"Pods": [{"UID": p.metadata.uid} for p in v.pods],
                    "NumPDBViolations": v.num_pdb_violations}
                for n, v in victims.items()
            }
        else:
            args["NodeNameToVictims"] = {
                n: {"Pods": [pod_json(p) for p in v.pods],
                    "NumPDBViolations": v.num_pdb_violations}
                for n, v in victims.items()
            }
            args["NodeNameToMetaVictims"] = None
        result = self.send(self.cfg.preempt_verb, args, PREEMPT)
        meta = _field(result, "NodeNameToMetaVictims") or {}
        if not isinstance(meta, dict):
            raise ExtenderError("extender reply: NodeNameToMetaVictims: expected a map")
        out: dict[str, Victims] = {}
        for node_name, mv in meta.items():
            ni = node_info(node_name)
            if ni is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
            pods: list[Pod] = []
            for mp in _field(mv, "Pods") or []:
                uid = _field(mp, "UID")
                found = next((pi.pod for pi in ni.pods if pi.pod.metadata.uid == uid), None)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self.name()} claims to preempt pod (UID: {uid}) on node: "
                        f"{node_name}, but the pod is not found on that node"
                    )
                pods.append(found)
            npdb = _field(mv, "NumPDBViolations") or 0
            out[node_name] = Victims(pods, int(npdb))
        return out

    # -------------------------------------------------------- transport
    def _ssl_context(self) -> ssl.SSLContext:
        """makeTransport: the CA (file or data) verifies; enableHTTPS without one means
        insecure (rest.Config with no CA), else the system's roots verify; a client
        certificate when given."""
        tls = self.cfg.tls_config or TLSConfig()
        has_ca = bool(tls.ca_file or tls.ca_data)
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if tls.insecure or (self.cfg.enable_https and not has_ca):
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            ctx.load_verify_locations(
                cafile=tls.ca_file or None,
                cadata=tls.ca_data.decode() if tls.ca_data else None,
            )
        if tls.cert_file or tls.cert_data:
            if tls.cert_data or tls.key_data:
                import os
                import tempfile

                # ssl loads chains from files only: a private temporary copy, removed at once
                fd, path = tempfile.mkstemp(prefix="pysched-extender-")
                try:
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(tls.cert_data + b"\n" + tls.key_data)
                    ctx.load_cert_chain(path)
                finally:
                    os.unlink(path)
            else:
                ctx.load_cert_chain(tls.cert_file, tls.key_file or None)
        return ctx

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._https:
                tls = self.cfg.tls_config or TLSConfig()
                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.timeout, context=self._ssl
                )
                if tls.server_name:
                    conn._server_hostname = tls.server_name  # type: ignore[attr-defined]
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            conn.connect()
            # Go's connections are TCP_NODELAY: no request stalls on a delayed ACK
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.conn = conn
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def send(self, verb: str, args: Any, kind: str) -> Any:
        """POST args to urlPrefix/verb; the decoded reply (timed, reported to the observer)."""
        url = self.cfg.url_prefix.rstrip("/") + "/" + verb
        path = f"{self._base}/{verb}"
        body = json.dumps(args, separators=(",", ":")).encode()
        start = time.perf_counter()
        result = "error"
        try:
            for attempt in (0, 1):  # a kept-alive connection the server closed: once more
                try:
                    conn = self._connection()
                    conn.request("POST", path, body, {"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    data = resp.read()
                    break
                except (http.client.RemoteDisconnected, BrokenPipeError,
                        ConnectionResetError) as exc:
                    self._drop()
                    if attempt:
                        raise ExtenderError(f'Post "{url}": {exc}') from None
                except TimeoutError:
                    self._drop()
                    raise ExtenderError(
                        f'Post "{url}": context deadline exceeded (Client.Timeout exceeded '
                        "while awaiting headers)"
                    ) from None
                except (OSError, http.client.HTTPException) as exc:
                    self._drop()
                    raise ExtenderError(f'Post "{url}": {exc}') from None
            if resp.status != 200:
                raise ExtenderError(
                    f"failed {verb} with extender at URL {url}, code {resp.status}"
                )
            try:
                decoded = json.loads(data) if data.strip() else None
            except ValueError as exc:
                raise ExtenderError(f"extender {url}: invalid JSON reply: {exc}") from None
            result = "success"
            return decoded
        finally:
            if self.observer is not None:
                self.observer(self.name(), kind, result, time.perf_counter() - start)

    def close(self) -> None:
        self._drop()


def build_extenders(
    configs: Sequence[ExtenderConfig], observer: Observer | None = None
) -> list[HTTPExtender]:
    """buildExtenders: one client each, the ignorable ones placed at the tail."""
    exts = [HTTPExtender(c, observer) for c in configs]
    return [e for e in exts if not e.is_ignorable()] + [e for e in exts if e.is_ignorable()]


__all__ = [
    "EXTENDER_NAME",
    "MAX_EXTENDER_PRIORITY",
    "ExtenderConfig",
    "ExtenderConfigError",
    "ExtenderError",
    "HTTPExtender",
    "Victims",
    "build_extenders",
    "decode_extenders",
    "ignored_extended_resources",
]
