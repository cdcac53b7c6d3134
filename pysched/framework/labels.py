"""Label and node selectors compiled once, matched many times.

Label selectors are the ground floor's (pykubelet.api.machinery.labels: apimachinery's
labels.Selector and LabelSelectorAsSelector), read here from pysched's objects; node
selectors mirror component-helpers/scheduling/corev1/nodeaffinity (NodeSelector,
RequiredNodeAffinity, PreferredSchedulingTerms) over the same requirements.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pykubelet.api.machinery import labels
from pykubelet.api.machinery.labels import (
    EVERYTHING,
    NOTHING,
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_GT,
    OP_IN,
    OP_LT,
    OP_NOT_IN,
    Matcher,
    RequirementError,
    Selector,
    selector_from_set,
)
from pykubelet.api.machinery.labels import requirement as _requirement
from pykubelet.api.objects import Node
from pykubelet.api.types import (
    LabelSelector,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Taint,
    Toleration,
)

# the ground floor's, as pysched's modules name them
__all__ = [
    "EVERYTHING", "NOTHING", "OP_DOES_NOT_EXIST", "OP_EXISTS", "OP_GT", "OP_IN", "OP_LT",
    "OP_NOT_IN", "CompiledNodeSelector", "Matcher", "PreferredSchedulingTerms",
    "RequiredNodeAffinity", "RequirementError", "Selector", "find_matching_untolerated_taint",
    "label_selector_as_selector", "selector_from_set", "term_error",
    "tolerations_tolerate_taint",
]



def label_selector_as_selector(sel: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: None selects nothing, an empty selector everything
    (the ground floor's one rule, pykubelet.api.machinery.labels)."""
    if sel is None:
        return NOTHING
    return labels.label_selector_as_selector(
        sel.match_labels, ((e.key, e.operator, e.values) for e in sel.match_expressions)
    )


# ---------------------------------------------------------------- node selectors


@dataclass(slots=True)
class _Term:
    labels: Selector | None
    fields: list[tuple[str, str]] | None  # ("In"|"NotIn", value) on metadata.name
    error: str | None = None

    def match(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        if self.labels is not None and not self.labels.matches(node_labels):
            return False
        if self.fields is not None and node_name:
            for op, value in self.fields:
                if op == OP_IN and node_name != value:
                    return False
                if op == OP_NOT_IN and node_name == value:
                    return False
        return True


def _is_empty_term(t: NodeSelectorTerm) -> bool:
    return not t.match_expressions and not t.match_fields


def _compile_term(t: NodeSelectorTerm) -> _Term:
    labels: Selector | None = None
    fields: list[tuple[str, str]] | None = None
    try:
        if t.match_expressions:
            labels = Selector(
                [_requirement(e.key, e.operator, e.values) for e in t.match_expressions]
            )
        if t.match_fields:
            fields = [_field_req(e) for e in t.match_fields]
    except RequirementError as exc:
        return _Term(None, None, str(exc))
    return _Term(labels, fields)


def term_error(t: NodeSelectorTerm) -> str | None:
    """Why a node selector term can never match (an invalid requirement), or None."""
    return _compile_term(t).error


def _field_req(e: NodeSelectorRequirement) -> tuple[str, str]:
    if e.key != "metadata.name":
        raise RequirementError(f"{e.key}: not a supported field selector key (only metadata.name)")
    if e.operator not in (OP_IN, OP_NOT_IN):
        raise RequirementError(f"{e.key}: {e.operator!r} is not a valid field selector operator")
    if len(e.values) != 1:
        raise RequirementError(f"{e.key}: must have one element")
    return e.operator, e.values[0]


class CompiledNodeSelector:
    """nodeaffinity.LazyErrorNodeSelector: terms are ORed; empty terms select nothing.

    A term whose requirements are invalid never matches (upstream reports the
    error and goes on with the other terms).
    """

    __slots__ = ("_terms",)

    def __init__(self, ns: NodeSelector) -> None:
        self._terms = [_compile_term(t) for t in ns.node_selector_terms if not _is_empty_term(t)]

    def match(self, node: Node | None) -> bool:
        if node is None:
            return False
        labels, name = node.metadata.labels, node.metadata.name
        return any(t.error is None and t.match(labels, name) for t in self._terms)

    def errors(self) -> list[str]:
        return [t.error for t in self._terms if t.error]


class RequiredNodeAffinity:
    """nodeaffinity.GetRequiredNodeAffinity: spec.nodeSelector AND required node affinity."""

    __slots__ = ("label_selector", "node_selector")

    def __init__(self, pod: Pod) -> None:
        self.label_selector = (
            selector_from_set(pod.spec.node_selector) if pod.spec.node_selector else None
        )
        aff = pod.spec.affinity
        na = aff.node_affinity if aff is not None else None
        self.node_selector = (
            CompiledNodeSelector(na.required)
            if na is not None and na.required is not None
            else None
        )

    def match(self, node: Node) -> bool:
        if self.label_selector is not None and not self.label_selector.matches(
            node.metadata.labels
        ):
            return False
        if self.node_selector is not None:
            return self.node_selector.match(node)
        return True


class PreferredSchedulingTerms:
    """nodeaffinity.PreferredSchedulingTerms: sum of the weights of matching terms."""

    __slots__ = ("_terms",)

    def __init__(self, terms: Sequence[object]) -> None:
        compiled: list[tuple[int, _Term]] = []
        for t in terms:
            weight = t.weight  # type: ignore[attr-defined]
            pref: NodeSelectorTerm = t.preference  # type: ignore[attr-defined]
            if weight == 0 or _is_empty_term(pref):
                continue
            compiled.append((weight, _compile_term(pref)))
        self._terms = compiled

    def score(self, node: Node) -> int:
        total = 0
        labels, name = node.metadata.labels, node.metadata.name
        for weight, t in self._terms:
            if t.error is None and t.match(labels, name):
                total += weight
        return total

    def __len__(self) -> int:
        return len(self._terms)


# ---------------------------------------------------------------- taints


def tolerations_tolerate_taint(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(t.tolerates_taint(taint) for t in tolerations)


def find_matching_untolerated_taint(
    taints: Sequence[Taint],
    tolerations: Sequence[Toleration],
    inclusion_filter: Callable[[Taint], bool] | None = None,
) -> Taint | None:
    """v1helper.FindMatchingUntoleratedTaint: the first included taint no toleration tolerates."""
    for taint in taints:
        if inclusion_filter is not None and not inclusion_filter(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
