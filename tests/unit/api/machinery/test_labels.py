"""One label-matching rule (pykubelet.api.machinery.labels) for the scheduler, the API
server's labelSelector and the PodDisruptionBudget users: the same requirement, spelled as
the API spells it or as a parsed selector string, matches the same labels."""

from __future__ import annotations

import pytest

from pykubelet.api.machinery import codec
from pykubelet.api.machinery.labels import (
    EVERYTHING,
    RequirementError,
    label_selector_as_selector,
    requirement,
)
from pykubelet.api.types import LabelSelector
from pykubelet.controlplane.registry.eviction import selector_of
from pykubelet.controlplane.registry.selectors import parse_label_selector
from pysched.framework.labels import label_selector_as_selector as sched_selector

LABELS = [{}, {"a": "1"}, {"a": "2"}, {"a": "x"}, {"b": "1"}]


@pytest.mark.parametrize(
    ("api", "text"),
    [
        (("a", "In", ["1", "2"]), "a in (1,2)"),
        (("a", "NotIn", ["1"]), "a notin (1)"),
        (("a", "Exists", []), "a"),
        (("a", "DoesNotExist", []), "!a"),
        (("a", "Gt", ["1"]), "a>1"),
        (("a", "Lt", ["2"]), "a<2"),
    ],
)
def test_both_spellings_match_alike(api: tuple[str, str, list[str]], text: str) -> None:
    compiled = requirement(*api)
    parsed = parse_label_selector(text)
    assert [compiled(lb) for lb in LABELS] == [parsed.matches(lb) for lb in LABELS]


def test_exact_match_operators() -> None:
    assert [requirement("a", "=", ["1"])(lb) for lb in LABELS] == [
        False, True, False, False, False]
    assert [requirement("a", "!=", ["1"])(lb) for lb in LABELS] == [
        True, False, True, True, True]
    with pytest.raises(RequirementError, match="one single value"):
        requirement("a", "=", ["1", "2"])


@pytest.mark.parametrize(
    ("op", "values", "words"),
    [("In", [], "can't be empty"), ("Exists", ["1"], "must be empty"),
     ("Gt", ["x"], "must be an integer"), ("Foo", [], "not a valid selector operator")],
)
def test_invalid_requirements(op: str, values: list[str], words: str) -> None:
    with pytest.raises(RequirementError, match=words):
        requirement("a", op, values)


def test_label_selector_as_selector_and_its_users() -> None:
    assert label_selector_as_selector({}, []) is EVERYTHING
    sel = label_selector_as_selector({"app": "web"}, [("tier", "NotIn", ["db"])])
    assert sel.matches({"app": "web"})
    assert not sel.matches({"app": "web", "tier": "db"})
    pdb = {"spec": {"selector": {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["db"]}]}}}
    from_pdb = selector_of(pdb)
    assert from_pdb is not None
    from_sched = sched_selector(codec.decode(LabelSelector, pdb["spec"]["selector"]))
    for lb in ({"app": "web"}, {"app": "web", "tier": "db"}, {"tier": "fe"}):
        assert from_pdb.matches(lb) == from_sched.matches(lb) == sel.matches(lb)


def test_a_pdb_selector_with_an_invalid_operator_selects_nothing() -> None:
    """The disruption controller and eviction skip it (LabelSelectorAsSelector's error);
    the API server's own copy read it as a 'less than' of no value and raised IndexError."""
    pdb = {"spec": {"selector": {"matchExpressions": [
        {"key": "n", "operator": "Foo", "values": []}]}}}
    assert selector_of(pdb) is None
