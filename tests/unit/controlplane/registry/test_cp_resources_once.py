"""Each served resource is declared once: its names and scope by the object model's kind
(pykubelet.api.kinds), what serving adds (short names, verbs, subresources, the key
prefix) by its ResourceInfo, which reads the rest from that kind; strategies take their
kind from there too."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from pykubelet.api import kinds
from pykubelet.controlplane.apiserver import discovery
from pykubelet.controlplane.registry import install
from pykubelet.controlplane.registry.resources import ALL, PODS

REGISTRY = Path(install.__file__).parent


def test_every_resource_is_its_model_kind() -> None:
    for info in ALL:
        assert info.model in kinds.KINDS, info
        assert (info.group, info.version, info.kind, info.resource, info.namespaced) == (
            info.model.group, info.model.version, info.model.kind, info.model.plural,
            info.model.namespaced)


def test_the_model_kind_carries_no_serving_facts() -> None:
    """verbs, short names and subresource_of were declared on the kinds and never read:
    serving facts live in registry/resources.py only."""
    names = {f.name for f in dataclasses.fields(kinds.Kind)}
    assert not names & {"verbs", "short_names", "subresource_of"}


def test_no_strategy_declares_its_kind_again() -> None:
    offenders = []
    for path in sorted(REGISTRY.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == "kind" for t in stmt.targets):
                        offenders.append(f"{path.name}:{node.name}")
    assert offenders == []


def test_every_served_resource_has_one_strategy() -> None:
    assert sorted(s.info.resource for s in map(lambda c: c(), install.STRATEGIES)) == sorted(
        r.resource for r in ALL)


def test_discovery_still_announces_short_names_and_verbs() -> None:
    """What kubectl and pykubectl read from discovery is unchanged."""
    listing = discovery.resource_list("", "v1")
    assert listing is not None
    pods = next(r for r in listing["resources"] if r["name"] == "pods")
    assert pods["shortNames"] == ["po"]
    assert pods["kind"] == "Pod"
    assert pods["namespaced"]
    assert pods["verbs"] == list(PODS.verbs)
