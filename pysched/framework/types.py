"""NodeInfo, PodInfo, Resource, HostPortInfo: the scheduler's per-node aggregates.

Mirrors pkg/scheduler/framework/types.go. NodeInfo keeps `requested` and
`non_zero_requested` up to date incrementally on add_pod/remove_pod, so a
filter or score reads sums, never walks pods.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pykubelet.api.objects import Node
from pykubelet.api.types import LabelSelector, LabelSelectorRequirement, Pod, PodAffinityTerm
from pysched.framework.labels import NOTHING, Selector, label_selector_as_selector
from pysched.resources import is_scalar_resource_name, non_zero_pod_requests, pod_requests
from pysched.views import int_resources, pod_resources

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing counter (upstream nextGeneration), so snapshots spot changes."""
    return next(_generation)


@dataclass(slots=True)
class Resource:
    """framework.Resource: milli_cpu in millicores, memory/ephemeral_storage in bytes."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: Mapping[str, int]) -> Resource:
        r = cls()
        r.add(rl)
        return r

    def add(self, rl: Mapping[str, int]) -> None:
        """Resource.Add: a ResourceList (canonical ints) into this Resource."""
        for name, q in rl.items():
            if name == "cpu":
                self.milli_cpu += q
            elif name == "memory":
                self.memory += q
            elif name == "pods":
                self.allowed_pod_number += q
            elif name == "ephemeral-storage":
                self.ephemeral_storage += q
            elif is_scalar_resource_name(name):
                self.scalar[name] = self.scalar.get(name, 0) + q

    def get(self, name: str) -> int:
        """The amount of one resource by its v1 name."""
        if name == "cpu":
            return self.milli_cpu
        if name == "memory":
            return self.memory
        if name == "pods":
            return self.allowed_pod_number
        if name == "ephemeral-storage":
            return self.ephemeral_storage
        return self.scalar.get(name, 0)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )


_NO_LABELS: dict[str, str] = {}


@dataclass(slots=True)
class AffinityTerm:
    """framework.AffinityTerm: a PodAffinityTerm with namespaces and selectors compiled."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector
    # What the term selects, as a hashable value (None: unknown, e.g. a hand-made term).
    # Equal keys mean equal matching, so InterPodAffinity's index can match the terms that
    # many pods of one workload share once instead of once per pod.
    key: tuple[object, ...] | None = None

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        """The term selects `pod` (given the labels of pod's namespace, if known)."""
        if pod.metadata.namespace in self.namespaces or self.namespace_selector.matches(
            ns_labels if ns_labels is not None else _NO_LABELS
        ):
            return self.selector.matches(pod.metadata.labels)
        return False

    def label_keys(self) -> frozenset[str] | None:
        """The pod label keys the selector reads (None: unknown, the term has no key).

        Pods of one namespace whose labels agree on these keys are matched alike, whatever
        their other labels: InterPodAffinity's index groups pods that way per term."""
        if self.key is None:
            return None
        sel = self.key[1]
        if sel == _NOTHING_KEY:
            return frozenset()
        match_labels, exprs = cast("tuple[Any, Any]", sel)
        return frozenset(k for k, _ in match_labels) | frozenset(e[0] for e in exprs)

    def with_namespaces(self, namespaces: frozenset[str]) -> AffinityTerm:
        """This term for exactly ``namespaces`` and no namespace selector (upstream
        mergeAffinityTermNamespacesIfNotEmpty), keeping a key that says so."""
        key = None
        if self.key is not None:
            key = (namespaces, self.key[1], self.topology_key, _NOTHING_KEY)
        return AffinityTerm(namespaces, self.selector, self.topology_key, NOTHING, key)


@dataclass(slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def new_affinity_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """newAffinityTerm, with matchLabelKeys/mismatchLabelKeys merged from the pod's labels.

    (The API server merges those keys into labelSelector at creation; doing it here
    too is idempotent and covers objects that never went through an API server.)
    """
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset({pod.metadata.namespace})
    else:
        namespaces = frozenset(term.namespaces)
    selector = label_selector_as_selector(term.label_selector)
    compiled_from = term.label_selector
    if (term.match_label_keys or term.mismatch_label_keys) and term.label_selector is not None:
        exprs = list(term.label_selector.match_expressions)
        for k in term.match_label_keys:
            if k in pod.metadata.labels:
                exprs.append(
                    LabelSelectorRequirement(key=k, operator="In", values=[pod.metadata.labels[k]])
                )
        for k in term.mismatch_label_keys:
            if k in pod.metadata.labels:
                exprs.append(LabelSelectorRequirement(
                    key=k, operator="NotIn", values=[pod.metadata.labels[k]]
                ))
        compiled_from = LabelSelector(
            match_labels=dict(term.label_selector.match_labels), match_expressions=exprs
        )
        selector = label_selector_as_selector(compiled_from)
    ns_selector = (
        label_selector_as_selector(term.namespace_selector)
        if term.namespace_selector is not None
        else NOTHING
    )
    key = (
        namespaces,
        _label_selector_key(compiled_from),
        term.topology_key,
        _label_selector_key(term.namespace_selector),
    )
    return AffinityTerm(namespaces, selector, term.topology_key, ns_selector, key)


_NOTHING_KEY = ("nothing",)


def _label_selector_key(sel: LabelSelector | None) -> tuple[object, ...]:
    """A hashable value equal for selectors that compile to the same requirements."""
    if sel is None:
        return _NOTHING_KEY
    return (
        tuple(sorted(sel.match_labels.items())),
        tuple((e.key, e.operator, tuple(e.values)) for e in sel.match_expressions),
    )


class PodInfo:
    """framework.PodInfo: a pod plus its pre-parsed affinity terms and request sums."""

    __slots__ = (
        "_non_zero",
        "_requests",
        "pod",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "required_affinity_terms",
        "required_anti_affinity_terms",
    )

    def __init__(self, pod: Pod) -> None:
        self.update(pod)

    def update(self, pod: Pod) -> None:
        self.pod = pod
        aff = pod.spec.affinity
        pa = aff.pod_affinity if aff is not None else None
        paa = aff.pod_anti_affinity if aff is not None else None
        self.required_affinity_terms = (
            [new_affinity_term(pod, t) for t in pa.required] if pa else []
        )
        self.required_anti_affinity_terms = (
            [new_affinity_term(pod, t) for t in paa.required] if paa else []
        )
        self.preferred_affinity_terms = (
            [
                WeightedAffinityTerm(new_affinity_term(pod, t.pod_affinity_term), t.weight)
                for t in pa.preferred
            ]
            if pa
            else []
        )
        self.preferred_anti_affinity_terms = (
            [
                WeightedAffinityTerm(new_affinity_term(pod, t.pod_affinity_term), t.weight)
                for t in paa.preferred
            ]
            if paa
            else []
        )
        self._requests: Resource | None = None
        self._non_zero: tuple[int, int] | None = None

    def with_pod(self, pod: Pod) -> PodInfo:
        """This PodInfo for a newer copy of its pod with the same spec (a status
        write): the affinity terms and request sums, all read from the spec, are kept."""
        pi = PodInfo.__new__(PodInfo)
        pi.pod = pod
        pi.required_affinity_terms = self.required_affinity_terms
        pi.required_anti_affinity_terms = self.required_anti_affinity_terms
        pi.preferred_affinity_terms = self.preferred_affinity_terms
        pi.preferred_anti_affinity_terms = self.preferred_anti_affinity_terms
        pi._requests = self._requests
        pi._non_zero = self._non_zero
        return pi

    def calculate_resource(self) -> tuple[Resource, int, int]:
        """(requests, non-zero cpu, non-zero memory), cached (upstream calculateResource)."""
        if self._requests is None:
            view = pod_resources(self.pod)  # kept there: the pod's copies' PodInfos share it
            if view.calculated is None:
                nz = non_zero_pod_requests(self.pod)
                res = Resource.from_list(pod_requests(self.pod))
                view.calculated = (res, nz.get("cpu", 0), nz.get("memory", 0))
            res_any, nz_cpu, nz_mem = view.calculated
            assert isinstance(res_any, Resource)
            self._requests = res_any
            self._non_zero = (nz_cpu, nz_mem)
        assert self._non_zero is not None
        return self._requests, self._non_zero[0], self._non_zero[1]

    @property
    def key(self) -> str:
        return self.pod.key

    def __repr__(self) -> str:
        return f"PodInfo({self.pod.key})"


def pod_with_affinity(pod: Pod) -> bool:
    aff = pod.spec.affinity
    return aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)


def pod_with_required_anti_affinity(pod: Pod) -> bool:
    aff = pod.spec.affinity
    return (
        aff is not None
        and aff.pod_anti_affinity is not None
        and len(aff.pod_anti_affinity.required) > 0
    )


class HostPortInfo:
    """framework.HostPortInfo: ip -> {(protocol, port)}; 0.0.0.0 conflicts with every IP."""

    __slots__ = ("_ports",)

    def __init__(self) -> None:
        self._ports: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self._ports.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        s = self._ports.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self._ports[ip]

    def __len__(self) -> int:
        return sum(len(s) for s in self._ports.values())

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in s for s in self._ports.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            s = self._ports.get(key)
            if s is not None and pp in s:
                return True
        return False

    def items(self) -> Iterable[tuple[str, set[tuple[str, int]]]]:
        return self._ports.items()

    def clone(self) -> HostPortInfo:
        c = HostPortInfo()
        c._ports = {ip: set(s) for ip, s in self._ports.items()}
        return c


def host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """schedutil.GetHostPorts: (hostIP, protocol, hostPort) of sidecars and containers."""
    out = []
    for c in pod.spec.init_containers:
        if c.restart_policy != "Always":
            continue
        for p in c.ports:
            if p.host_port > 0:
                out.append((p.host_ip, p.protocol, p.host_port))
    for c in pod.spec.containers:
        for p in c.ports:
            if p.host_port > 0:
                out.append((p.host_ip, p.protocol, p.host_port))
    return out


@dataclass(slots=True)
class ImageStateSummary:
    """An image's size and how many nodes have it (filled by the cache's snapshot)."""

    size: int
    num_nodes: int


def normalized_image_name(name: str) -> str:
    """Append ":latest" when the reference has neither tag nor digest (ImageLocality)."""
    if name.rfind(":") <= name.rfind("/"):
        name = name + ":latest"
    return name


class NodeInfo:
    """framework.NodeInfo: a node, its pods and the sums the plugins read."""

    __slots__ = (
        "_pod_index",
        "allocatable",
        "generation",
        "image_states",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "requested",
        "used_ports",
    )

    def __init__(self, *pods: Pod) -> None:
        self.node: Node | None = None
        self.name = ""  # the node's name ("" without a node); kept in step by set_node
        self.pods: list[PodInfo] = []
        # uid -> position in pods: RemovePod without a scan of the node's pods (each
        # binding's cache update removes the assumed pod; at 3,000 pods on one node the
        # scan was a third of the scheduler's CPU, issue 23 item 4)
        self._pod_index: dict[str, int] = {}
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.generation = next_generation()
        for p in pods:
            self.add_pod(p)

    def set_node(self, node: Node) -> None:
        """SetNode: the node object and its allocatable (image_states are the cache's job)."""
        self.node = node
        self.name = node.metadata.name
        self.allocatable = Resource.from_list(int_resources(node.status.allocatable))
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.name = ""
        self.generation = next_generation()

    def add_pod(self, pod: Pod) -> None:
        self.add_pod_info(PodInfo(pod))

    def add_pod_info(self, pi: PodInfo) -> None:
        self._pod_index[pi.pod.metadata.uid] = len(self.pods)
        self.pods.append(pi)
        if pod_with_affinity(pi.pod):
            self.pods_with_affinity.append(pi)
        if pod_with_required_anti_affinity(pi.pod):
            self.pods_with_required_anti_affinity.append(pi)
        self._update(pi, 1)

    def remove_pod(self, pod: Pod) -> None:
        """RemovePod by uid; raises KeyError when the pod is not on this node.

        Like upstream, the last element is swapped into the removed one's place.
        """
        uid = pod.metadata.uid
        _remove_from(self.pods_with_affinity, uid)
        _remove_from(self.pods_with_required_anti_affinity, uid)
        i = self._pod_index.pop(uid, None)
        if i is None:
            raise KeyError(f"no corresponding pod {pod.key} in pods of node {self.name}")
        pi = self.pods[i]
        last = self.pods.pop()
        if last is not pi:
            self.pods[i] = last
            self._pod_index[last.pod.metadata.uid] = i
        self._update(pi, -1)

    def update_pod(self, old: Pod, new: Pod) -> bool:
        """RemovePod(old) + AddPod(new) for a pod whose spec did not change (a status
        write on a bound pod): the pods end in the same order, but the sums, host ports
        and affinity terms, all the spec's, are kept rather than computed again. False,
        with nothing done, when the pod is not here or its spec changed."""
        uid = old.metadata.uid
        i = self._pod_index.get(uid)
        if i is None or new.metadata.uid != uid:
            return False
        pi = self.pods[i]
        if pi.pod.spec != new.spec:
            return False
        npi = pi.with_pod(new)
        last = self.pods.pop()
        if last is not pi:
            self.pods[i] = last
            self._pod_index[last.pod.metadata.uid] = i
        self._pod_index[uid] = len(self.pods)
        self.pods.append(npi)
        for lst in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
            if _remove_from(lst, uid) is not None:
                lst.append(npi)
        self.generation = next_generation()
        return True

    def _update(self, pi: PodInfo, sign: int) -> None:
        res, nz_cpu, nz_mem = pi.calculate_resource()
        r = self.requested
        r.milli_cpu += sign * res.milli_cpu
        r.memory += sign * res.memory
        r.ephemeral_storage += sign * res.ephemeral_storage
        for name, q in res.scalar.items():
            r.scalar[name] = r.scalar.get(name, 0) + sign * q
        self.non_zero_requested.milli_cpu += sign * nz_cpu
        self.non_zero_requested.memory += sign * nz_mem
        for ip, proto, port in host_ports(pi.pod):
            if sign > 0:
                self.used_ports.add(ip, proto, port)
            else:
                self.used_ports.remove(ip, proto, port)
        self.generation = next_generation()

    def clone(self) -> NodeInfo:
        """A copy whose lists and sums can change without touching this one (pods are shared)."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c._pod_index = dict(self._pod_index)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.used_ports = self.used_ports.clone()
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable.clone()
        c.image_states = dict(self.image_states)
        c.generation = self.generation
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


def _remove_from(lst: list[PodInfo], uid: str) -> PodInfo | None:
    for i in range(len(lst) - 1, -1, -1):  # the pod removed is most often one added lately
        pi = lst[i]
        if pi.pod.metadata.uid == uid:
            lst[i] = lst[-1]
            lst.pop()
            return pi
    return None


@dataclass(slots=True)
class PreFilterResult:
    """PreFilterResult: node_names None means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return PreFilterResult(None if self.node_names is None else set(self.node_names))
        if self.all_nodes():
            return PreFilterResult(set(other.node_names or ()))
        return PreFilterResult(set(self.node_names or ()) & set(other.node_names or ()))


@dataclass(slots=True)
class PostFilterResult:
    """PostFilterResult: the nominating info (mode Override sets node name; Noop leaves it)."""

    nominated_node_name: str = ""
    mode: str = "Override"  # "Noop" | "Override"


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(slots=True)
class PluginScore:
    name: str
    score: int


@dataclass(slots=True)
class NodePluginScores:
    """A node's weighted score per plugin and their total (selectHost reads total_score)."""

    name: str
    scores: list[PluginScore] = field(default_factory=list)
    total_score: int = 0


MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1
