"""Each error name has one meaning (issue 25): the object model's APIError and the API
server's Status error were two classes of one name, as were the API server's selector parse
error and pysched's invalid requirement, the node's and the scheduler's ConfigError, the
storage's and the cycle state's NotFoundError, the CNI conf dir's and the CRI's NotFound.
Every exception name is defined once now, and a second definition fails here."""

from __future__ import annotations

import ast
import builtins
import functools
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def _classes() -> list[tuple[str, list[str], str]]:
    """(name, base names, file) of every class of pycni, pykubelet and pysched."""
    return [(node.name, [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases],
             str(p.relative_to(REPO)))
            for top in ("pycni", "pykubelet", "pysched")
            for p in sorted((REPO / top).rglob("*.py")) if "_proto" not in p.parts
            for node in ast.walk(ast.parse(p.read_text())) if isinstance(node, ast.ClassDef)]


def _class_definitions(name: str) -> list[str]:
    return [where for n, _, where in _classes() if n == name]


# One meaning, two classes: the API client's StatusError is the error Status a server sent,
# the API server's is the one it answers with; upstream both are apierrors.StatusError, one
# type. They differ in shape (status a dict vs a method), so folding them is its own change.
SAME_MEANING = {"StatusError": 2}


def _exception_definitions() -> dict[str, list[str]]:
    """Every class of pycni, pykubelet and pysched that derives from an exception, by name:
    from a builtin one, or from a class of ours that does (or from an ``...Error``)."""
    classes = _classes()
    errors = {n for n in dir(builtins)
              if isinstance(getattr(builtins, n), type)
              and issubclass(getattr(builtins, n), BaseException)}
    while True:
        more = {name for name, bases, _ in classes if name not in errors and any(
            b in errors or b.endswith("Error") for b in bases)}
        if not more:
            break
        errors |= more
    found: dict[str, list[str]] = defaultdict(list)
    for name, _, where in classes:
        if name in errors:
            found[name].append(where)
    return found


def test_every_exception_name_is_defined_once() -> None:
    twice = {name: where for name, where in _exception_definitions().items()
             if len(where) > SAME_MEANING.get(name, 1)}
    assert twice == {}


@pytest.mark.parametrize("name", ["APIError", "QuantityError", "SelectorError",
                                  "RequirementError", "ConfigError", "NotFoundError"])
def test_defined_once(name: str) -> None:
    assert len(_class_definitions(name)) == 1, _class_definitions(name)


def test_the_finder_sees_exceptions() -> None:
    found = _exception_definitions()
    assert found["CNIError"] == ["pycni/errors.py"]
    assert "LeaseDuration" not in found
    assert "Pod" not in found


def test_the_api_servers_status_error_is_upstreams_name() -> None:
    from pykubelet.api.machinery.errors import APIError
    from pykubelet.controlplane import errors

    err = errors.not_found("pods", "", "x")
    assert isinstance(err, errors.StatusError)
    assert not isinstance(err, APIError)
    assert err.status()["reason"] == "NotFound"


def test_registry_names_one_thing_in_pykubelet() -> None:
    """pykubelet's registry is the API server's (generic store + strategies); the runtime's
    image pulling was a second "registry" module, now runtime/image_pull.py."""
    found = sorted(str(p.relative_to(REPO)) for p in (REPO / "pykubelet").rglob("*registry*")
                   if "__pycache__" not in p.parts)
    assert found == ["pykubelet/controlplane/registry"]
