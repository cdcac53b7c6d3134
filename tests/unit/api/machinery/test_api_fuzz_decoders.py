"""Fuzzed API decoders (issue 29 item 3): typed decoding of mutated objects of several
kinds, quantities and YAML/JSON manifests either answer or raise the machinery's declared
errors (DecodeError naming the field it is about, QuantityError, SyntaxProblem), fast."""

from __future__ import annotations

from typing import Any

from fuzz_strategies import FUZZ, JSON, check_message, mutated
from hypothesis import example, given
from hypothesis import strategies as st

from pykubelet.api.kinds import decode_any
from pykubelet.api.machinery.codec import encode
from pykubelet.api.machinery.errors import APIError, DecodeError
from pykubelet.api.machinery.manifest import SyntaxProblem, parse_documents
from pykubelet.api.machinery.quantity import QuantityError, parse_quantity

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
       "spec": {"containers": [{
           "name": "app", "image": "busybox", "command": ["sh", "-c", "sleep 1"],
           "env": [{"name": "A", "value": "1"},
                   {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
           "ports": [{"containerPort": 80, "protocol": "TCP"}],
           "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
           "securityContext": {"capabilities": {"drop": ["ALL"]},
                               "seccompProfile": {"type": "RuntimeDefault"}},
           "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
           "volumes": [{"name": "v", "emptyDir": {}}],
           "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                       "strategy": {"rollingUpdate": {"maxSurge": "25%"}},
                       "template": {"metadata": {"labels": {"app": "d"}},
                                    "spec": POD["spec"]}}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"selector": {"app": "d"}, "type": "NodePort",
                    "ports": [{"port": 80, "targetPort": "http", "nodePort": 30080}]}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
             "data": {"a": "1"}, "binaryData": {"b": "AAE="}}
SEEDS = [POD, DEPLOYMENT, SERVICE, CONFIGMAP]


def _names_a_field(exc: DecodeError, doc: Any) -> None:
    """A DecodeError says where: a path whose first step is one of the document's keys
    (or the kind/apiVersion it lacks), or, for the document itself, what it is not."""
    check_message(exc)
    if exc.path:
        first = exc.path.split(".")[0].split("[")[0]
        assert first in doc or first in ("kind", "apiVersion"), (exc.path, list(doc))
    else:
        assert exc.problem


@FUZZ
@given(st.sampled_from(SEEDS).flatmap(mutated))
def test_typed_decoding_answers_or_names_the_field(doc: Any) -> None:
    try:
        obj = decode_any(doc)
    except DecodeError as exc:
        if isinstance(doc, dict):
            _names_a_field(exc, doc)
        return
    again = encode(obj)  # what decodes encodes, and reads back the same
    assert encode(decode_any(again)) == again


@FUZZ
@given(JSON)
def test_any_json_value_decodes_or_is_a_decode_error(doc: Any) -> None:
    try:
        decode_any(doc)
    except DecodeError as exc:
        check_message(exc)


QUANTITY_TEXT = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"\A[+-]?[0-9]{0,20}(\.[0-9]{0,20})?([eE][+-]?[0-9]{1,5})?"
                  r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?\Z"))


@FUZZ
@given(st.one_of(QUANTITY_TEXT, st.integers(), st.floats()))
@example(float("inf"))  # YAML's .inf: a ValueError from Fraction, not a QuantityError
@example(float("nan"))
def test_quantities_parse_or_are_quantity_errors(value: Any) -> None:
    try:
        parse_quantity(value)
    except QuantityError as exc:
        check_message(exc)


YAMLISH = st.text(alphabet=st.sampled_from(list("ab:- \n[]{},&*!'\"#|>%@`?~0.\t")), max_size=80)


@FUZZ
@given(st.one_of(YAMLISH, st.text(max_size=80)))
def test_manifests_parse_or_are_syntax_problems(text: str) -> None:
    try:
        parse_documents(text)
    except SyntaxProblem as exc:
        check_message(exc)
    except APIError as exc:  # pragma: no cover - a new error type would show up here
        raise AssertionError(f"undeclared {type(exc).__name__}: {exc}") from exc
