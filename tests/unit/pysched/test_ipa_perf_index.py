"""InterPodAffinity through the snapshot's AffinityIndex decides exactly as the plain walk.

Randomised clusters change under the index (pods added, removed and relabelled, nodes
relabelled, removed and added back); after every batch the PreFilter counts and PreScore
topology scores from the index must equal the walk's, and whole runs must bind alike.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from engine_objects import node_dict, pod_dict

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched import decode as sched_decode
from pysched.api import EmbeddedScheduler
from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code
from pysched.plugins import inter_pod_affinity_index
from pysched.plugins.inter_pod_affinity import (
    INDEX_NAME,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "rack"
APPS = ["web", "db", "cache"]
NAMESPACES = {"ns-a": {"team": "x"}, "ns-b": {"team": "y"}, "ns-c": {}}


def random_node(rng: random.Random, name: str) -> Node:
    labels: dict[str, str] = {}
    if rng.random() < 0.8:
        labels[ZONE] = rng.choice(["z1", "z2", "z3"])
    if rng.random() < 0.5:
        labels[RACK] = rng.choice(["r1", "r2"])
    return sched_decode.node(node_dict(name, cpu="64", memory="256Gi", pods=200, labels=labels))


def random_term(rng: random.Random) -> dict[str, Any]:
    r = rng.random()
    if r < 0.5:
        sel: dict[str, Any] = {"matchLabels": {"app": rng.choice(APPS)}}
    elif r < 0.7:
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
        e: dict[str, Any] = {"key": rng.choice(["app", "tier"]), "operator": op}
        if op in ("In", "NotIn"):
            e["values"] = rng.sample([*APPS, "fe", "be"], rng.randint(1, 2))
        sel = {"matchExpressions": [e]}
    elif r < 0.8:
        sel = {}  # everything
    else:
        sel = {"matchLabels": {"app": rng.choice(APPS)}, "matchExpressions": []}
    t: dict[str, Any] = {
        "labelSelector": sel,
        "topologyKey": rng.choice([HOST, HOST, ZONE, RACK]),
    }
    r = rng.random()
    if r < 0.15:
        t["namespaces"] = rng.sample(sorted(NAMESPACES), rng.randint(1, 2))
    elif r < 0.3:
        t["namespaceSelector"] = rng.choice([{}, {"matchLabels": {"team": "x"}}])
    if rng.random() < 0.1:
        t["matchLabelKeys"] = ["tier"]
    return t


def random_affinity(rng: random.Random) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        block: dict[str, Any] = {}
        if rng.random() < 0.3:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [
                random_term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.3:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": random_term(rng)}
                for _ in range(rng.randint(1, 2))
            ]
        if block:
            out[kind] = block
    return out or None


def random_labels(rng: random.Random) -> dict[str, str]:
    labels = {}
    if rng.random() < 0.9:
        labels["app"] = rng.choice(APPS)
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(["fe", "be"])
    if rng.random() < 0.5:  # no selector reads it: projected groups merge these pods
        labels["pod-name"] = f"x{rng.randrange(10**6)}"
    return labels


def random_pod(rng: random.Random, name: str, node: str = "") -> Pod:
    return sched_decode.pod(
        pod_dict(
            name,
            cpu="10m",
            memory="10Mi",
            node=node,
            labels=random_labels(rng),
            namespace=rng.choice(sorted(NAMESPACES)),
            affinity=random_affinity(rng),
        )
    )


def relabelled(rng: random.Random, pod: Pod) -> Pod:
    d = pod_dict(
        pod.metadata.name,
        cpu="10m",
        memory="10Mi",
        node=pod.spec.node_name,
        labels=random_labels(rng),
        namespace=pod.metadata.namespace,
    )
    new = sched_decode.pod(d)
    new.spec.affinity = pod.spec.affinity
    return new


class _Sink:
    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod: Pod, node: str) -> None:
        self.bound.append((pod.key, node))


def scheduler(seed: int) -> EmbeddedScheduler:
    s = EmbeddedScheduler(_Sink(), rng=random.Random(seed))
    for name, labels in NAMESPACES.items():
        s.on_namespace(name, labels)
    return s


def ipa_plugin(s: EmbeddedScheduler) -> InterPodAffinity:
    fwk = s.frameworks["default-scheduler"]
    return next(pl for pl in fwk.pre_filter_plugins if pl.name() == "InterPodAffinity")


def prefilter_view(pl: InterPodAffinity, pod: Pod, use_index: bool) -> tuple[Any, ...]:
    pl.use_index = use_index
    state = CycleState()
    _, st = pl.pre_filter(state, pod, pl.handle.snapshot_shared_lister().node_infos().list())
    s = state.get(PRE_FILTER_STATE_KEY)
    code = st.code if st is not None else Code.SUCCESS
    if s is None:
        return (code,)
    return (
        code,
        s.existing_anti_affinity_counts,
        s.affinity_counts,
        s.anti_affinity_counts,
    )


def prescore_view(pl: InterPodAffinity, pod: Pod, use_index: bool) -> tuple[Any, ...]:
    pl.use_index = use_index
    state = CycleState()
    st = pl.pre_score(state, pod, pl.handle.snapshot_shared_lister().node_infos().list())
    code = st.code if st is not None else Code.SUCCESS
    return code, state.get(PRE_SCORE_STATE_KEY)


def assert_index_equals_walk(s: EmbeddedScheduler, rng: random.Random, n: int) -> None:
    s.cache.update_snapshot(s.snapshot)
    pl = ipa_plugin(s)
    for j in range(n):
        pod = random_pod(rng, f"in-{j}")
        walk = prefilter_view(pl, pod, False)
        assert prefilter_view(pl, pod, True) == walk, pod.spec.affinity
        walk_score = prescore_view(pl, pod, False)
        assert prescore_view(pl, pod, True) == walk_score, pod.spec.affinity
    pl.use_index = True


@pytest.mark.parametrize(
    ("seed", "max_projections"), [(1, 32), (2, 32), (3, 1), (4, 32), (5, 2), (6, 32)]
)
def test_index_counts_equal_the_walk_as_the_cluster_changes(
    seed: int, max_projections: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # few projections kept: they are dropped and made again often
    monkeypatch.setattr(inter_pod_affinity_index, "MAX_PROJECTIONS", max_projections)
    rng = random.Random(seed)
    s = scheduler(seed)
    names = [f"n{i}" for i in range(rng.randint(5, 40))]
    nodes = {n: random_node(rng, n) for n in names}
    for node in nodes.values():
        s.on_node_add(node)
    pods: dict[str, Pod] = {}
    for i in range(rng.randint(10, 120)):
        p = random_pod(rng, f"b{i}", rng.choice(names))
        pods[p.key] = p
        s.on_pod_add(p)
    assert_index_equals_walk(s, rng, 15)
    assert INDEX_NAME in s.snapshot.indexes  # the index path was taken
    counter = 1000
    for _ in range(12):
        for _ in range(rng.randint(1, 8)):
            r = rng.random()
            if r < 0.35 or not pods:
                counter += 1
                p = random_pod(rng, f"b{counter}", rng.choice(names))
                pods[p.key] = p
                s.on_pod_add(p)
            elif r < 0.55:
                p = pods.pop(rng.choice(sorted(pods)))
                s.on_pod_delete(p)
            elif r < 0.7:
                key = rng.choice(sorted(pods))
                new = relabelled(rng, pods[key])
                s.on_pod_update(pods[key], new)
                pods[key] = new
            elif r < 0.85:
                name = rng.choice(sorted(nodes))
                new_node = random_node(rng, name)
                s.on_node_update(nodes[name], new_node)
                nodes[name] = new_node
            elif r < 0.93 and len(nodes) > 1:
                name = rng.choice(sorted(nodes))
                s.on_node_delete(nodes.pop(name))  # its pods stay until deleted
            else:
                name = rng.choice(names)
                if name not in nodes:
                    nodes[name] = random_node(rng, name)
                    s.on_node_add(nodes[name])
        assert_index_equals_walk(s, rng, 8)


def test_index_built_late_equals_the_walk() -> None:
    """The index made on first use (after many updates) starts from the snapshot as it is."""
    rng = random.Random(7)
    s = scheduler(7)
    for i in range(30):
        s.on_node_add(random_node(rng, f"n{i}"))
    for i in range(200):
        s.on_pod_add(random_pod(rng, f"b{i}", f"n{rng.randrange(30)}"))
    s.cache.update_snapshot(s.snapshot)
    assert INDEX_NAME not in s.snapshot.indexes
    assert_index_equals_walk(s, rng, 40)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_same_bindings_with_index_and_walk(seed: int) -> None:
    runs = []
    for use_index in (True, False):
        rng = random.Random(seed)
        s = scheduler(seed)
        ipa_plugin(s).use_index = use_index
        names = [f"n{i}" for i in range(60)]
        for n in names:
            s.on_node_add(random_node(rng, n))
        for i in range(80):
            s.on_pod_add(random_pod(rng, f"b{i}", rng.choice(names)))
        for i in range(80):
            s.on_pod_add(random_pod(rng, f"p{i}"))
        results = []
        while (rec := s.schedule_one(timeout=0)) is not None:
            results.append((rec.pod.key, rec.result, rec.node, rec.message))
        assert (INDEX_NAME in s.snapshot.indexes) == use_index
        assert sum(r[1] == "scheduled" for r in results) > 0
        runs.append(results)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("seed", [21, 22, 23, 24])
def test_add_remove_pod_on_indexed_state_equal_the_walk_without_those_pods(seed: int) -> None:
    """Preemption and nominated pods change the PreFilter counts through RemovePod/AddPod:
    on the index's counts that must give what the walk gives without (or with) the pods."""
    rng = random.Random(seed)
    s = scheduler(seed)
    names = [f"n{i}" for i in range(12)]
    for n in names:
        s.on_node_add(random_node(rng, n))
    pods = [random_pod(rng, f"b{i}", rng.choice(names)) for i in range(70)]
    for p in pods:
        s.on_pod_add(p)
    s.cache.update_snapshot(s.snapshot)
    pl = ipa_plugin(s)
    checked = nonempty = 0
    for j in range(25):
        incoming = random_pod(rng, f"in-{j}")
        state = CycleState()
        nodes = s.snapshot.list()
        _, st = pl.pre_filter(state, incoming, nodes)
        if st is not None:
            continue  # Skip: no state to change
        ni = s.snapshot.get(rng.choice(names))
        victims = list(ni.pods)
        work = state.clone()
        for pi in victims:
            assert pl.remove_pod(work, incoming, pi, ni) is None
        # the walk over a cluster without the victims
        for pi in victims:
            s.on_pod_delete(pi.pod)
        s.cache.update_snapshot(s.snapshot)
        walk = prefilter_view(pl, incoming, False)
        want = walk[1:] if walk[0] != Code.SKIP else ({}, {}, {})  # Skip: nothing counted
        changed = work.get(PRE_FILTER_STATE_KEY)
        got = (
            changed.existing_anti_affinity_counts,
            changed.affinity_counts,
            changed.anti_affinity_counts,
        )
        assert got == want
        nonempty += any(got)
        # and back: adding them again restores the original counts
        for pi in victims:
            s.on_pod_add(pi.pod)
            assert pl.add_pod(work, incoming, pi, ni) is None
        s.cache.update_snapshot(s.snapshot)
        pl.use_index = True
        orig = state.get(PRE_FILTER_STATE_KEY)
        back = work.get(PRE_FILTER_STATE_KEY)
        assert back.existing_anti_affinity_counts == orig.existing_anti_affinity_counts
        assert back.affinity_counts == orig.affinity_counts
        assert back.anti_affinity_counts == orig.anti_affinity_counts
        checked += 1
    assert checked > 5
    assert nonempty > 2
