"""The scheduler cache: live NodeInfos, assumed pods, and the per-cycle Snapshot.

Mirrors pkg/scheduler/backend/cache/{cache.go,snapshot.go,node_tree.go}:

- pods move through the states *assumed* (the scheduler picked a node; binding is in flight),
  *binding finished*, and *added* (the informer confirmed the binding). ``forget_pod`` undoes an
  assumption that failed later (Reserve/Permit/bind).
- every change marks the node dirty; ``update_snapshot`` clones only the dirty NodeInfos into the
  snapshot, and rebuilds the ordered node lists only when nodes come or go (or a node starts or
  stops having pods with (anti-)affinity). Nothing is rebuilt per pod.
- node order is the node tree's: zones in order of appearance, nodes interleaved round-robin
  across zones (with no zone labels: insertion order).
- image states: for every image name the size and the set of nodes that have it; each NodeInfo's
  ``image_states`` holds summaries whose ``num_nodes`` is the cluster-wide spread.
- an optional columnar NodeTable (pysched.framework.node_table) is kept in step with the
  snapshot, row per node in snapshot order, so the plugins' batch twins read the same state
  their per-node methods read.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched.framework.types import ImageStateSummary, NodeInfo, normalized_image_name

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
LEGACY_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


NodeInfos = list[NodeInfo]  # spelled once: inside Snapshot, ``list`` is a method


class CacheError(Exception):
    """An inconsistent cache operation (a bug in the caller or a stale event)."""


def pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def zone_key(node: Node) -> str:
    """utilnode.GetZoneKey: region + ':\\x00:' + zone, or '' without labels."""
    labels = node.metadata.labels
    region = labels.get(REGION_LABEL) or labels.get(LEGACY_REGION_LABEL, "")
    zone = labels.get(ZONE_LABEL) or labels.get(LEGACY_ZONE_LABEL, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """node_tree.go: zone-interleaved node order."""

    def __init__(self) -> None:
        self.zones: list[str] = []
        self.tree: dict[str, list[str]] = {}
        self.members: set[str] = set()
        self.num_nodes = 0

    def add(self, node: Node) -> None:
        z = zone_key(node)
        names = self.tree.get(z)
        if names is None:
            self.zones.append(z)
            names = self.tree[z] = []
        if node.metadata.name in self.members:
            return
        names.append(node.metadata.name)
        self.members.add(node.metadata.name)
        self.num_nodes += 1

    def remove(self, node: Node) -> None:
        z = zone_key(node)
        names = self.tree.get(z)
        if not names or node.metadata.name not in self.members:
            return
        names.remove(node.metadata.name)
        self.members.discard(node.metadata.name)
        self.num_nodes -= 1
        if not names:
            del self.tree[z]
            self.zones.remove(z)

    def update(self, old: Node | None, new: Node) -> None:
        if old is not None:
            if zone_key(old) == zone_key(new):
                return
            self.remove(old)
        self.add(new)

    def list(self) -> list[str]:
        """Round-robin over zones (node_tree.go list())."""
        out: list[str] = []
        idx = 0
        while len(out) < self.num_nodes:
            for z in self.zones:
                names = self.tree[z]
                if idx < len(names):
                    out.append(names[idx])
            idx += 1
        return out


class Snapshot:
    """The immutable view one scheduling cycle reads (snapshot.go).

    One Snapshot per Cache: ``Cache.update_snapshot`` hands it the changes since its last call.
    NodeInfos in it are copies the cache never touches again (a change makes a new copy), so a
    cycle may keep reading them after the next update."""

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.affinity_list: list[NodeInfo] = []
        self.anti_affinity_list: list[NodeInfo] = []
        self.index_of: dict[str, int] = {}
        self.generation = 0
        self.table: Any = None  # a NodeTable when the vectorised path is on
        # Derived indexes (name -> object with node_changed(name, NodeInfo | None)), made on
        # first use by whoever needs one (see ``index``) and kept in step by update_snapshot.
        self.indexes: dict[str, Any] = {}

    @classmethod
    def from_nodes(cls, nodes: list[Node], pods: list[Pod]) -> Snapshot:
        """A snapshot built directly (tests, simulate): pods with spec.nodeName land on nodes."""
        cache = Cache()
        for n in nodes:
            cache.add_node(n)
        for p in pods:
            if p.spec.node_name:
                cache.add_pod(p)
        snap = cls()
        cache.update_snapshot(snap)
        return snap

    # The lister interface plugins see through the framework handle.
    def list(self) -> list[NodeInfo]:
        return self.node_info_list

    def get(self, name: str) -> NodeInfo:
        ni = self.node_info_map.get(name)
        if ni is None:
            raise KeyError(f'nodeinfo not found for node name "{name}"')
        return ni

    def have_pods_with_affinity_list(self) -> NodeInfos:
        return self.affinity_list

    def have_pods_with_required_anti_affinity_list(self) -> NodeInfos:
        return self.anti_affinity_list

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def node_infos(self) -> Snapshot:
        return self

    def index(self, name: str, build: Callable[[NodeInfos], Any]) -> Any:
        """The derived index ``name``, built from the NodeInfos on first use.

        Why: a plugin may keep counts over every pod (InterPodAffinity does) instead of walking
        all pods each cycle; the cache then tells the index about each NodeInfo it replaces or
        drops, so the index always matches this snapshot's NodeInfos."""
        ix = self.indexes.get(name)
        if ix is None:
            ix = self.indexes[name] = build(list(self.node_info_map.values()))
        return ix

    def _node_changed(self, name: str, ni: NodeInfo | None) -> None:
        for ix in self.indexes.values():
            ix.node_changed(name, ni)


@dataclass
class _PodState:
    pod: Pod
    deadline: float | None = None
    binding_finished: bool = False


@dataclass
class _ImageState:
    size: int
    nodes: set[str]


class Cache:
    """cacheImpl: thread-safe; the scheduling loop and the event feed share it."""

    def __init__(
        self,
        *,
        assumed_pod_ttl: float = 0.0,
        clock: Callable[[], float] | None = None,
        table_factory: Callable[[], Any] | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._nodes: dict[str, NodeInfo] = {}
        self._pod_states: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._tree = NodeTree()
        self._images: dict[str, _ImageState] = {}
        self._summaries: dict[str, ImageStateSummary] = {}
        self._dirty: set[str] = set()
        self._nodes_changed = True
        self._generation = 0
        self._ttl = assumed_pod_ttl
        self._clock = clock
        self._table_factory = table_factory

    # ------------------------------------------------------------------ pods
    def _node_info_for(self, name: str) -> NodeInfo:
        ni = self._nodes.get(name)
        if ni is None:
            ni = NodeInfo()  # a node we have not seen yet (pods may arrive first)
            self._nodes[name] = ni
        return ni

    def _touch(self, name: str) -> None:
        self._dirty.add(name)
        self._generation += 1

    def _add_pod_locked(self, pod: Pod, assume: bool) -> None:
        self._node_info_for(pod.spec.node_name).add_pod(pod)
        key = pod_key(pod)
        self._pod_states[key] = _PodState(pod)
        if assume:
            self._assumed.add(key)
        self._touch(pod.spec.node_name)

    def _remove_pod_locked(self, pod: Pod) -> None:
        name = pod.spec.node_name
        ni = self._nodes.get(name)
        if ni is not None:
            ni.remove_pod(pod)
            if ni.node is None and not ni.pods:
                del self._nodes[name]
                self._nodes_changed = True
            self._touch(name)
        key = pod_key(pod)
        self._pod_states.pop(key, None)
        self._assumed.discard(key)

    def assume_pod(self, pod: Pod) -> None:
        """The scheduler picked pod.spec.node_name; count the pod there until bound or forgotten."""
        with self._lock:
            key = pod_key(pod)
            if key in self._pod_states:
                raise CacheError(f"pod {key} is in the cache, so can't be assumed")
            if not pod.spec.node_name:
                raise CacheError(f"pod {key}: assume needs spec.nodeName")
            self._add_pod_locked(pod, assume=True)

    def finish_binding(self, pod: Pod) -> None:
        with self._lock:
            st = self._pod_states.get(pod_key(pod))
            if st is not None and pod_key(pod) in self._assumed:
                st.binding_finished = True
                if self._ttl > 0 and self._clock is not None:
                    st.deadline = self._clock() + self._ttl

    def forget_pod(self, pod: Pod) -> None:
        with self._lock:
            key = pod_key(pod)
            st = self._pod_states.get(key)
            if st is None:
                return
            if st.pod.spec.node_name != pod.spec.node_name:
                raise CacheError(
                    f"pod {key} was assumed on {pod.spec.node_name} but assigned to "
                    f"{st.pod.spec.node_name}"
                )
            if key not in self._assumed:
                raise CacheError(f"pod {key} wasn't assumed so cannot be forgotten")
            self._remove_pod_locked(st.pod)

    def add_pod(self, pod: Pod) -> None:
        """A bound pod from the informer (confirms an assumed one)."""
        with self._lock:
            key = pod_key(pod)
            st = self._pod_states.get(key)
            if st is not None and key in self._assumed:
                if st.pod.spec.node_name != pod.spec.node_name:
                    self._remove_pod_locked(st.pod)
                    self._add_pod_locked(pod, assume=False)
                else:
                    self._assumed.discard(key)
                    self._update_pod_locked(st.pod, pod)
                return
            if st is not None:
                # already added (e.g. a re-list): treat as an update
                self._update_pod_locked(st.pod, pod)
                return
            self._add_pod_locked(pod, assume=False)

    def _update_pod_locked(self, old: Pod, new: Pod) -> None:
        name = new.spec.node_name
        ni = self._nodes.get(name) if name == old.spec.node_name else None
        if ni is not None and ni.update_pod(old, new):  # the spec unchanged: sums kept
            key = pod_key(new)
            self._pod_states[key] = _PodState(new)
            self._assumed.discard(key)
            self._touch(name)
            return
        self._remove_pod_locked(old)
        self._add_pod_locked(new, assume=False)

    def update_pod(self, old: Pod, new: Pod) -> None:
        with self._lock:
            key = pod_key(old)
            st = self._pod_states.get(key)
            if st is None or key in self._assumed:
                raise CacheError(f"pod {key} is not added to scheduler cache, so cannot be updated")
            self._update_pod_locked(st.pod, new)

    def remove_pod(self, pod: Pod) -> None:
        with self._lock:
            st = self._pod_states.get(pod_key(pod))
            if st is None:
                return
            self._remove_pod_locked(st.pod)

    def is_assumed_pod(self, pod: Pod) -> bool:
        with self._lock:
            return pod_key(pod) in self._assumed

    def get_pod(self, pod: Pod) -> Pod | None:
        with self._lock:
            st = self._pod_states.get(pod_key(pod))
            return st.pod if st else None

    def cleanup_assumed_pods(self, now: float) -> list[Pod]:
        """Expire assumed pods whose binding finished more than the TTL ago (TTL 0: never)."""
        expired = []
        with self._lock:
            for key in list(self._assumed):
                st = self._pod_states[key]
                if st.binding_finished and st.deadline is not None and now > st.deadline:
                    expired.append(st.pod)
                    self._remove_pod_locked(st.pod)
        return expired

    # ------------------------------------------------------------------ nodes
    def add_node(self, node: Node) -> NodeInfo:
        with self._lock:
            ni, _ = self._node_slot(node.metadata.name)
            self._tree.add(node)
            self._nodes_changed = True
            return self._set_node(ni, node)

    def update_node(self, old: Node | None, new: Node) -> NodeInfo:
        with self._lock:
            ni, created = self._node_slot(new.metadata.name)
            if created:
                self._tree.add(new)
                self._nodes_changed = True
            else:
                self._tree.update(ni.node, new)
                if ni.node is None or zone_key(ni.node) != zone_key(new):
                    self._nodes_changed = True
            return self._set_node(ni, new)

    def _node_slot(self, name: str) -> tuple[NodeInfo, bool]:
        """AddNode's and UpdateNode's start: the node's NodeInfo, created (True) when the cache
        has none, else with the old node's image states dropped (the new node's are counted
        by ``_set_node``). Under the lock."""
        ni = self._nodes.get(name)
        if ni is None:
            return self._node_info_for(name), True
        self._remove_node_image_states(ni.node)
        return ni, False

    def _set_node(self, ni: NodeInfo, node: Node) -> NodeInfo:
        """AddNode's and UpdateNode's end: the node's images counted, the node set in its
        NodeInfo (marked for the next snapshot), a copy returned. Under the lock."""
        self._add_node_image_states(node, ni)
        ni.set_node(node)
        self._touch(node.metadata.name)
        return ni.clone()

    def remove_node(self, node: Node) -> None:
        with self._lock:
            name = node.metadata.name
            ni = self._nodes.get(name)
            if ni is None:
                raise CacheError(f"node {name} is not found")
            self._remove_node_image_states(ni.node)
            self._tree.remove(node)
            if ni.pods:
                ni.remove_node()  # keep the pods until their delete events arrive
            else:
                del self._nodes[name]
            self._nodes_changed = True
            self._touch(name)

    def _add_node_image_states(self, node: Node, ni: NodeInfo) -> None:
        summaries: dict[str, ImageStateSummary] = {}
        for image in node.status.images:
            for raw in image.names:
                name = normalized_image_name(raw)
                st = self._images.get(name)
                if st is None:
                    st = self._images[name] = _ImageState(image.size_bytes, set())
                    self._summaries[name] = ImageStateSummary(size=image.size_bytes, num_nodes=0)
                if node.metadata.name not in st.nodes:
                    st.nodes.add(node.metadata.name)
                    self._summaries[name].num_nodes = len(st.nodes)
                    # other nodes with this image see a new spread: their scores change
                    self._dirty.update(st.nodes)
                summaries[name] = self._summaries[name]
        ni.image_states = summaries

    def _remove_node_image_states(self, node: Node | None) -> None:
        if node is None:
            return
        for image in node.status.images:
            for raw in image.names:
                name = normalized_image_name(raw)
                st = self._images.get(name)
                if st is None:
                    continue
                st.nodes.discard(node.metadata.name)
                self._dirty.update(st.nodes)
                if not st.nodes:
                    del self._images[name]
                    del self._summaries[name]
                else:
                    self._summaries[name].num_nodes = len(st.nodes)

    def node_count(self) -> int:
        with self._lock:
            return self._tree.num_nodes

    def pod_count(self) -> int:
        with self._lock:
            return len(self._pod_states)

    def node_names(self) -> list[str]:
        with self._lock:
            return self._tree.list()

    # ------------------------------------------------------------------ snapshot
    def update_snapshot(self, snap: Snapshot) -> None:
        """Bring ``snap`` up to date, copying only what changed since its last update."""
        with self._lock:
            if (
                snap.generation == self._generation
                and not self._nodes_changed
                and snap.node_info_map
            ):
                return
            rebuild_lists = self._nodes_changed or not snap.node_info_list
            replaced: list[str] = []
            for name in self._dirty:
                ni = self._nodes.get(name)
                if ni is None or ni.node is None:
                    if snap.node_info_map.pop(name, None) is not None:
                        rebuild_lists = True
                        snap._node_changed(name, None)
                    continue
                clone = ni.clone()
                old = snap.node_info_map.get(name)
                if old is None:
                    rebuild_lists = True
                snap.node_info_map[name] = clone
                snap._node_changed(name, clone)
                replaced.append(name)
            self._dirty.clear()
            if rebuild_lists:
                order = [n for n in self._tree.list() if n in snap.node_info_map]
                snap.node_info_list = [snap.node_info_map[n] for n in order]
                snap.index_of = {n: i for i, n in enumerate(order)}
            else:
                for name in replaced:
                    snap.node_info_list[snap.index_of[name]] = snap.node_info_map[name]
            if rebuild_lists:
                snap.affinity_list = [ni for ni in snap.node_info_list if ni.pods_with_affinity]
                snap.anti_affinity_list = [
                    ni for ni in snap.node_info_list if ni.pods_with_required_anti_affinity
                ]
            else:
                for name in replaced:
                    ni = snap.node_info_map[name]
                    _place(snap.affinity_list, ni, bool(ni.pods_with_affinity), snap.index_of)
                    _place(
                        snap.anti_affinity_list,
                        ni,
                        bool(ni.pods_with_required_anti_affinity),
                        snap.index_of,
                    )
            if self._table_factory is not None:
                if snap.table is None or rebuild_lists:
                    snap.table = self._table_factory()
                    snap.table.rebuild(snap.node_info_list)
                else:
                    for name in replaced:
                        snap.table.update_row(snap.index_of[name], snap.node_info_map[name])
            snap.generation = self._generation
            self._nodes_changed = False

    def dump(self) -> dict[str, list[str]]:
        """node -> pod keys (debugging, tests)."""
        with self._lock:
            return {name: [pod_key(pi.pod) for pi in ni.pods] for name, ni in self._nodes.items()}


def _place(lst: list[NodeInfo], ni: NodeInfo, member: bool, index_of: dict[str, int]) -> None:
    """Keep ``lst`` (ordered like the snapshot) holding ``ni`` iff ``member``, in O(log n)."""
    idx = index_of[ni.name]
    i = bisect.bisect_left(lst, idx, key=lambda x: index_of[x.name])
    present = i < len(lst) and lst[i].name == ni.name
    if member and present:
        lst[i] = ni
    elif member:
        lst.insert(i, ni)
    elif present:
        del lst[i]
