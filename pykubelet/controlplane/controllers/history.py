"""A controller's history as ControllerRevisions (pkg/controller/history): the DaemonSet and
StatefulSet controllers snapshot each pod template they roll out into a ControllerRevision
they own, numbered by ``revision``, so a rollout can tell current pods from old ones and
``kubectl rollout history/undo`` can list and restore them.

The pure half names and hashes revisions and compares them (ControllerRevisionName,
HashControllerRevision, NewControllerRevision, EqualRevision, FindEqualRevisions,
SortControllerRevisions, and pkg/controller's ComputeHash, which names DaemonSet
revisions). :class:`History` is realHistory: it lists, creates, renumbers, deletes,
adopts and releases revisions through the registry's store the other controllers write
through (``registry.store(CONTROLLER_REVISIONS)``), reading from its watch cache.

Objects are the API's JSON dicts. A revision's ``data`` is kept as the JSON value it is;
where Go hashes ``Data.Raw`` (the bytes of that JSON), we hash :func:`go_json` of it, the
bytes Go's json.Marshal writes for a decoded map (sorted keys, no spaces), which is what
the controllers created it from.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.activepods import labels_match
from pykubelet.controlplane.controllers.controller_ref import (
    adopt,
    controller_ref,
    new_controller_ref,
    release,
)
from pykubelet.controlplane.registry.store import Context, DeleteOptions, Entry, GenericStore

Obj = dict[str, Any]

# ControllerRevisionHashLabel: the label holding the hash of a revision's data
CONTROLLER_REVISION_HASH_LABEL = "controller.kubernetes.io/hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand's alphanums
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_MASK = 0xFFFFFFFF


# ---------------------------------------------------------------------------- hashing


def fnv32(data: bytes) -> int:
    """hash/fnv's New32 (FNV-1: multiply, then xor)."""
    h = _FNV_OFFSET
    for b in data:
        h = ((h * _FNV_PRIME) & _MASK) ^ b
    return h


def fnv32a(data: bytes) -> int:
    """hash/fnv's New32a (FNV-1a: xor, then multiply)."""
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return h


def safe_encode_string(text: str) -> str:
    """rand.SafeEncodeString: each character mapped into an alphabet with no vowels (no
    words) and no look-alikes, so a hash is safe in a name."""
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in text)


def go_json(value: Any) -> bytes:
    """What Go's json.Marshal writes for a decoded JSON value: object keys sorted, no
    spaces, <, > and & escaped as \\u003c, \\u003e, \\u0026."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode())


def hash_controller_revision(revision: Obj, probe: int | None) -> str:
    """HashControllerRevision: FNV-1 of the revision's data, then of the probe (the
    collision count) in decimal, safe-encoded."""
    data = revision.get("data")
    raw = go_json(data) if data is not None else b""
    if probe is not None:
        raw += str(probe).encode()
    return safe_encode_string(str(fnv32(raw)))


def compute_hash(template: Obj, collision_count: int | None) -> str:
    """pkg/controller's ComputeHash: FNV-1a of a pod template, then of the collision
    count as a little-endian uint32 in 8 bytes, safe-encoded (the DaemonSet controller's
    revision names and controller-revision-hash labels). Upstream hashes Go's printed
    struct; we hash its JSON, so values differ from a real cluster's, the shape does not."""
    raw = go_json(template)
    if collision_count is not None:
        raw += (collision_count & _MASK).to_bytes(4, "little") + bytes(4)
    return safe_encode_string(str(fnv32a(raw)))


# ---------------------------------------------------------------------------- revisions


def controller_revision_name(prefix: str, hash_: str) -> str:
    """ControllerRevisionName: ``prefix-hash``, the prefix cut to 223 bytes so the name
    fits 253."""
    return f"{prefix[:223]}-{hash_}"


def new_controller_revision(parent: Obj, api_version: str, kind: str,
                            template_labels: Mapping[str, str], data: Any, revision: int,
                            collision_count: int | None) -> Obj:
    """NewControllerRevision: owned by ``parent`` (of ``kind``), labelled as its template
    plus the hash label, named after the parent and the hash of ``data``."""
    pmeta = parent.get("metadata") or {}
    labels = dict(template_labels)
    cr: Obj = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
               "metadata": {"namespace": pmeta.get("namespace", ""), "labels": labels,
                            "ownerReferences": [new_controller_ref(parent, api_version, kind)]},
               "data": copy.deepcopy(data), "revision": revision}
    hash_ = hash_controller_revision(cr, collision_count)
    cr["metadata"]["name"] = controller_revision_name(pmeta.get("name", ""), hash_)
    labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return cr


def _hash_label(cr: Obj) -> int | None:
    text = ((cr.get("metadata") or {}).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
    if text is None:
        return None
    try:  # strconv.ParseInt(hs, 10, 32): a safe-encoded hash rarely parses; then data decides
        value = int(text, 10)
    except ValueError:
        return None
    return value & _MASK if -(2**31) <= value < 2**31 else None


def equal_revision(lhs: Obj | None, rhs: Obj | None) -> bool:
    """EqualRevision: both None, or the same data (two parseable hash labels that differ
    say no at once)."""
    if lhs is None or rhs is None:
        return lhs is rhs
    lh, rh = _hash_label(lhs), _hash_label(rhs)
    if lh is not None and rh is not None and lh != rh:
        return False
    return bool(lhs.get("data") == rhs.get("data"))


def find_equal_revisions(revisions: list[Obj], needle: Obj) -> list[Obj]:
    """FindEqualRevisions: the revisions equal to ``needle``, in their order."""
    return [r for r in revisions if equal_revision(r, needle)]


def _revision_key(cr: Obj) -> tuple[int, str, str]:
    meta = cr.get("metadata") or {}
    return (int(cr.get("revision", 0)), meta.get("creationTimestamp", ""), meta.get("name", ""))


def sort_controller_revisions(revisions: list[Obj]) -> list[Obj]:
    """SortControllerRevisions: by revision, ties by creation time, then name (stable)."""
    return sorted(revisions, key=_revision_key)


def max_revision(revisions: list[Obj]) -> int:
    """The highest revision number of ``revisions`` (0 for none)."""
    return max((int(r.get("revision", 0)) for r in revisions), default=0)


# ---------------------------------------------------------------------------- realHistory


def _obj(result: Entry | Obj) -> Obj:
    return result.obj() if isinstance(result, Entry) else result


class History:
    """realHistory over the registry's ControllerRevision store (reads from its watch
    cache, writes through the store as every controller here does)."""

    def __init__(self, store: GenericStore) -> None:
        self.store = store

    def list_controller_revisions(self, parent: Obj, selector: Obj | None) -> list[Obj]:
        """ListControllerRevisions: the namespace's revisions ``selector`` picks that
        ``parent`` controls or no controller does."""
        pmeta = parent.get("metadata") or {}
        uid = pmeta.get("uid")
        out = []
        for entry in self.store.select(pmeta.get("namespace", ""), None):
            cr = entry.obj()
            if not labels_match(selector, (cr.get("metadata") or {}).get("labels") or {}):
                continue
            ref = controller_ref(cr)
            if ref is None or ref.get("uid") == uid:
                out.append(cr)
        return out

    async def create_controller_revision(self, parent: Obj, revision: Obj,
                                         collision_count: int) -> tuple[Obj, int]:
        """CreateControllerRevision: create ``revision`` named after the parent and the
        hash of its data and ``collision_count``; a name taken by other data raises the
        count and tries again. Returns the revision (created, or the equal one found under
        that name) and the collision count, raised as often as names collided."""
        pmeta = parent.get("metadata") or {}
        ns = pmeta.get("namespace", "")
        while True:
            clone = copy.deepcopy(revision)
            hash_ = hash_controller_revision(revision, collision_count)
            clone.setdefault("metadata", {})["name"] = controller_revision_name(
                pmeta.get("name", ""), hash_)
            clone["metadata"]["namespace"] = ns
            try:
                created = await self.store.create(Context(), ns, clone)
            except errors.StatusError as exc:
                if exc.code != 409 or exc.reason != errors.ALREADY_EXISTS:
                    raise
                existing = self.store.lookup(ns, clone["metadata"]["name"])
                if existing is not None and existing.obj().get("data") == clone.get("data"):
                    return existing.obj(), collision_count
                collision_count += 1
                continue
            return _obj(created), collision_count

    async def update_controller_revision(self, revision: Obj, new_revision: int) -> Obj:
        """UpdateControllerRevision: set ``revision`` to ``new_revision`` (retried on
        conflict, as the store's guaranteed update does)."""
        meta = revision.get("metadata") or {}

        def renumber(cur: Obj) -> Obj | None:
            if cur.get("revision") == new_revision:
                return None
            cur["revision"] = new_revision
            return cur

        return _obj(await self.store.guaranteed_update(meta.get("namespace", ""),
                                                       meta.get("name", ""), renumber))

    async def delete_controller_revision(self, revision: Obj) -> None:
        """DeleteControllerRevision."""
        meta = revision.get("metadata") or {}
        await self.store.delete(Context(), meta.get("namespace", ""), meta.get("name", ""),
                                DeleteOptions())

    async def adopt_controller_revision(self, parent: Obj, api_version: str, kind: str,
                                        revision: Obj) -> Obj:
        """AdoptControllerRevision: make ``parent`` the revision's controller; an error
        when another controller owns it (or it changed identity meanwhile)."""
        if (owner := controller_ref(revision)) is not None:
            raise errors.internal(f"attempt to adopt revision owned by {owner}")
        return await self._patch(revision, lambda cur: adopt(
            cur, new_controller_ref(parent, api_version, kind)))

    async def release_controller_revision(self, parent: Obj, revision: Obj) -> Obj | None:
        """ReleaseControllerRevision: drop ``parent``'s references; a revision gone or no
        longer ``parent``'s is not an error (None)."""
        uid = (parent.get("metadata") or {}).get("uid")
        try:
            return await self._patch(revision, lambda cur: release(cur, uid))
        except errors.StatusError as exc:
            if exc.code in (404, 422):
                return None
            raise

    async def _patch(self, revision: Obj, mutate: Callable[[Obj], Obj | None]) -> Obj:
        meta = revision.get("metadata") or {}
        uid = meta.get("uid")

        def guarded(cur: Obj) -> Obj | None:
            if uid and (cur.get("metadata") or {}).get("uid") != uid:
                raise errors.conflict("controllerrevisions", "apps", meta.get("name", ""),
                                      "the object has been replaced")
            return mutate(cur)

        return _obj(await self.store.guaranteed_update(meta.get("namespace", ""),
                                                       meta.get("name", ""), guarded))
