"""Label and field selectors as apimachinery parses and applies them."""

from __future__ import annotations

import pytest

from pykubelet.controlplane.registry.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)


@pytest.mark.parametrize(
    ("text", "labels", "match"),
    [
        ("", {"a": "1"}, True),
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "2"}, False),
        ("a!=1", {}, True),  # != also matches objects without the key
        ("a!=1", {"a": "1"}, False),
        ("a in (1, 2)", {"a": "2"}, True),
        ("a notin (1,2)", {}, True),
        ("a notin (1,2)", {"a": "1"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("!a", {}, True),
        ("a=1,b", {"a": "1"}, False),
        ("app.kubernetes.io/name=web,tier in (fe)", {"app.kubernetes.io/name": "web",
                                                     "tier": "fe"}, True),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "4"}, False),
        ("a=", {"a": ""}, True),
    ],
)
def test_label_selector_semantics(text: str, labels: dict[str, str], match: bool) -> None:
    assert parse_label_selector(text).matches(labels) is match


@pytest.mark.parametrize("text", ["a in (", "=x", "a b", "bad key!=1", "a=-x-", "n>x"])
def test_bad_label_selectors_are_errors(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(text)


def test_field_selector_terms_escapes_and_empty_values() -> None:
    sel = parse_field_selector("spec.nodeName=n1,status.phase!=Failed")
    assert sel.matches({"spec.nodeName": "n1", "status.phase": "Running"})
    assert not sel.matches({"spec.nodeName": "n1", "status.phase": "Failed"})
    assert sel.exact("spec.nodeName") == "n1"
    empty = parse_field_selector("involvedObject.namespace=")
    assert empty.matches({"involvedObject.namespace": ""})
    assert not empty.matches({"involvedObject.namespace": "x"})
    esc = parse_field_selector(r"metadata.name=a\,b")
    assert esc.matches({"metadata.name": "a,b"})
    with pytest.raises(SelectorError):
        parse_field_selector("justafield")
