"""Alias bombs refused at load, as go-yaml refuses them for kube-apiserver (issue 29 item 3):
a few hundred bytes that expand to millions of nodes, or to an infinite tree."""

from __future__ import annotations

import time

import pytest
import yaml

from pykubelet.api.machinery import yamlalias
from pykubelet.api.machinery.manifest import SyntaxProblem, parse_document, parse_documents

LOADERS = [yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)]


def bomb(levels: int, width: int = 10) -> str:
    """``levels`` anchors, each a list of ``width`` aliases to the one before."""
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("loader", LOADERS)
def test_a_billion_laughs_is_refused_at_once(loader: object) -> None:
    t = time.monotonic()
    with pytest.raises(yamlalias.ExcessiveAliasing,
                       match=r"^yaml: document contains excessive aliasing$"):
        yamlalias.load(bomb(9), loader)  # 10^9 nodes from 300 bytes
    assert time.monotonic() - t < 1


@pytest.mark.parametrize("loader", LOADERS)
def test_a_node_aliased_inside_itself_is_refused(loader: object) -> None:
    with pytest.raises(yamlalias.ExcessiveAliasing, match="anchor value contains itself"):
        yamlalias.load("a: &a [1, *a]\n", loader)
    with pytest.raises(yamlalias.ExcessiveAliasing, match="anchor value contains itself"):
        yamlalias.load("a: &a {k: {j: *a}}\n", loader)


@pytest.mark.parametrize("loader", LOADERS)
def test_ordinary_aliases_still_load(loader: object) -> None:
    text = ("defaults: &d {image: busybox, imagePullPolicy: IfNotPresent}\n"
            "containers: [{<<: *d, name: a}, {<<: *d, name: b}]\n")
    got = yamlalias.load("defaults: &d {image: busybox}\nuse: [*d, *d]\n", loader)
    assert got == {"defaults": {"image": "busybox"}, "use": [{"image": "busybox"}] * 2}
    assert yamlalias.load(text, loader)["containers"][1] == {
        "image": "busybox", "imagePullPolicy": "IfNotPresent", "name": "b"}
    # 3 levels of 10: 1,110 nodes, 1,100 through aliases, under the 99% of small documents
    assert len(yamlalias.load(bomb(3), loader)["a2"]) == 10
    assert list(yamlalias.load_all("a: 1\n---\nb: &x [1]\nc: *x\n", loader)) == [
        {"a": 1}, {"b": [1], "c": [1]}]


def test_the_ratio_is_go_yamls() -> None:
    assert yamlalias.allowed_alias_ratio(1000) == 0.99
    assert yamlalias.allowed_alias_ratio(4_000_000) == 0.10
    assert yamlalias.allowed_alias_ratio(2_200_000) == pytest.approx(0.545)


def test_manifests_refuse_bombs_as_syntax_problems() -> None:
    with pytest.raises(SyntaxProblem, match="excessive aliasing"):
        parse_documents("apiVersion: v1\nkind: List\n---\n" + bomb(9))
    with pytest.raises(SyntaxProblem, match="excessive aliasing"):
        parse_document(bomb(9))
    with pytest.raises(SyntaxProblem, match="contains itself"):
        parse_document("a: &a [*a]\n")
