"""The labels a node may set on its own Node (NodeRestriction's rule, k8s.io/kubelet's
list), which the agent registers with and the control plane enforces."""

from __future__ import annotations

import pytest

from pykubelet.api.node_labels import forbidden, modified, node_may_set


@pytest.mark.parametrize(("key", "allowed"), [
    ("kubernetes.io/hostname", True),
    ("kubernetes.io/os", True),
    ("beta.kubernetes.io/arch", True),
    ("topology.kubernetes.io/zone", True),
    ("node.kubernetes.io/instance-type", True),
    ("node.kubernetes.io/anything", True),
    ("foo.kubelet.kubernetes.io/x", True),
    ("example.com/team", True),
    ("plain", True),
    ("node-role.kubernetes.io/control-plane", False),
    ("kubernetes.io/role", False),
    ("k8s.io/x", False),
    ("sub.k8s.io/x", False),
    ("node-restriction.kubernetes.io/pool", False),
    ("a.node-restriction.kubernetes.io/pool", False),
])
def test_which_labels_a_node_may_set(key: str, allowed: bool) -> None:
    assert node_may_set(key) is allowed


def test_modified_labels_are_added_changed_and_removed_ones() -> None:
    assert modified({"a": "1", "b": "2", "c": ""}, {"a": "1", "b": "3", "d": ""}) == {
        "b", "c", "d"}
    assert forbidden({"node-role.kubernetes.io/x", "example.com/y", "k8s.io/a"}) == [
        "k8s.io/a", "node-role.kubernetes.io/x"]
