"""Each error name has one meaning (issue 25): the object model's APIError and the API
server's Status error were two classes of one name, as were the API server's selector parse
error and pysched's invalid requirement. These names are each defined once now."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _class_definitions(name: str) -> list[str]:
    return [str(p.relative_to(REPO))
            for top in ("pycni", "pykubelet", "pysched")
            for p in sorted((REPO / top).rglob("*.py"))
            for node in ast.walk(ast.parse(p.read_text()))
            if isinstance(node, ast.ClassDef) and node.name == name]


@pytest.mark.parametrize("name", ["APIError", "QuantityError", "SelectorError",
                                  "RequirementError"])
def test_defined_once(name: str) -> None:
    assert len(_class_definitions(name)) == 1, _class_definitions(name)


def test_the_api_servers_status_error_is_upstreams_name() -> None:
    from pykubelet.api.machinery.errors import APIError
    from pykubelet.controlplane import errors

    err = errors.not_found("pods", "", "x")
    assert isinstance(err, errors.StatusError)
    assert not isinstance(err, APIError)
    assert err.status()["reason"] == "NotFound"
