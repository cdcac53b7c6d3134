"""Label and node selectors compiled once, matched many times.

Mirrors apimachinery labels.Selector (LabelSelectorAsSelector) and
component-helpers/scheduling/corev1/nodeaffinity (NodeSelector,
RequiredNodeAffinity, PreferredSchedulingTerms).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pysched.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Taint,
    Toleration,
)

Matcher = Callable[[Mapping[str, str]], bool]

# Selector operators (metav1.LabelSelectorOperator, v1.NodeSelectorOperator).
OP_IN = "In"
OP_NOT_IN = "NotIn"
OP_EXISTS = "Exists"
OP_DOES_NOT_EXIST = "DoesNotExist"
OP_GT = "Gt"
OP_LT = "Lt"


class RequirementError(ValueError):
    """An invalid selector requirement (In with no values, an unknown operator), refused as
    labels.NewRequirement and nodeaffinity refuse it. Not the API server's SelectorError,
    which is a selector string that does not parse."""


def _requirement(key: str, op: str, values: Sequence[str]) -> Matcher:
    if op == OP_IN:
        if not values:
            raise RequirementError(f"{key}: for 'in', 'notin' operators, values set can't be empty")
        vs = frozenset(values)
        return lambda labels: labels.get(key) in vs if key in labels else False
    if op == OP_NOT_IN:
        if not values:
            raise RequirementError(f"{key}: for 'in', 'notin' operators, values set can't be empty")
        vs = frozenset(values)
        return lambda labels: key not in labels or labels[key] not in vs
    if op == OP_EXISTS:
        if values:
            raise RequirementError(f"{key}: values set must be empty for exists and does not exist")
        return lambda labels: key in labels
    if op == OP_DOES_NOT_EXIST:
        if values:
            raise RequirementError(f"{key}: values set must be empty for exists and does not exist")
        return lambda labels: key not in labels
    if op in (OP_GT, OP_LT):
        if len(values) != 1:
            raise RequirementError(
                f"{key}: for 'Gt', 'Lt' operators, exactly one value is required")
        try:
            bound = int(values[0])
        except ValueError:
            raise RequirementError(
                f"{key}: for 'Gt', 'Lt' operators, the value must be an integer"
            ) from None

        def cmp(labels: Mapping[str, str]) -> bool:
            v = labels.get(key)
            if v is None:
                return False
            try:
                n = int(v)
            except ValueError:
                return False
            return n > bound if op == OP_GT else n < bound

        return cmp
    raise RequirementError(f"{key}: {op!r} is not a valid selector operator")


def _everything(_: Mapping[str, str]) -> bool:
    return True


def _nothing(_: Mapping[str, str]) -> bool:
    return False


class Selector:
    """labels.Selector: all requirements must hold. `EVERYTHING` / `NOTHING` are the edge cases."""

    __slots__ = ("_reqs", "empty", "nothing")

    def __init__(self, reqs: list[Matcher], *, nothing: bool = False) -> None:
        self._reqs = reqs
        self.nothing = nothing
        self.empty = not reqs and not nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r(labels) for r in self._reqs)


EVERYTHING = Selector([])
NOTHING = Selector([], nothing=True)


def label_selector_as_selector(sel: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: None selects nothing, an empty selector everything."""
    if sel is None:
        return NOTHING
    if not sel.match_labels and not sel.match_expressions:
        return EVERYTHING
    reqs: list[Matcher] = []
    for k, v in sel.match_labels.items():
        reqs.append(_requirement(k, OP_IN, [v]))
    for e in sel.match_expressions:
        reqs.append(_label_req(e))
    return Selector(reqs)


def _label_req(e: LabelSelectorRequirement) -> Matcher:
    return _requirement(e.key, e.operator, e.values)


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """labels.SelectorFromSet: every key=value must be present (empty set: everything)."""
    if not labels:
        return EVERYTHING
    items = tuple(labels.items())

    def matches_all(lb: Mapping[str, str]) -> bool:
        return all(lb.get(k) == v and k in lb for k, v in items)

    return Selector([matches_all])


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
