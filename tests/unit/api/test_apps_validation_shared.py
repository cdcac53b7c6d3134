"""The apps validation rules the workload specs share (pkg/apis/apps/validation): one
template rule (restartPolicy Always, no activeDeadlineSeconds, said with the workload's
kind), one selector rule (required, not empty, named for the kind) and one immutable
selector on update; the ReplicaSet, Deployment, DaemonSet and StatefulSet validators give
the same errors through them."""

from __future__ import annotations

from pykubelet.api.apps_validation import (
    immutable_selector_errors,
    pod_template_errors,
    selector_errors,
    workload_template_errors,
)
from pykubelet.api.machinery.codec import decode_value
from pykubelet.api.types import LabelSelector, PodTemplateSpec

SEL = LabelSelector(match_labels={"app": "web"})


def template(**spec: object) -> PodTemplateSpec:
    body = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}
    out: PodTemplateSpec = decode_value(PodTemplateSpec, body)
    return out


def messages(errs: list) -> list[str]:  # type: ignore[type-arg]
    return [f"{e.field}: {e.detail}" for e in errs]


def test_template_rules_name_the_workload_kind() -> None:
    bad = template(restartPolicy="Never", activeDeadlineSeconds=5)
    for kind in ("ReplicaSet", "DaemonSet", "StatefulSet"):
        got = [e.field for e in workload_template_errors(bad, "spec.template", kind)]
        assert got == ["spec.template.spec.restartPolicy",
                       "spec.template.spec.activeDeadlineSeconds"]
        assert f"activeDeadlineSeconds in {kind} is not Supported" in messages(
            workload_template_errors(bad, "spec.template", kind))[1]
    assert workload_template_errors(template(restartPolicy="Always"), "spec.template",
                                    "DaemonSet") == []


def test_template_labels_must_match_the_selector() -> None:
    other = LabelSelector(match_labels={"app": "db"})
    got = pod_template_errors(template(restartPolicy="Always"), other, "spec.template",
                              "StatefulSet")
    assert messages(got) == [
        "spec.template.metadata.labels: `selector` does not match template `labels`"]


def test_selector_rule_names_the_kind() -> None:
    assert [e.field for e in selector_errors(None, "spec.selector")] == ["spec.selector"]
    empty = selector_errors(LabelSelector(), "spec.selector", "statefulset")
    assert messages(empty) == ["spec.selector: empty selector is invalid for statefulset"]
    assert selector_errors(SEL, "spec.selector") == []


def test_selector_is_immutable() -> None:
    assert immutable_selector_errors(SEL, LabelSelector(match_labels={"app": "web"})) == []
    got = immutable_selector_errors(LabelSelector(match_labels={"app": "db"}), SEL)
    assert [e.field for e in got] == ["spec.selector"]
