"""pkg/controller/history's pure parts as tables (names, hashes, equality, order) and
realHistory over the registry's ControllerRevision store (create with collisions, list,
renumber, adopt, release, delete)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from registry_fixture import memory_registry

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers import history as h
from pykubelet.controlplane.registry.resources import CONTROLLER_REVISIONS
from pykubelet.controlplane.registry.store import Context

NS = "default"
PARENT = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "web", "namespace": NS, "uid": "uid-web"}}
SELECTOR = {"matchLabels": {"app": "web"}}


@pytest.mark.parametrize(("fn", "data", "want"), [
    (h.fnv32, b"", 0x811C9DC5),
    (h.fnv32, b"a", 0x050C5D7E),
    (h.fnv32, b"foobar", 0x31F0B262),
    (h.fnv32a, b"", 0x811C9DC5),
    (h.fnv32a, b"a", 0xE40C292C),
    (h.fnv32a, b"foobar", 0xBF9CF968),
])
def test_fnv_vectors(fn: Callable[[bytes], int], data: bytes, want: int) -> None:
    assert fn(data) == want


def test_safe_encode_string_maps_digits_into_the_alphabet() -> None:
    assert h.safe_encode_string("0123456789") == "456789bcdf"


def test_go_json_is_sorted_compact_and_html_escaped() -> None:
    assert h.go_json({"b": [1, "<&>"], "a": {"z": None, "y": True}}) == (
        b'{"a":{"y":true,"z":null},"b":[1,"\\u003c\\u0026\\u003e"]}')


def test_hash_controller_revision_is_fnv1_of_the_data_then_the_probe() -> None:
    cr = {"data": {"spec": {"template": {"$patch": "replace"}}}}
    raw = b'{"spec":{"template":{"$patch":"replace"}}}'
    assert h.hash_controller_revision(cr, None) == h.safe_encode_string(str(h.fnv32(raw)))
    assert h.hash_controller_revision(cr, 1) == h.safe_encode_string(str(h.fnv32(raw + b"1")))
    assert h.hash_controller_revision(cr, 1) != h.hash_controller_revision(cr, None)
    assert h.hash_controller_revision({"data": {"x": 2}}, None) != (
        h.hash_controller_revision(cr, None))


def test_compute_hash_adds_the_collision_count_as_eight_bytes() -> None:
    t = {"metadata": {"labels": {"app": "web"}}}
    raw = h.go_json(t)
    assert h.compute_hash(t, None) == h.safe_encode_string(str(h.fnv32a(raw)))
    assert h.compute_hash(t, 2) == h.safe_encode_string(
        str(h.fnv32a(raw + b"\x02\x00\x00\x00\x00\x00\x00\x00")))


def test_controller_revision_name_cuts_the_prefix_at_223() -> None:
    assert h.controller_revision_name("web", "abc") == "web-abc"
    name = h.controller_revision_name("x" * 300, "abcdefghij")
    assert name == "x" * 223 + "-abcdefghij"
    assert len(name) == 234


def test_new_controller_revision() -> None:
    cr = h.new_controller_revision(PARENT, "apps/v1", "DaemonSet", {"app": "web"},
                                   {"spec": {"x": 1}}, 3, None)
    hash_ = h.hash_controller_revision(cr, None)
    assert cr["metadata"]["name"] == f"web-{hash_}"
    assert cr["metadata"]["labels"] == {"app": "web", h.CONTROLLER_REVISION_HASH_LABEL: hash_}
    assert cr["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web", "uid": "uid-web",
         "controller": True, "blockOwnerDeletion": True}]
    assert (cr["revision"], cr["data"]) == (3, {"spec": {"x": 1}})


def _cr(name: str, revision: int, data: Any = None, ts: str = "2026-01-01T00:00:00Z",
        hash_: str | None = None) -> dict[str, Any]:
    labels = {h.CONTROLLER_REVISION_HASH_LABEL: hash_} if hash_ is not None else {}
    return {"metadata": {"name": name, "creationTimestamp": ts, "labels": labels},
            "revision": revision, "data": data if data is not None else {"n": name}}


@pytest.mark.parametrize(("lhs", "rhs", "want"), [
    (None, None, True),
    (None, _cr("a", 1), False),
    (_cr("a", 1), None, False),
    (_cr("a", 1, {"x": 1}), _cr("b", 2, {"x": 1}), True),
    (_cr("a", 1, {"x": 1}), _cr("b", 2, {"x": 2}), False),
    # hash labels that parse as numbers and differ decide at once
    (_cr("a", 1, {"x": 1}, hash_="12"), _cr("b", 1, {"x": 1}, hash_="13"), False),
    # safe-encoded hashes do not parse: the data decides
    (_cr("a", 1, {"x": 1}, hash_="5b4"), _cr("b", 1, {"x": 1}, hash_="6c7"), True),
])
def test_equal_revision(lhs: Any, rhs: Any, want: bool) -> None:
    assert h.equal_revision(lhs, rhs) is want


def test_find_equal_revisions_keeps_order() -> None:
    revs = [_cr("a", 3, {"x": 1}), _cr("b", 1, {"x": 2}), _cr("c", 2, {"x": 1})]
    assert [r["metadata"]["name"] for r in h.find_equal_revisions(revs, _cr("n", 9, {"x": 1}))
            ] == ["a", "c"]


def test_sort_controller_revisions_by_revision_then_time_then_name() -> None:
    revs = [_cr("d", 2, ts="2026-01-01T00:00:02Z"), _cr("c", 2, ts="2026-01-01T00:00:01Z"),
            _cr("b", 1), _cr("a", 1), _cr("e", 0)]
    assert [r["metadata"]["name"] for r in h.sort_controller_revisions(revs)] == [
        "e", "a", "b", "c", "d"]
    assert h.max_revision(revs) == 2
    assert h.max_revision([]) == 0


def _run(test: Callable[[h.History], Awaitable[None]]) -> None:
    async def main() -> None:
        async with memory_registry() as reg:
            await test(h.History(reg.store(CONTROLLER_REVISIONS)))

    asyncio.run(main())


def _names(revs: list[dict[str, Any]]) -> list[str]:
    return sorted(r["metadata"]["name"] for r in revs)


def test_history_creates_lists_and_renumbers() -> None:
    async def test(hist: h.History) -> None:
        cr = h.new_controller_revision(PARENT, "apps/v1", "DaemonSet", {"app": "web"},
                                       {"v": 1}, 1, None)
        created, count = await hist.create_controller_revision(PARENT, cr, 0)
        assert count == 0
        assert created["metadata"]["uid"]
        assert created["metadata"]["name"] == "web-" + h.hash_controller_revision(cr, 0)
        # the same data again: the existing revision, no collision
        again, count = await hist.create_controller_revision(PARENT, cr, 0)
        assert (again["metadata"]["uid"], count) == (created["metadata"]["uid"], 0)
        renumbered = await hist.update_controller_revision(created, 5)
        assert renumbered["revision"] == 5
        # another parent's revision and one the selector does not pick are not listed
        other = {"metadata": {"name": "other", "namespace": NS, "uid": "uid-other"}}
        theirs = h.new_controller_revision(other, "apps/v1", "DaemonSet", {"app": "web"},
                                           {"v": 9}, 1, None)
        await hist.create_controller_revision(other, theirs, 0)
        unlabelled = h.new_controller_revision(PARENT, "apps/v1", "DaemonSet", {"app": "x"},
                                               {"v": 2}, 2, None)
        await hist.create_controller_revision(PARENT, unlabelled, 0)
        assert _names(hist.list_controller_revisions(PARENT, SELECTOR)) == [
            created["metadata"]["name"]]
        await hist.delete_controller_revision(renumbered)
        assert hist.list_controller_revisions(PARENT, SELECTOR) == []

    _run(test)


def test_history_create_bumps_the_collision_count_past_a_taken_name() -> None:
    async def test(hist: h.History) -> None:
        cr = h.new_controller_revision(PARENT, "apps/v1", "DaemonSet", {"app": "web"},
                                       {"v": 1}, 1, None)
        squatter = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                    "metadata": {"name": "web-" + h.hash_controller_revision(cr, 0),
                                 "labels": {"app": "web"}},
                    "data": {"someone": "else"}, "revision": 1}
        await hist.store.create(Context(), NS, squatter)
        created, count = await hist.create_controller_revision(PARENT, cr, 0)
        assert count == 1
        assert created["metadata"]["name"] == "web-" + h.hash_controller_revision(cr, 1)
        assert created["data"] == {"v": 1}

    _run(test)


def test_history_adopts_and_releases() -> None:
    async def test(hist: h.History) -> None:
        orphan = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                  "metadata": {"name": "web-orphan", "labels": {"app": "web"}},
                  "data": {"v": 1}, "revision": 1}
        stored = (await hist.store.create(Context(), NS, orphan)).obj()  # type: ignore[union-attr]
        assert _names(hist.list_controller_revisions(PARENT, SELECTOR)) == ["web-orphan"]
        adopted = await hist.adopt_controller_revision(PARENT, "apps/v1", "DaemonSet", stored)
        ref = adopted["metadata"]["ownerReferences"][0]
        assert (ref["uid"], ref["controller"], ref["kind"]) == ("uid-web", True, "DaemonSet")
        with pytest.raises(errors.StatusError, match="attempt to adopt revision owned by"):
            await hist.adopt_controller_revision(PARENT, "apps/v1", "DaemonSet", adopted)
        released = await hist.release_controller_revision(PARENT, adopted)
        assert released is not None
        assert "ownerReferences" not in released["metadata"]
        gone = dict(released, metadata=dict(released["metadata"], name="no-such"))
        assert await hist.release_controller_revision(PARENT, gone) is None

    _run(test)
