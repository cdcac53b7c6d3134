"""Label selectors matched by one rule (apimachinery's labels and metav1.LabelSelectorAsSelector).

A requirement is compiled once into a matcher and matched many times: the scheduler matches
the same selectors against thousands of pods and nodes, the API server a request's
``labelSelector`` against every object it lists or watches, the disruption controller and
the eviction subresource a PodDisruptionBudget's selector against pods. All of them build
their requirements here, so ``!=`` and ``notin`` match an object without the key everywhere,
``Gt``/``Lt`` compare integers everywhere, and so on.

Operators are accepted in both upstream spellings: the selection operators of a parsed
selector string (``in``, ``notin``, ``exists``, ``!``, ``=``, ``==``, ``!=``, ``gt``, ``lt``)
and the API's (metav1.LabelSelectorOperator ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``;
v1.NodeSelectorOperator adds ``Gt``, ``Lt``). An invalid requirement (``In`` with no value,
an unknown operator) is a RequirementError, as labels.NewRequirement refuses it. Standard
library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

Matcher = Callable[[Mapping[str, str]], bool]

# metav1.LabelSelectorOperator and v1.NodeSelectorOperator
OP_IN = "In"
OP_NOT_IN = "NotIn"
OP_EXISTS = "Exists"
OP_DOES_NOT_EXIST = "DoesNotExist"
OP_GT = "Gt"
OP_LT = "Lt"

# selection.Operator (a parsed selector string) -> the API's spelling of the same rule;
# "=" / "==" and "!=" are In and NotIn of exactly one value
_SELECTION = {
    "in": OP_IN, "notin": OP_NOT_IN, "exists": OP_EXISTS, "!": OP_DOES_NOT_EXIST,
    "gt": OP_GT, "lt": OP_LT,
}
_EXACT = {"=": OP_IN, "==": OP_IN, "!=": OP_NOT_IN}


class RequirementError(ValueError):
    """An invalid selector requirement (In with no values, an unknown operator), refused as
    labels.NewRequirement and nodeaffinity refuse it. Not the API server's SelectorError,
    which is a selector string that does not parse."""


def requirement(key: str, op: str, values: Sequence[str]) -> Matcher:
    """labels.NewRequirement + Requirement.Matches: the requirement, checked, as a matcher."""
    if op in _EXACT:
        if len(values) != 1:
            raise RequirementError(f"{key}: exact-match compatibility requires one single value")
        op = _EXACT[op]
    op = _SELECTION.get(op, op)
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
        return _compare(key, op, values)
    raise RequirementError(f"{key}: {op!r} is not a valid selector operator")


def _compare(key: str, op: str, values: Sequence[str]) -> Matcher:
    if len(values) != 1:
        raise RequirementError(f"{key}: for 'Gt', 'Lt' operators, exactly one value is required")
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


def label_selector_as_selector(
    match_labels: Mapping[str, str] | None,
    match_expressions: Iterable[tuple[str, str, Sequence[str]]],
) -> Selector:
    """metav1.LabelSelectorAsSelector of a selector that is there (a nil one is NOTHING, the
    caller's to say): no terms select everything; matchLabels are key=value, each expression
    (key, operator, values) a requirement."""
    reqs = [requirement(k, OP_IN, [v]) for k, v in (match_labels or {}).items()]
    reqs += [requirement(k, op, values) for k, op, values in match_expressions]
    return Selector(reqs) if reqs else EVERYTHING


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """labels.SelectorFromSet: every key=value must be present (empty set: everything)."""
    if not labels:
        return EVERYTHING
    items = tuple(labels.items())

    def matches_all(lb: Mapping[str, str]) -> bool:
        return all(lb.get(k) == v and k in lb for k, v in items)

    return Selector([matches_all])
