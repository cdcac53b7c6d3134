"""Structured field errors: upstream's texts, causes and the 422 Invalid Status."""

from __future__ import annotations

import copy

import pytest

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.errors import ValidationError
from pykubelet.api.machinery import field
from pykubelet.api.machinery.field import ErrorType, FieldError
from pykubelet.api.validation import validate_pod


@pytest.mark.parametrize(
    ("err", "text", "reason"),
    [
        (field.required("spec.containers[0].image"), "spec.containers[0].image: Required value",
         "FieldValueRequired"),
        (field.required("metadata.name", "name or generateName is required"),
         "metadata.name: Required value: name or generateName is required", "FieldValueRequired"),
        (field.invalid("metadata.name", "X", "bad"), 'metadata.name: Invalid value: "X": bad',
         "FieldValueInvalid"),
        (field.invalid("spec.x", 70000, "too big"), "spec.x: Invalid value: 70000: too big",
         "FieldValueInvalid"),
        (field.invalid("spec.x", True, "no"), "spec.x: Invalid value: true: no",
         "FieldValueInvalid"),
        (field.invalid("spec.x", None, "no"), "spec.x: Invalid value: null: no",
         "FieldValueInvalid"),
        (field.not_supported("spec.restartPolicy", "S", ["Always", "Never"]),
         'spec.restartPolicy: Unsupported value: "S": supported values: "Always", "Never"',
         "FieldValueNotSupported"),
        (field.duplicate("spec.volumes[1].name", "v"), 'spec.volumes[1].name: Duplicate value: "v"',
         "FieldValueDuplicate"),
        (field.not_found("spec.x", "v"), 'spec.x: Not found: "v"', "FieldValueNotFound"),
        (field.forbidden("spec", "pod updates may not change fields"),
         "spec: Forbidden: pod updates may not change fields", "FieldValueForbidden"),
        (field.too_long("metadata.annotations", "", 262144),
         "metadata.annotations: Too long: must have at most 262144 bytes", "FieldValueTooLong"),
        (field.too_many("spec.x", 5, 4), "spec.x: Too many: 5: must have at most 4 items",
         "FieldValueTooMany"),
        (field.too_many("spec.x", -1, 4), "spec.x: Too many: must have at most 4 items",
         "FieldValueTooMany"),
        (field.type_invalid("spec.x", "a", "must be an integer"),
         'spec.x: Invalid value: "a": must be an integer', "FieldValueTypeInvalid"),
        (field.internal_error("spec", "boom"), "spec: Internal error: boom", "InternalError"),
    ],
)
def test_error_text_and_cause(err: FieldError, text: str, reason: str) -> None:
    assert str(err) == text
    cause = err.cause()
    assert cause == {"reason": reason, "message": text.split(": ", 1)[1], "field": err.field}


def test_go_quote_escapes_like_strconv() -> None:
    assert field.go_quote('a"b\\c\n\t\x01é') == '"a\\"b\\\\c\\n\\t\\x01é"'


def test_paths_print_as_field_path() -> None:
    p = field.child("", "spec", "containers")
    assert field.index(p, 0) == "spec.containers[0]"
    assert field.key(field.child("", "metadata", "labels"), "app") == "metadata.labels[app]"


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web"},
    "spec": {"containers": [{"name": "App", "image": ""}], "restartPolicy": "Sometimes"},
}


def test_validation_error_carries_every_cause_and_renders_the_422_status() -> None:
    pod = set_defaults_pod(decode_pod(copy.deepcopy(POD)))
    with pytest.raises(ValidationError) as ei:
        validate_pod(pod)
    exc = ei.value
    assert [e.type for e in exc.errors] == [
        ErrorType.INVALID,
        ErrorType.REQUIRED,
        ErrorType.NOT_SUPPORTED,
    ]
    status = exc.status()
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "Pod"
    assert status["details"]["name"] == "web"
    assert "group" not in status["details"]
    causes = status["details"]["causes"]
    assert causes[1] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.containers[0].image",
    }
    assert status["message"].startswith('Pod "web" is invalid: [spec.containers[0].name: Invalid')
    assert str(exc) == status["message"]


def test_group_kinds_are_qualified_and_repeated_messages_said_once() -> None:
    err = field.required("spec.selector")
    exc = ValidationError([err, err], kind="PodDisruptionBudget", group="policy", name="b")
    assert str(exc) == 'PodDisruptionBudget.policy "b" is invalid: spec.selector: Required value'
    assert exc.status()["details"]["group"] == "policy"
    assert len(exc.causes()) == 2
