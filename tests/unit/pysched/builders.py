"""Pod and node builders for pysched tests (like upstream's st.MakePod()/st.MakeNode()).

Shared by pysched-rules and pysched-engine tests; add helpers, don't change existing ones.
"""

from __future__ import annotations

from typing import Any

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched import decode as sched_decode
from pysched.framework.types import NodeInfo


class PodBuilder:
    """Fluent builder over a Kubernetes dict, decoded strictly by Pod.from_dict at .obj()."""

    def __init__(self, name: str = "p", namespace: str = "default") -> None:
        self.d: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"{namespace}/{name}"},
            "spec": {"containers": []},
        }

    @property
    def _spec(self) -> dict[str, Any]:
        return self.d["spec"]

    def uid(self, uid: str) -> PodBuilder:
        self.d["metadata"]["uid"] = uid
        return self

    def label(self, k: str, v: str) -> PodBuilder:
        self.d["metadata"].setdefault("labels", {})[k] = v
        return self

    def labels(self, labels: dict[str, str]) -> PodBuilder:
        self.d["metadata"].setdefault("labels", {}).update(labels)
        return self

    def creation(self, ts: str) -> PodBuilder:
        self.d["metadata"]["creationTimestamp"] = ts
        return self

    def container(
        self,
        requests: dict[str, Any] | None = None,
        *,
        image: str = "",
        name: str | None = None,
        limits: dict[str, Any] | None = None,
        ports: list[dict[str, Any]] | None = None,
    ) -> PodBuilder:
        c: dict[str, Any] = {"name": name or f"c{len(self._spec['containers'])}"}
        if image:
            c["image"] = image
        res: dict[str, Any] = {}
        if requests is not None:
            res["requests"] = requests
        if limits is not None:
            res["limits"] = limits
        if res:
            c["resources"] = res
        if ports:
            c["ports"] = ports
        self._spec["containers"].append(c)
        return self

    def req(self, **requests: Any) -> PodBuilder:
        """A container with these requests: req(cpu="500m", memory="1Gi")."""
        return self.container({k.replace("_", "-"): v for k, v in requests.items()})

    def init_container(
        self,
        requests: dict[str, Any] | None = None,
        *,
        sidecar: bool = False,
        ports: list[dict[str, Any]] | None = None,
    ) -> PodBuilder:
        inits = self._spec.setdefault("initContainers", [])
        c: dict[str, Any] = {"name": f"init{len(inits)}"}
        if requests is not None:
            c["resources"] = {"requests": requests}
        if sidecar:
            c["restartPolicy"] = "Always"
        if ports:
            c["ports"] = ports
        inits.append(c)
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> PodBuilder:
        p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        return self.container(ports=[p])

    def overhead(self, **res: Any) -> PodBuilder:
        self._spec["overhead"] = res
        return self

    def node(self, name: str) -> PodBuilder:
        self._spec["nodeName"] = name
        return self

    def node_selector(self, sel: dict[str, str]) -> PodBuilder:
        self._spec["nodeSelector"] = sel
        return self

    def priority(self, p: int) -> PodBuilder:
        self._spec["priority"] = p
        return self

    def scheduler_name(self, name: str) -> PodBuilder:
        self._spec["schedulerName"] = name
        return self

    def toleration(
        self, key: str = "", value: str = "", effect: str = "", operator: str = "Equal"
    ) -> PodBuilder:
        t: dict[str, Any] = {"operator": operator}
        if key:
            t["key"] = key
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self._spec.setdefault("tolerations", []).append(t)
        return self

    def _affinity(self) -> dict[str, Any]:
        return self._spec.setdefault("affinity", {})

    def node_affinity_in(self, key: str, values: list[str], op: str = "In") -> PodBuilder:
        """A required node-affinity term (one term per call: terms are ORed)."""
        na = self._affinity().setdefault("nodeAffinity", {})
        req = na.setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
        )
        req["nodeSelectorTerms"].append(
            {"matchExpressions": [{"key": key, "operator": op, "values": values}]}
        )
        return self

    def node_affinity_raw(self, node_affinity: dict[str, Any]) -> PodBuilder:
        self._affinity()["nodeAffinity"] = node_affinity
        return self

    def preferred_node_affinity(
        self, weight: int, key: str, values: list[str], op: str = "In"
    ) -> PodBuilder:
        na = self._affinity().setdefault("nodeAffinity", {})
        na.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {
                "weight": weight,
                "preference": {
                    "matchExpressions": [{"key": key, "operator": op, "values": values}]
                },
            }
        )
        return self

    def _pod_aff(self, kind: str, required: bool, term: dict[str, Any], weight: int) -> PodBuilder:
        pa = self._affinity().setdefault(kind, {})
        if required:
            pa.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            pa.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        return self

    @staticmethod
    def _term(labels: dict[str, str], topology_key: str, **extra: Any) -> dict[str, Any]:
        t: dict[str, Any] = {"labelSelector": {"matchLabels": labels}, "topologyKey": topology_key}
        t.update(extra)
        return t

    def pod_affinity(
        self, labels: dict[str, str], topology_key: str, *, weight: int = 0, **extra: Any
    ) -> PodBuilder:
        """Required when weight == 0, else preferred with that weight."""
        return self._pod_aff(
            "podAffinity", weight == 0, self._term(labels, topology_key, **extra), weight
        )

    def pod_anti_affinity(
        self, labels: dict[str, str], topology_key: str, *, weight: int = 0, **extra: Any
    ) -> PodBuilder:
        return self._pod_aff(
            "podAntiAffinity", weight == 0, self._term(labels, topology_key, **extra), weight
        )

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when: str = "DoNotSchedule",
        labels: dict[str, str] | None = None,
        **extra: Any,
    ) -> PodBuilder:
        c: dict[str, Any] = {
            "maxSkew": max_skew,
            "topologyKey": topology_key,
            "whenUnsatisfiable": when,
        }
        if labels is not None:
            c["labelSelector"] = {"matchLabels": labels}
        c.update(extra)
        self._spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def spec(self, **fields: Any) -> PodBuilder:
        self._spec.update(fields)
        return self

    def obj(self) -> Pod:
        return sched_decode.pod(self.d)


class NodeBuilder:
    def __init__(self, name: str = "n") -> None:
        self.d: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {}},
        }

    def capacity(self, **res: Any) -> NodeBuilder:
        """Allocatable: capacity(cpu="4", memory="8Gi", pods=110)."""
        self.d["status"]["allocatable"].update({k.replace("_", "-"): v for k, v in res.items()})
        return self

    def label(self, k: str, v: str) -> NodeBuilder:
        self.d["metadata"]["labels"][k] = v
        return self

    def labels(self, labels: dict[str, str]) -> NodeBuilder:
        self.d["metadata"]["labels"].update(labels)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        t: dict[str, Any] = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self.d["spec"].setdefault("taints", []).append(t)
        return self

    def unschedulable(self, v: bool = True) -> NodeBuilder:
        self.d["spec"]["unschedulable"] = v
        return self

    def image(self, names: list[str], size: int) -> NodeBuilder:
        self.d["status"].setdefault("images", []).append({"names": names, "sizeBytes": size})
        return self

    def obj(self) -> Node:
        return sched_decode.node(self.d)


def make_pod(name: str = "p", namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str = "n") -> NodeBuilder:
    return NodeBuilder(name)


def node_info(node: Node, *pods: Pod) -> NodeInfo:
    """A NodeInfo with `node` set and `pods` added (image_states left empty)."""
    ni = NodeInfo(*pods)
    ni.set_node(node)
    return ni


# ---------------------------------------------------------------- a self-contained snapshot


class FakeSnapshot:
    """A SharedLister/NodeInfoLister over NodeInfos, with image states as the cache computes
    them (per normalized image name: size and the number of nodes holding it)."""

    def __init__(self, nodes: list[Node], pods: list[Pod] | None = None) -> None:
        from pysched.framework.types import ImageStateSummary, normalized_image_name

        self.infos: dict[str, NodeInfo] = {}
        for n in nodes:
            ni = NodeInfo()
            ni.set_node(n)
            self.infos[n.metadata.name] = ni
        for p in pods or []:
            self.infos[p.spec.node_name].add_pod(p)
        holders: dict[str, tuple[int, set[str]]] = {}
        for n in nodes:
            for img in n.status.images:
                for name in img.names:
                    key = normalized_image_name(name)
                    _, names = holders.setdefault(key, (img.size_bytes, set()))
                    names.add(n.metadata.name)
        for n in nodes:
            states = self.infos[n.metadata.name].image_states
            for img in n.status.images:
                for name in img.names:
                    key = normalized_image_name(name)
                    _size, names = holders[key]
                    states[key] = ImageStateSummary(img.size_bytes, len(names))

    def node_infos(self) -> FakeSnapshot:
        return self

    def list(self) -> list[NodeInfo]:
        return list(self.infos.values())

    def get(self, name: str) -> NodeInfo:
        return self.infos[name]

    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        return [ni for ni in self.infos.values() if ni.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        return [ni for ni in self.infos.values() if ni.pods_with_required_anti_affinity]


def framework_for(
    nodes: list[Node], pods: list[Pod] | None = None, config: Any = None, **deps: Any
) -> Any:
    """The default profile's Framework over a FakeSnapshot of `nodes` and bound `pods`."""
    from pysched.config import build_frameworks, load_config
    from pysched.framework.runtime import FrameworkDeps

    cfg = load_config(config)
    d = FrameworkDeps(snapshot=FakeSnapshot(nodes, pods), **deps)
    return next(iter(build_frameworks(cfg, d).values()))


def plugin_for(
    name: str, nodes: list[Node], pods: list[Pod] | None = None, args: Any = None, **deps: Any
) -> Any:
    """One plugin, built by its registry factory with a Framework handle over the cluster."""
    from pysched.framework.registry import in_tree_registry
    from pysched.framework.runtime import Framework, FrameworkDeps

    d = FrameworkDeps(snapshot=FakeSnapshot(nodes, pods), **deps)
    handle = Framework("test", {}, {}, {}, d)
    return in_tree_registry()[name](args, handle)


def run_filter(plugin: Any, pod: Pod, nodes: list[Node], pods: list[Pod] | None = None) -> dict:
    """PreFilter (when the plugin has one) then Filter on every node: {node: Status or None}.

    A PreFilter Skip means Filter is not run (None for every node), as the framework does.
    """
    from pysched.framework.cycle_state import CycleState
    from pysched.framework.status import Code

    snap = plugin.handle.deps.snapshot if hasattr(plugin, "handle") else FakeSnapshot(nodes, pods)
    snap = snap if snap is not None else FakeSnapshot(nodes, pods)
    state = CycleState()
    infos = snap.list()
    if hasattr(plugin, "pre_filter"):
        _, s = plugin.pre_filter(state, pod, infos)
        if s is not None and s.code == Code.SKIP:
            return {ni.name: None for ni in infos}
        if s is not None and not s.is_success():
            return {ni.name: s for ni in infos}
    return {ni.name: plugin.filter(state, pod, ni) for ni in infos}


def run_score(
    plugin: Any, pod: Pod, snap: FakeSnapshot, nodes: list[str] | None = None
) -> dict[str, int] | None:
    """PreScore, Score and NormalizeScore over the (feasible) nodes; None when PreScore skips."""
    from pysched.framework.cycle_state import CycleState
    from pysched.framework.status import Code
    from pysched.framework.types import NodeScore

    state = CycleState()
    infos = [snap.get(n) for n in nodes] if nodes is not None else snap.list()
    if hasattr(plugin, "pre_score"):
        s = plugin.pre_score(state, pod, infos)
        if s is not None and s.code == Code.SKIP:
            return None
        assert s is None or s.is_success(), s
    scores = []
    for ni in infos:
        sc, s = plugin.score(state, pod, ni)
        assert s is None or s.is_success(), s
        scores.append(NodeScore(ni.name, sc))
    ext = plugin.score_extensions()
    if ext is not None:
        s = ext.normalize_score(state, pod, scores)
        assert s is None or s.is_success(), s
    return {ns.name: ns.score for ns in scores}
