"""Manifest text (YAML or JSON, one or many documents) into plain data, fast.

JSON, the commonest machine-written form (`kubectl get -o json`, generated cluster lists), goes
straight through the json module; YAML goes through libyaml's C parser when PyYAML has it.
PyYAML's pure-Python loader reads a 5,000-node List in about 45 s, json in well under one.
Timestamps stay strings (metadata.creationTimestamp is a string on the wire, and the typed
models read it as one).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from pykubelet.api.machinery import yamlalias
from pykubelet.api.machinery.errors import APIError

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc]
    """SafeLoader (libyaml's when present) that leaves timestamps as strings."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class SyntaxProblem(APIError):
    """Text that is neither YAML nor JSON; the message is the parser's."""


def _maybe_json(text: str) -> bool:
    head = text.lstrip()[:1]
    return head in ("{", "[")


def parse_documents(text: str) -> list[Any]:
    """Every non-empty document of a YAML/JSON stream, in order."""
    if _maybe_json(text):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # YAML that looks like JSON (flow style), or several documents
    try:
        return [d for d in yamlalias.load_all(text, _Loader) if d is not None]
    except yaml.YAMLError as exc:
        raise SyntaxProblem(str(exc)) from None


def parse_document(text: str) -> Any:
    """The one document of a YAML/JSON text (None when empty)."""
    if _maybe_json(text):
        try:
            return json.loads(text)
        except ValueError:
            pass
    try:
        return yamlalias.load(text, _Loader)
    except yaml.YAMLError as exc:
        raise SyntaxProblem(str(exc)) from None
