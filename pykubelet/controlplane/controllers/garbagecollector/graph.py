"""Who owns whom, by uid, for every object of every served resource (upstream's
GraphBuilder: uidToNode, each node's owners and dependents), kept from the watch cache's
events so that finding an owner's dependents never lists anything."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    """Where an object lives (its resource's key prefix, namespace, name) and the uids
    its ownerReferences name."""

    prefix: str
    namespace: str
    name: str
    owners: frozenset[str]


class Graph:
    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self._dependents: dict[str, set[str]] = {}

    def observe(self, uid: str, node: Node) -> frozenset[str]:
        """Record an object's current state; the owners it no longer names."""
        old = self.nodes.get(uid)
        before = old.owners if old is not None else frozenset()
        for owner in before - node.owners:
            self._unlink(owner, uid)
        for owner in node.owners - before:
            self._dependents.setdefault(owner, set()).add(uid)
        self.nodes[uid] = node
        return before - node.owners

    def forget(self, uid: str) -> Node | None:
        """The object is gone: drop it (its dependents stay, now dangling)."""
        node = self.nodes.pop(uid, None)
        if node is not None:
            for owner in node.owners:
                self._unlink(owner, uid)
        return node

    def dependents(self, uid: str) -> set[str]:
        return set(self._dependents.get(uid, ()))

    def _unlink(self, owner: str, uid: str) -> None:
        deps = self._dependents.get(owner)
        if deps is not None:
            deps.discard(uid)
            if not deps:
                del self._dependents[owner]
