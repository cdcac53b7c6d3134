"""Fuzzed patches and selectors (issue 29 item 3): JSON patches, merge and strategic-merge
patches over a Pod with the Pod's patch metadata, and label/field selectors either apply
or raise the registry's declared errors (PatchError and its kinds, SelectorError), fast."""

from __future__ import annotations

import copy
from typing import Any

from fuzz_strategies import FUZZ, JSON, KEYS, check_message, mutated
from hypothesis import given
from hypothesis import strategies as st

from pykubelet.api.kinds import by_resource
from pykubelet.api.machinery.openapi import PatchMeta
from pykubelet.controlplane.registry.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    apply_patch,
)
from pykubelet.controlplane.registry.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                 "finalizers": ["a/b", "c/d"]},
    "spec": {"containers": [
        {"name": "app", "image": "busybox", "ports": [{"containerPort": 80}],
         "env": [{"name": "A", "value": "1"}]},
        {"name": "side", "image": "busybox", "args": ["x"]}],
        "tolerations": [{"key": "k", "operator": "Exists"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}
PATHS = ["/metadata/labels/app", "/spec/containers/0", "/spec/containers/-",
         "/spec/containers/1/image", "/metadata/finalizers/5", "/status", "", "/",
         "/spec/containers/01", "/a~1b", "/metadata/~2", "/spec/tolerations/0/key"]
OPS = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bad"]),
     "path": st.one_of(st.sampled_from(PATHS), st.text(max_size=12))},
    optional={"value": JSON, "from": st.one_of(st.sampled_from(PATHS), st.text(max_size=8))})
POD_KIND = by_resource("", "pods")


def pod_patch_meta(path: tuple[str, ...]) -> PatchMeta | None:
    """What the registry's Strategy.patch_meta answers for a Pod."""
    try:
        return POD_KIND.patch_meta(*path)
    except (KeyError, TypeError):
        return None


def _apply(patch_type: str, patch: Any) -> None:
    original = copy.deepcopy(POD)
    try:
        apply_patch(patch_type, original, patch, pod_patch_meta)
    except PatchError as exc:
        check_message(exc)
    assert original == POD  # the stored object is never changed in place


@FUZZ
@given(st.one_of(st.lists(st.one_of(OPS, JSON), max_size=5), JSON))
def test_json_patches_apply_or_are_patch_errors(patch: Any) -> None:
    _apply(JSON_PATCH, patch)


PATCH_SEED = {"metadata": {"labels": {"x": "y"}, "$setElementOrder/finalizers": ["c/d"],
                           "$deleteFromPrimitiveList/finalizers": ["a/b"]},
              "spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
                       "containers": [{"name": "app", "image": "nginx",
                                       "$patch": "replace"},
                                      {"name": "side", "$patch": "delete"}],
                       "$retainKeys": ["containers"]}}


@FUZZ
@given(st.one_of(mutated(PATCH_SEED), st.dictionaries(KEYS, JSON, max_size=4)))
def test_strategic_merge_patches_apply_or_are_patch_errors(patch: Any) -> None:
    _apply(STRATEGIC_MERGE_PATCH, patch)


@FUZZ
@given(st.one_of(mutated(PATCH_SEED), JSON))
def test_merge_patches_apply_or_are_patch_errors(patch: Any) -> None:
    _apply(MERGE_PATCH, patch)


SELECTORISH = st.text(alphabet=st.sampled_from(list("ab=!,() inotexs\\.-_/")), max_size=40)


@FUZZ
@given(st.one_of(SELECTORISH, st.text(max_size=40)))
def test_selectors_parse_or_are_selector_errors(text: str) -> None:
    for parse in (parse_label_selector, parse_field_selector):
        try:
            parse(text)
        except SelectorError as exc:
            check_message(exc)
