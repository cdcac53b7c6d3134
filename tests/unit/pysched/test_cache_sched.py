"""Cache: assume/forget/finish-binding, incremental snapshots, node tree order, image states."""

from __future__ import annotations

import pytest
from engine_objects import make_node, make_pod

from pysched.cache import Cache, CacheError, Snapshot


def _bound(name: str, node: str, cpu: str = "500m", memory: str = "1Gi", **kw):
    return make_pod(name, cpu=cpu, memory=memory, node=node, **kw)


def test_assume_then_confirm_then_remove() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    p = _bound("a", "n1")
    c.assume_pod(p)
    assert c.is_assumed_pod(p)
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 500
    c.finish_binding(p)
    c.add_pod(p)  # the informer confirms
    assert not c.is_assumed_pod(p)
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 500  # counted once
    c.remove_pod(p)
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 0
    assert snap.get("n1").pods == []


def test_forget_undoes_assume() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    p = _bound("a", "n1")
    c.assume_pod(p)
    c.forget_pod(p)
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 0
    assert not c.is_assumed_pod(p)


def test_assume_twice_and_forget_unassumed_are_errors() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    p = _bound("a", "n1")
    c.assume_pod(p)
    with pytest.raises(CacheError, match="can't be assumed"):
        c.assume_pod(p)
    c.add_pod(p)
    with pytest.raises(CacheError, match="wasn't assumed"):
        c.forget_pod(p)


def test_confirm_on_other_node_moves_the_pod() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_node(make_node("n2"))
    c.assume_pod(_bound("a", "n1"))
    c.add_pod(_bound("a", "n2"))
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 0
    assert snap.get("n2").requested.milli_cpu == 500


def test_non_zero_requested_defaults() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_pod(make_pod("best-effort", cpu=None, memory=None, node="n1"))
    snap = Snapshot()
    c.update_snapshot(snap)
    ni = snap.get("n1")
    assert ni.requested.milli_cpu == 0
    assert ni.non_zero_requested.milli_cpu == 100
    assert ni.non_zero_requested.memory == 200 * 1024 * 1024


def test_snapshot_copies_only_dirty_nodes() -> None:
    c = Cache()
    for i in range(5):
        c.add_node(make_node(f"n{i}"))
    snap = Snapshot()
    c.update_snapshot(snap)
    before = {ni.name: ni for ni in snap.list()}
    c.add_pod(_bound("a", "n3"))
    c.update_snapshot(snap)
    after = {ni.name: ni for ni in snap.list()}
    for name in before:
        if name == "n3":
            assert after[name] is not before[name]
        else:
            assert after[name] is before[name]
    assert [ni.name for ni in snap.list()] == ["n0", "n1", "n2", "n3", "n4"]


def test_snapshot_is_isolated_from_later_cache_changes() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    snap = Snapshot()
    c.update_snapshot(snap)
    ni = snap.get("n1")
    c.add_pod(_bound("a", "n1"))
    assert ni.requested.milli_cpu == 0  # the cycle's view does not move under it
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 500


def test_node_tree_interleaves_zones() -> None:
    c = Cache()
    for name, zone in [
        ("a1", "a"),
        ("a2", "a"),
        ("b1", "b"),
        ("a3", "a"),
        ("b2", "b"),
        ("c1", "c"),
    ]:
        c.add_node(make_node(name, labels={"topology.kubernetes.io/zone": zone}))
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.list()] == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_remove_node_with_pods_keeps_pods_until_deleted() -> None:
    c = Cache()
    n = make_node("n1")
    c.add_node(n)
    c.add_node(make_node("n2"))
    p = _bound("a", "n1")
    c.add_pod(p)
    c.remove_node(n)
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.list()] == ["n2"]
    c.remove_pod(p)
    assert "n1" not in c.dump()


def test_update_node_changes_allocatable_in_next_snapshot() -> None:
    c = Cache()
    old = make_node("n1", cpu="2")
    c.add_node(old)
    snap = Snapshot()
    c.update_snapshot(snap)
    c.update_node(old, make_node("n1", cpu="8"))
    c.update_snapshot(snap)
    assert snap.get("n1").allocatable.milli_cpu == 8000


def test_image_states_count_nodes() -> None:
    c = Cache()
    c.add_node(make_node("n1", images=[("nginx:1.25", 100_000_000)]))
    c.add_node(make_node("n2", images=[("nginx:1.25", 100_000_000), ("redis", 50)]))
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.get("n1").image_states["nginx:1.25"].num_nodes == 2
    assert snap.get("n2").image_states["redis:latest"].num_nodes == 1
    c.remove_node(make_node("n2", images=[("nginx:1.25", 100_000_000), ("redis", 50)]))
    c.update_snapshot(snap)
    assert snap.get("n1").image_states["nginx:1.25"].num_nodes == 1


def test_affinity_lists_follow_pods() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_node(make_node("n2"))
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    p = _bound("a", "n2", affinity=anti, labels={"app": "x"})
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.have_pods_with_required_anti_affinity_list() == []
    c.add_pod(p)
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()] == ["n2"]
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == ["n2"]
    c.add_pod(_bound("b", "n2"))
    c.update_snapshot(snap)
    assert snap.have_pods_with_affinity_list()[0] is snap.get("n2")
    c.remove_pod(p)
    c.update_snapshot(snap)
    assert snap.have_pods_with_affinity_list() == []


def test_assumed_pod_expiry_with_ttl() -> None:
    now = [100.0]
    c = Cache(assumed_pod_ttl=30, clock=lambda: now[0])
    c.add_node(make_node("n1"))
    p = _bound("a", "n1")
    c.assume_pod(p)
    assert c.cleanup_assumed_pods(1000) == []  # binding not finished: never expires
    c.finish_binding(p)
    assert c.cleanup_assumed_pods(120) == []
    assert [x.metadata.name for x in c.cleanup_assumed_pods(131)] == ["a"]
    assert c.get_pod(p) is None


def test_add_and_update_node_replace_its_image_states_and_return_its_info() -> None:
    """AddNode and UpdateNode alike: the node's old images are dropped, the new ones counted,
    the returned NodeInfo is a copy holding the new node; an update of an unknown node adds it."""
    c = Cache()
    n1 = make_node("n1", images=[("nginx:1.25", 100)])
    info = c.add_node(n1)
    assert info.node is n1
    assert set(info.image_states) == {"nginx:1.25"}
    c.add_node(make_node("n2", images=[("nginx:1.25", 100)]))
    info = c.update_node(n1, make_node("n1", images=[("redis", 50)]))
    assert set(info.image_states) == {"redis:latest"}
    info.image_states.clear()  # a copy: the cache's own is untouched
    again = c.add_node(make_node("n1", images=[("redis", 50), ("busybox", 5)]))
    assert set(again.image_states) == {"redis:latest", "busybox:latest"}
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.get("n2").image_states["nginx:1.25"].num_nodes == 1
    assert snap.get("n1").image_states["redis:latest"].num_nodes == 1
    added = c.update_node(None, make_node("n3", images=[("redis", 50)]))
    assert added.node is not None
    assert added.node.metadata.name == "n3"
    c.update_snapshot(snap)
    assert sorted(ni.name for ni in snap.node_info_list) == ["n1", "n2", "n3"]
    assert snap.get("n3").image_states["redis:latest"].num_nodes == 2
