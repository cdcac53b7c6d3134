"""The vectorised path decides exactly as the plugins do: randomised clusters through both."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from engine_objects import node_dict, pod_dict

from pykubelet.api.objects import Node
from pykubelet.api.types import Pod
from pysched import decode as sched_decode
from pysched.api import EmbeddedScheduler
from pysched.config import load_config
from pysched.framework.cycle_state import CycleState
from pysched.framework.interfaces import BatchFilterPlugin, BatchScorePlugin
from pysched.framework.node_table import NominatedLoad
from pysched.framework.types import NodeScore, PodInfo

ZONES = ["a", "b", "c"]
IMAGES = [
    ("nginx:1.25", 150 * 2**20),
    ("redis:7", 60 * 2**20),
    ("busybox:1.36", 5 * 2**20),
    ("big:1", 900 * 2**20),
]
TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "flaky", "value": "", "effect": "PreferNoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "evict", "value": "x", "effect": "NoExecute"},
]


def random_node(rng: random.Random, i: int) -> Node:
    labels = {"topology.kubernetes.io/zone": rng.choice(ZONES)}
    if rng.random() < 0.5:
        labels["disk"] = rng.choice(["ssd", "hdd"])
    if rng.random() < 0.7:
        labels["tier"] = str(rng.randint(1, 5))
    if rng.random() < 0.1:
        labels["tier"] = "not-a-number"
    taints = [t for t in TAINTS if rng.random() < 0.15]
    images = [im for im in IMAGES if rng.random() < 0.3]
    d = node_dict(
        f"node-{i:04d}",
        cpu=str(rng.choice([1, 2, 4, 8, 16])),
        memory=f"{rng.choice([1, 2, 4, 8, 32])}Gi",
        pods=rng.choice([3, 10, 110]),
        labels=labels,
        taints=taints or None,
        images=images or None,
        unschedulable=rng.random() < 0.05,
    )
    return sched_decode.node(d)


def random_pod(rng: random.Random, name: str, node: str = "") -> Pod:
    kw: dict[str, Any] = {}
    r = rng.random()
    if r < 0.15:
        kw["cpu"], kw["memory"] = None, None  # best effort
    elif r < 0.25:
        kw["cpu"], kw["memory"] = rng.choice(["250m", "1"]), None
    else:
        kw["cpu"] = rng.choice(["100m", "500m", "1", "2", "3"])
        kw["memory"] = rng.choice(["64Mi", "512Mi", "1Gi", "3Gi"])
    if rng.random() < 0.3:
        kw["tolerations"] = [
            rng.choice(
                [
                    {
                        "key": "dedicated",
                        "operator": "Equal",
                        "value": "gpu",
                        "effect": "NoSchedule",
                    },
                    {"key": "flaky", "operator": "Exists"},
                    {"operator": "Exists"},
                    {"key": "spot", "operator": "Equal", "value": "true"},
                    {
                        "key": "node.kubernetes.io/unschedulable",
                        "operator": "Exists",
                        "effect": "NoSchedule",
                    },
                ]
            )
        ]
    if rng.random() < 0.2:
        kw["node_selector"] = {"topology.kubernetes.io/zone": rng.choice(ZONES)}
    if rng.random() < 0.35:
        kw["affinity"] = random_node_affinity(rng)
    kw["image"] = rng.choice([im for im, _ in IMAGES] + ["other:1"])
    kw["labels"] = {"app": rng.choice(["web", "db", "cache"])}
    if rng.random() < 0.3:
        kw["affinity"] = {**kw.get("affinity", {}), **random_pod_affinity(rng)}
    spread = None
    if rng.random() < 0.25:
        spread = [
            {
                "maxSkew": rng.randint(1, 3),
                "topologyKey": rng.choice(
                    ["topology.kubernetes.io/zone", "kubernetes.io/hostname", "disk"]
                ),
                "whenUnsatisfiable": rng.choice(
                    ["DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"]
                ),
                "labelSelector": {"matchLabels": {"app": kw["labels"]["app"]}},
            }
            for _ in range(rng.randint(1, 2))
        ]
    d = pod_dict(name, node=node, **kw)
    if spread:
        d["spec"]["topologySpreadConstraints"] = spread
    return sched_decode.pod(d)


def random_pod_affinity(rng: random.Random) -> dict[str, Any]:
    def term() -> dict[str, Any]:
        return {
            "labelSelector": {"matchLabels": {"app": rng.choice(["web", "db", "cache"])}},
            "topologyKey": rng.choice(["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
        }

    out: dict[str, Any] = {}
    kind = rng.choice(["podAffinity", "podAntiAffinity"])
    block: dict[str, Any] = {"requiredDuringSchedulingIgnoredDuringExecution": [term()]}
    if rng.random() < 0.3:
        block["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "podAffinityTerm": term()}
        ]
    out[kind] = block
    return out


def random_node_affinity(rng: random.Random) -> dict[str, Any]:
    def expr() -> dict[str, Any]:
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
        key = rng.choice(["disk", "tier", "topology.kubernetes.io/zone", "missing"])
        if op in ("In", "NotIn"):
            vals = rng.sample(["ssd", "hdd", "a", "b", "3", "zzz"], rng.randint(1, 2))
            return {"key": key, "operator": op, "values": vals}
        if op in ("Gt", "Lt"):
            return {"key": "tier", "operator": op, "values": [str(rng.randint(0, 5))]}
        return {"key": key, "operator": op}

    na: dict[str, Any] = {}
    if rng.random() < 0.6:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [expr() for _ in range(rng.randint(1, 2))]}
                for _ in range(rng.randint(1, 2))
            ]
        }
    if rng.random() < 0.7:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [expr()]}}
            for _ in range(rng.randint(1, 3))
        ]
    return {"nodeAffinity": na}


def _statuses(d: Any) -> dict[str, tuple[Any, ...]]:
    return {n: (st.code, tuple(st.reasons), st.plugin) for n, st in d.node_to_status.items()}


class _Recorder:
    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod: Pod, node: str) -> None:
        self.bound.append((pod.key, node))


def build(
    nodes: list[Node], bound: list[Pod], fast: bool, seed: int
) -> tuple[EmbeddedScheduler, _Recorder]:
    rec = _Recorder()
    s = EmbeddedScheduler(rec, rng=random.Random(seed), fast=fast)
    for n in nodes:
        s.on_node_add(n)
    for p in bound:
        s.on_pod_add(p)
    return s, rec


def cluster(seed: int, n_nodes: int) -> tuple[list[Node], list[Pod], list[Pod]]:
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(n_nodes)]
    bound = [
        random_pod(rng, f"b{i}", node=rng.choice(nodes).metadata.name) for i in range(n_nodes // 2)
    ]
    pending = [random_pod(rng, f"p{i}") for i in range(60)]
    for p in pending:
        if rng.random() < 0.15:  # some carry a nomination from an earlier preemption
            p.status.nominated_node_name = rng.choice(nodes).metadata.name
    return nodes, bound, pending


@pytest.mark.parametrize(("seed", "n_nodes"), [(1, 20), (2, 150), (3, 260), (4, 90), (5, 400)])
def test_same_decisions_fast_and_plain(seed: int, n_nodes: int) -> None:
    nodes, bound, pending = cluster(seed, n_nodes)
    fast, fast_rec = build(nodes, bound, True, seed)
    plain, plain_rec = build(nodes, bound, False, seed)
    assert fast.scheduler.fast is not None
    assert plain.scheduler.fast is None
    for pod in pending:
        a = fast.schedule_now(pod)
        b = plain.schedule_now(pod)
        assert (a.result, a.node, a.message) == (b.result, b.node, b.message), pod.key
        assert fast.scheduler.next_start_node_index == plain.scheduler.next_start_node_index
        if a.diagnosis is not None and b.diagnosis is not None:
            a.diagnosis.resolve()  # statuses the fast path deferred
            assert _statuses(a.diagnosis) == _statuses(b.diagnosis), pod.key
        for s, r in ((fast, a), (plain, b)):
            if r.node:  # the binding comes back as an update
                s.on_pod_update(pod, r.pod)
    assert fast_rec.bound == plain_rec.bound
    stats = fast.scheduler.fast.stats
    assert stats["mismatch"] == 0
    assert stats["errors"] == 0
    assert stats["fast_filter"] > 0
    assert stats["fast_score"] > 0


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_masks_and_plugin_scores_equal_plugins(seed: int) -> None:
    nodes, bound, pending = cluster(seed, 120)
    s, _ = build(nodes, bound, True, seed)
    sched = s.scheduler
    fwk = s.frameworks["default-scheduler"]
    s.cache.update_snapshot(s.snapshot)
    table = s.snapshot.table
    infos = s.snapshot.list()
    compared_scores = 0
    for pod in pending:
        state = CycleState()
        _, st, _ = fwk.run_pre_filter_plugins(state, pod)
        if st is not None and not st.is_success():
            continue
        mask = sched.fast.filter_mask(fwk, state, pod, table)
        assert mask is not None
        plain = np.array([fwk.run_filter_plugins(state, pod, ni).is_success() for ni in infos])
        assert (mask == plain).all(), pod.key
        feasible = [ni for ni, ok in zip(infos, plain, strict=True) if ok]
        if len(feasible) < 2:
            continue
        fwk.run_pre_score_plugins(state, pod, feasible)
        idx = np.flatnonzero(plain)
        fast_scores = sched.fast.plugin_scores(fwk, state, pod, table, idx)
        assert fast_scores is not None
        for pl in fwk.score_plugins:
            if pl.name() in state.skip_score_plugins or pl.name() not in fast_scores:
                continue
            scores = [NodeScore(ni.name, pl.score(state, pod, ni)[0]) for ni in feasible]
            ext = pl.score_extensions()
            if ext is not None:
                ext.normalize_score(state, pod, scores)
            assert fast_scores[pl.name()].tolist() == [x.score for x in scores], (
                pod.key,
                pl.name(),
            )
            compared_scores += 1
    assert compared_scores > 50


def test_table_follows_incremental_changes() -> None:
    nodes, bound, _pending = cluster(21, 30)
    s, _ = build(nodes, bound, True, 21)
    s.cache.update_snapshot(s.snapshot)
    table = s.snapshot.table
    table.label_column("disk")
    # change a node's labels, taints and allocatable; add and remove pods
    old = nodes[3]
    zone = old.metadata.labels["topology.kubernetes.io/zone"]  # same zone: no list rebuild
    d = node_dict(
        old.metadata.name,
        cpu="64",
        memory="128Gi",
        labels={"disk": "nvme", "topology.kubernetes.io/zone": zone},
        taints=[TAINTS[0]],
    )
    new = sched_decode.node(d)
    s.on_node_update(old, new)
    s.on_pod_add(sched_decode.pod(pod_dict("extra", cpu="3", node=old.metadata.name)))
    s.on_pod_delete(bound[0])
    s.cache.update_snapshot(s.snapshot)
    assert s.snapshot.table is table  # updated row by row, not rebuilt
    fresh = type(table)()
    fresh.rebuild(s.snapshot.list())
    fresh.label_column("disk")
    for col in (
        "alloc_cpu",
        "alloc_mem",
        "req_cpu",
        "req_mem",
        "nz_cpu",
        "nz_mem",
        "num_pods",
        "unschedulable",
    ):
        assert (getattr(table, col) == getattr(fresh, col)).all(), col
    i = s.snapshot.index_of[old.metadata.name]
    assert table.label_values["disk"]["nvme"] == table.label_column("disk")[i]
    assert table.taints[int(np.log2(int(table.hard_taints[i, 0])))].key == "dedicated"


class _Cluster:
    """Binder + status writer applying evictions, so preemption runs its whole course."""

    def __init__(self) -> None:
        self.sched: EmbeddedScheduler | None = None
        self.bound: list[tuple[str, str]] = []
        self.evicted: list[str] = []

    def bind(self, pod: Pod, node: str) -> None:
        self.bound.append((pod.key, node))

    def set_pod_condition(self, pod: Pod, reason: str, message: str) -> None:
        pass

    def set_nominated_node_name(self, pod: Pod, node: str) -> None:
        pass

    def evict(self, victim: Pod, preemptor: Pod, node: str) -> None:
        self.evicted.append(victim.key)
        assert self.sched is not None
        self.sched.on_pod_delete(victim)


@pytest.mark.parametrize("seed", [31, 32, 33])
def test_same_decisions_with_preemption_and_nominations(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [
        sched_decode.node(node_dict(f"n{i:03d}", cpu=str(rng.choice([1, 2, 4])), memory="8Gi"))
        for i in range(130)
    ]
    bound = [
        sched_decode.pod(
            pod_dict(
                f"b{i}",
                cpu=rng.choice(["500m", "1"]),
                memory="64Mi",
                node=rng.choice(nodes).metadata.name,
                priority=rng.choice([0, 1, 5]),
            )
        )
        for i in range(260)
    ]
    pending = [
        sched_decode.pod(
            pod_dict(
                f"p{i}",
                cpu=rng.choice(["500m", "1", "2"]),
                memory="64Mi",
                priority=rng.choice([0, 10, 100]),
            )
        )
        for i in range(80)
    ]
    runs = []
    for fast in (True, False):
        c = _Cluster()
        s = EmbeddedScheduler(c, status_writer=c, rng=random.Random(seed), fast=fast)
        c.sched = s
        for n in nodes:
            s.on_node_add(n)
        for p in bound:
            s.on_pod_add(p)
        out = []
        for pod in pending:
            s.register_pod(pod)
            r = s.schedule_now(pod)
            if r.node:
                s.on_pod_update(pod, r.pod)
            out.append((r.result, r.node, r.nominated_node, [v.key for v in r.victims], r.message))
        runs.append((out, c.bound, c.evicted, s))
    (a, a_bound, a_ev, fs), (b, b_bound, b_ev, _) = runs
    assert a == b
    assert a_bound == b_bound
    assert a_ev == b_ev
    assert a_ev, "the workload should preempt"
    assert fs.queue.nominator.has_any()
    assert fs.scheduler.fast.stats["fast_filter"] > 0
    assert fs.scheduler.fast.stats["nominated_load"] > 0  # nominated pods in the columns
    assert fs.scheduler.fast.stats["mismatch"] == 0


@pytest.mark.parametrize(("seed", "shapes"), [(41, 0), (42, 0), (43, 3), (44, 2)])
def test_same_decisions_across_node_events(seed: int, shapes: int) -> None:
    """Nodes come, change and go between pods: the table follows, decisions stay equal.
    ``shapes``: the pending pods are copies of that many pods (0: each its own), so the
    table's kept per-row columns (NodeTable.per_row) answer and are brought up to date."""
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(140)]
    bound = [random_pod(rng, f"b{i}", node=rng.choice(nodes).metadata.name) for i in range(140)]
    if shapes:  # one seed per shape: the same requests, tolerations, affinity ...
        pending = [
            random_pod(random.Random(seed * 100 + rng.randrange(shapes)), f"p{i}")
            for i in range(120)
        ]
    else:
        pending = [random_pod(rng, f"p{i}") for i in range(120)]
    for p in pending:
        p.spec.priority = rng.choice([0, 5, 50])
    events: list[Any] = []
    for i in range(len(pending)):
        r = rng.random()
        if r < 0.08:
            events.append(("add", random_node(rng, 1000 + i)))
        elif r < 0.16:
            events.append(
                ("update", rng.randrange(len(nodes)), random_node(rng, 0), rng.choice([1, 4, 16]))
            )
        elif r < 0.2:
            events.append(("delete", rng.randrange(len(nodes))))
        else:
            events.append(None)
    runs = []
    for fast in (True, False):
        c = _Cluster()
        s = EmbeddedScheduler(c, status_writer=c, rng=random.Random(seed), fast=fast)
        c.sched = s
        live = {n.metadata.name: n for n in nodes}
        for n in nodes:
            s.on_node_add(n)
        for b in bound:
            s.on_pod_add(b)
        out = []
        for pod, ev in zip(pending, events, strict=True):
            if ev is not None and ev[0] == "add":
                s.on_node_add(ev[1])
                live[ev[1].metadata.name] = ev[1]
            elif ev is not None:
                name = nodes[ev[1]].metadata.name
                if name in live and ev[0] == "update":
                    d = node_dict(
                        name,
                        cpu=str(ev[3]),
                        memory="8Gi",
                        labels=dict(ev[2].metadata.labels),
                        taints=[
                            {"key": t.key, "value": t.value, "effect": t.effect}
                            for t in ev[2].spec.taints
                        ]
                        or None,
                    )
                    new = sched_decode.node(d)
                    s.on_node_update(live[name], new)
                    live[name] = new
                elif name in live:
                    s.on_node_delete(live.pop(name))
            s.register_pod(pod)
            r = s.schedule_now(pod)
            if r.node:
                s.on_pod_update(pod, r.pod)
            if r.diagnosis is not None:
                r.diagnosis.resolve()
            out.append(
                (
                    r.result,
                    r.node,
                    r.nominated_node,
                    r.message,
                    _statuses(r.diagnosis) if r.diagnosis else {},
                    s.scheduler.next_start_node_index,
                )
            )
        runs.append((out, c.bound, c.evicted, s))
    (a, a_bound, a_ev, fs), (b, b_bound, b_ev, _) = runs
    for x, y, pod in zip(a, b, pending, strict=True):
        assert x == y, pod.key
    assert (a_bound, a_ev) == (b_bound, b_ev)
    assert fs.scheduler.fast.stats["mismatch"] == 0
    if shapes:
        assert fs.snapshot.table._kept  # the kept columns answered


# ---------------------------------------------------------------- each plugin owns its twin
def test_every_default_filter_and_score_plugin_owns_a_twin() -> None:
    """The vectorised path is the plugins' own: found through the Protocols, not by name."""
    s, _ = build([], [], True, 0)
    fwk = s.frameworks["default-scheduler"]
    assert fwk.filter_plugins
    assert fwk.score_plugins
    for pl in fwk.filter_plugins:
        assert isinstance(pl, BatchFilterPlugin), pl.name()
    for pl in fwk.score_plugins:
        assert isinstance(pl, BatchScorePlugin), pl.name()
    monotone = {pl.name() for pl in fwk.filter_plugins if pl.resource_monotone()}
    assert {"NodeResourcesFit", "TaintToleration", "NodeAffinity"} <= monotone
    assert not {"InterPodAffinity", "PodTopologySpread", "NodePorts"} & monotone


@pytest.mark.parametrize("seed", [51, 52])
def test_each_filter_twin_equals_its_plugin(seed: int) -> None:
    """Plugin by plugin (not only the combined mask): twin row == per-node verdict, with and
    without nominated pods counted in the columns."""
    nodes, bound, pending = cluster(seed, 110)
    s, _ = build(nodes, bound, True, seed)
    fwk = s.frameworks["default-scheduler"]
    s.cache.update_snapshot(s.snapshot)
    table = s.snapshot.table
    infos = s.snapshot.list()
    rng = random.Random(seed)
    compared = 0
    for pod in pending:
        state = CycleState()
        _, st, _ = fwk.run_pre_filter_plugins(state, pod)
        if st is not None and not st.is_success():
            continue
        # a few nominated pods on random rows, counted as the framework's first pass does
        per_row = {
            rng.randrange(len(infos)): [PodInfo(random_pod(rng, f"nom{i}"))] for i in range(3)
        }
        load = NominatedLoad(per_row)
        for pl in fwk.filter_plugins:
            if pl.name() in state.skip_filter_plugins:
                continue
            got = pl.filter_batch(state, pod, table, None)
            if got is None:
                continue
            want = [pl.filter(state, pod, ni) is None for ni in infos]
            assert got.tolist() == want, (pod.key, pl.name())
            compared += 1
            if not pl.resource_monotone():
                continue
            got = pl.filter_batch(state, pod, table, load)
            assert got is not None
            for i, ni in enumerate(infos):
                if i not in per_row:
                    continue
                with_nominated = ni.clone()
                for pi in per_row[i]:
                    with_nominated.add_pod_info(pi)
                assert bool(got[i]) == (pl.filter(state, pod, with_nominated) is None), pl.name()
    assert compared > 100


STRATEGIES = {
    "MostAllocated": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 2}]},
    "LeastAllocated-3": {
        "type": "LeastAllocated",
        "resources": [
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 3},
            {"name": "example.com/gpu", "weight": 2},
        ],
    },
    # beyond the twin: the plugin declines and the per-node methods score
    "RequestedToCapacityRatio": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 1}],
        "requestedToCapacityRatio": {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        },
    },
}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_same_decisions_with_configured_scoring(strategy: str) -> None:
    config = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": STRATEGIES[strategy]},
                        },
                        {
                            "name": "NodeResourcesBalancedAllocation",
                            "args": {"resources": [{"name": "cpu"}, {"name": "memory"}]},
                        },
                    ],
                }
            ],
        }
    )
    nodes, bound, pending = cluster(61, 130)
    runs = []
    for fast in (True, False):
        rec = _Recorder()
        s = EmbeddedScheduler(rec, config=config, rng=random.Random(61), fast=fast)
        for n in nodes:
            s.on_node_add(n)
        for p in bound:
            s.on_pod_add(p)
        out = []
        for pod in pending:
            r = s.schedule_now(pod)
            if r.node:
                s.on_pod_update(pod, r.pod)
            out.append((r.result, r.node, r.message))
        runs.append((out, rec.bound, s))
    (a, a_bound, fs), (b, b_bound, _) = runs
    assert a == b
    assert a_bound == b_bound
    stats = fs.scheduler.fast.stats
    assert stats["mismatch"] == 0
    assert stats["errors"] == 0
    if strategy == "RequestedToCapacityRatio":
        assert stats["fast_score"] == 0
        assert stats["plain_score"] > 0
    else:
        assert stats["fast_score"] > 0


def test_every_node_feasible_prefix_is_a_slice_and_wraps(monkeypatch: pytest.MonkeyPatch) -> None:
    """When every row passes, the evaluated prefix is the next numFeasibleNodesToFind nodes
    from the start index, wrapping at the end (a slice, not a gather of ~500 rows at 5,000
    nodes: issue 23 item 7): the same nodes, scores and next index as the plugins' path."""
    import pysched.scheduler as scheduler_mod

    nodes = [sched_decode.node(node_dict(f"n{i:03d}", cpu="64", memory="256Gi"))
             for i in range(260)]  # 124 of 260 to find: the third pod's prefix wraps
    fast, fast_rec = build(nodes, [], True, 7)
    plain, plain_rec = build(nodes, [], False, 7)

    def no_gather(*a: Any) -> Any:
        raise AssertionError("gathered the rows one by one")

    monkeypatch.setattr(scheduler_mod, "_pick", no_gather)
    starts = []
    for k in range(6):
        pod = sched_decode.pod(pod_dict(f"p{k}", cpu="100m"))
        starts.append(fast.scheduler.next_start_node_index)
        a = fast.schedule_now(pod)
        b = plain.schedule_now(pod)
        assert a.feasible == b.feasible
        assert len(a.feasible) == 124
        assert (a.node, a.scores) == (b.node, b.scores)
        assert fast.scheduler.next_start_node_index == plain.scheduler.next_start_node_index
        for s, r in ((fast, a), (plain, b)):
            s.on_pod_update(pod, r.pod)
    assert any(st + 124 > 260 for st in starts)  # a prefix wrapped
    assert fast_rec.bound == plain_rec.bound
