"""ClaimPods and its effects, written once for every workload controller
(pkg/controller/controller_ref_manager.go): :func:`claim_objects` decides which objects an
owner keeps, adopts and releases (pure, tested as tables); :class:`ControllerRefManager`
carries the decision out through the store, after canAdopt's fresh read of the owner.
The ReplicaSet, DaemonSet, StatefulSet and Job controllers claim their pods through it,
the Deployment controller its ReplicaSets and the DaemonSet controller its
ControllerRevisions (ClaimReplicaSets, ClaimControllerRevisions: the same rules)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykubelet.controlplane import errors
from pykubelet.controlplane.controllers.activepods import labels_match, meta
from pykubelet.controlplane.controllers.controller_ref import (
    adopt,
    controller_ref,
    new_controller_ref,
    release,
)
from pykubelet.controlplane.registry.store import GenericStore

Obj = dict[str, Any]
Mutation = Callable[[Obj | None], Obj | None]


@dataclass
class Claim:
    """ClaimPods' outcome: the objects the owner owns after adopting and releasing."""

    owned: list[Obj] = field(default_factory=list)
    adopt: list[Obj] = field(default_factory=list)
    release: list[Obj] = field(default_factory=list)


def claim_objects(owner: Obj, objs: list[Obj], match: Callable[[Obj], bool]) -> Claim:
    """BaseControllerRefManager.ClaimObject over ``objs``: keep the ones the owner
    controls that ``match``, adopt matching orphans (not while the owner or the object is
    being deleted), release the ones it controls that no longer match (not while the
    owner is being deleted)."""
    out = Claim()
    uid = meta(owner).get("uid")
    deleting = bool(meta(owner).get("deletionTimestamp"))
    for obj in objs:
        matches = match(obj)
        ref = controller_ref(obj)
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches:
                out.owned.append(obj)
            elif not deleting:
                out.release.append(obj)
            continue
        if deleting or not matches or meta(obj).get("deletionTimestamp"):
            continue
        out.adopt.append(obj)
        out.owned.append(obj)
    return out


def claim_pods(owner: Obj, pods: list[Obj]) -> Claim:
    """ClaimPods (or ClaimReplicaSets, ClaimControllerRevisions) with the owner's
    ``spec.selector`` as the only filter."""
    selector = (owner.get("spec") or {}).get("selector")
    return claim_objects(owner, pods,
                         lambda pod: labels_match(selector, meta(pod).get("labels") or {}))


def _keep(obj: Obj | None) -> Obj | None:
    return obj


class ControllerRefManager:
    """The claim's writes for one kind of owner over one store of owned objects.

    ``on_adopt``/``on_release`` extend the adopt and release patches (the Job controller
    adds and drops its tracking finalizer with them, as AdoptPod's patch does)."""

    def __init__(self, objects: GenericStore, owners: GenericStore, api_version: str,
                 kind: str, on_adopt: Mutation = _keep, on_release: Mutation = _keep) -> None:
        self.objects = objects
        self.owners = owners
        self.api_version = api_version
        self.kind = kind
        self.on_adopt = on_adopt
        self.on_release = on_release

    def can_adopt(self, owner: Obj) -> bool:
        """canAdoptFunc: a fresh read says it is the same owner, not being deleted."""
        m = meta(owner)
        fresh = self.owners.lookup(m.get("namespace", ""), m.get("name", ""))
        return fresh is not None and meta(fresh.obj()).get("uid") == m.get("uid") and (
            not meta(fresh.obj()).get("deletionTimestamp"))

    async def claim(self, owner: Obj, claim: Claim) -> list[Obj]:
        """Adopt (when :meth:`can_adopt`), then release: the owned objects in the claim's
        order, an adopted one as written, one that could not be adopted left out."""
        adopted: dict[int, Obj | None] = {}
        if claim.adopt and self.can_adopt(owner):
            ref = new_controller_ref(owner, self.api_version, self.kind)
            for obj in claim.adopt:
                adopted[id(obj)] = await self.patch(
                    obj, lambda o: self.on_adopt(adopt(o, dict(ref))))
        elif claim.adopt:
            adopted = {id(obj): None for obj in claim.adopt}
        uid = meta(owner).get("uid")
        for obj in claim.release:
            await self.patch(obj, lambda o: self.on_release(release(o, uid)))
        owned = []
        for obj in claim.owned:
            if id(obj) not in adopted:
                owned.append(obj)
            elif (written := adopted[id(obj)]) is not None:
                owned.append(written)
        return owned

    async def patch(self, obj: Obj, mutate: Callable[[Obj], Obj | None]) -> Obj | None:
        """The object as written, or None when it is gone or no longer what was decided on
        (``mutate`` said so, or the write was refused)."""
        m = meta(obj)
        written: list[Obj] = []

        def apply(cur: Obj) -> Obj | None:
            written.clear()
            out = mutate(cur)
            if out is not None:
                written.append(out)
            return out

        try:
            await self.objects.guaranteed_update(m.get("namespace", ""), m.get("name", ""),
                                                 apply)
        except errors.StatusError as exc:
            if exc.code in (404, 409, 422):
                return None
            raise
        return written[0] if written else None

