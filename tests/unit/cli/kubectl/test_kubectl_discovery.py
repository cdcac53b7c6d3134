"""Resource words resolve as kubectl's RESTMapper and shortcut expander resolve them."""

from __future__ import annotations

from pykubelet.cli.kubectl.discovery import Mapping, _host_port, _match

PODS = Mapping("", "v1", "pods", "Pod", True, "pod", ("po",), ("all",))
NODES = Mapping("", "v1", "nodes", "Node", False, "node", ("no",))
PDBS = Mapping("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
               "poddisruptionbudget", ("pdb",))
ALL = [PODS, NODES, PDBS]


def test_plural_singular_short_and_kind_names() -> None:
    for word in ("pods", "pod", "po", "Pod", "PODS"):
        assert _match(ALL, word) == [PODS]
    assert _match(ALL, "pdb") == [PDBS]
    assert _match(ALL, "pdb.policy") == [PDBS]
    assert _match(ALL, "poddisruptionbudgets.v1.policy") == [PDBS]
    assert _match(ALL, "pods.v1") == [PODS]


def test_categories_and_unknown_words() -> None:
    assert _match(ALL, "all") == [PODS]
    assert _match(ALL, "widgets") == []
    assert _match(ALL, "pdb.apps") == []


def test_kind_strings_and_cache_dirs() -> None:
    assert PDBS.kind_string == "poddisruptionbudget.policy"
    assert PODS.kind_string == "pod"
    assert PDBS.resource_string == "poddisruptionbudgets.policy"
    assert _host_port("https://127.0.0.1:6443") == "127.0.0.1_6443"
