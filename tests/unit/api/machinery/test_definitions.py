"""definitions.json is what scripts/gen_k8s_definitions.py writes from upstream's schema."""

from __future__ import annotations

from pathlib import Path

import module_by_path

from pykubelet.api.machinery.codec import definitions

REPO = Path(__file__).resolve().parents[4]


def _generator():  # scripts/ is no package: load the script by path
    return module_by_path.load("gen_k8s_definitions",
                               REPO / "scripts" / "gen_k8s_definitions.py")


def test_committed_definitions_are_current() -> None:
    gen = _generator()
    text = gen.render(gen.build(gen.source_definitions()))
    assert gen.OUT.read_text() == text, "stale: run scripts/gen_k8s_definitions.py"


def test_every_served_kind_is_defined_with_its_group_version_kind() -> None:
    defs = definitions()
    for name, gvk in [
        ("io.k8s.api.core.v1.Pod", {"group": "", "version": "v1", "kind": "Pod"}),
        ("io.k8s.api.coordination.v1.Lease",
         {"group": "coordination.k8s.io", "version": "v1", "kind": "Lease"}),
        ("io.k8s.api.policy.v1.Eviction", {"group": "policy", "version": "v1", "kind": "Eviction"}),
    ]:
        assert gvk in defs[name]["x-kubernetes-group-version-kind"]
    containers = defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
