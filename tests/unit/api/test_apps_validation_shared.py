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
from pykubelet.api.meta_validation import selector_matches
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


def test_selector_matching_is_the_one_label_selector_rule() -> None:
    def sel(*exprs: tuple[str, str, list[str]], **labels: str) -> LabelSelector:
        out: LabelSelector = decode_value(LabelSelector, {
            "matchLabels": labels,
            "matchExpressions": [{"key": k, "operator": op, "values": v}
                                 for k, op, v in exprs]})
        return out

    labels = {"app": "web", "tier": "front"}
    assert selector_matches(sel(("tier", "In", ["front", "back"]), app="web"), labels)
    assert not selector_matches(sel(("tier", "NotIn", ["front"])), labels)
    assert selector_matches(sel(("zone", "DoesNotExist", [])), labels)
    assert not selector_matches(sel(("zone", "Exists", [])), labels)
    # LabelSelectorAsSelector fails on In without values: that is the selector's error
    # (validation names it), not a template that does not match
    assert selector_matches(sel(("tier", "In", [])), labels)


def test_an_unconvertible_selector_is_no_template_mismatch() -> None:
    bad: LabelSelector = decode_value(LabelSelector, {
        "matchExpressions": [{"key": "app", "operator": "In", "values": []}]})
    got = pod_template_errors(template(restartPolicy="Always"), bad, "spec.template")
    assert got == []


def test_one_create_and_update_rule_for_the_workloads() -> None:
    """ValidateReplicaSet, ValidateDeployment and ValidateDaemonSet: a namespaced object with
    a DNS-subdomain name, then its spec; their updates: the metadata update, the spec, and
    apps/v1's immutable selector. One helper each, the spec's rule passed in."""
    from pykubelet.api.apps import ReplicaSet, ReplicaSetSpec
    from pykubelet.api.apps_validation import workload_errors, workload_update_errors
    from pykubelet.api.machinery.field import invalid
    from pykubelet.api.types import ObjectMeta

    def spec_rule(obj: ReplicaSet) -> list:  # type: ignore[type-arg]
        return [invalid("spec.replicas", obj.spec.replicas, "checked")]

    bad = ReplicaSet(metadata=ObjectMeta(name="Not_A_Name"), spec=ReplicaSetSpec(replicas=1))
    got = [e.field for e in workload_errors(bad, spec_rule)]
    assert got == ["metadata.name", "metadata.namespace", "spec.replicas"]
    old = ReplicaSet(metadata=ObjectMeta(name="rs", namespace="d", resource_version="1"),
                     spec=ReplicaSetSpec(replicas=1, selector=SEL))
    new = ReplicaSet(metadata=ObjectMeta(name="rs", namespace="d", resource_version="1"),
                     spec=ReplicaSetSpec(replicas=1,
                                         selector=LabelSelector(match_labels={"a": "b"})))
    got = [f"{e.field}: {e.detail}" for e in workload_update_errors(new, old, spec_rule)]
    assert got == ["spec.replicas: checked", "spec.selector: field is immutable"]


def test_int_or_percent_value_is_upstreams_one_getIntOrPercentValue() -> None:
    """A valid percentage's number, else IntOrString.IntValue() (strconv.Atoi: 0 when the
    string is no integer), for a Deployment's and a DaemonSet's rolling update alike."""
    from pykubelet.api.apps_validation import int_or_percent_value

    cases = {None: 0, 3: 3, 0: 0, "25%": 25, "0%": 0, "5": 5, "-5": -5, "abc": 0,
             "5.5%": 0, "%": 0, "": 0}
    assert {k: int_or_percent_value(k) for k in cases} == cases


def test_a_deployment_whose_surge_and_unavailable_read_as_zero_says_so() -> None:
    """ValidateRollingUpdateDeployment: two strings that are neither integers nor
    percentages read as 0 (getIntOrPercentValue), so "may not be 0" joins their errors."""
    from pykubelet.api.apps import Deployment
    from pykubelet.api.apps_validation import deployment_errors

    d = decode_value(Deployment, {
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}},
                 "strategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxUnavailable": "abc", "maxSurge": "x"}}}})
    got = messages(deployment_errors(d))
    assert "spec.strategy.rollingUpdate.maxUnavailable: may not be 0 when `maxSurge` is 0" in got


def test_status_counts_are_bounded_as_upstream_says_for_each_workload() -> None:
    """ValidateReplicaSetStatusUpdate and ValidateStatefulSetStatusUpdate: each count no
    greater than status.replicas, available no greater than ready (in each kind's words)."""
    from pykubelet.api.apps import ReplicaSet
    from pykubelet.api.apps_statefulset import StatefulSet
    from pykubelet.api.apps_statefulset_validation import stateful_set_status_update_errors
    from pykubelet.api.apps_validation import replica_set_status_update_errors

    meta = {"name": "web", "namespace": "default", "resourceVersion": "1"}
    old_rs = decode_value(ReplicaSet, {"metadata": meta, "status": {"replicas": 2}})
    rs = decode_value(ReplicaSet, {"metadata": meta, "status": {
        "replicas": 2, "fullyLabeledReplicas": 3, "readyReplicas": 1, "availableReplicas": 2}})
    assert messages(replica_set_status_update_errors(rs, old_rs)) == [
        "status.fullyLabeledReplicas: cannot be greater than status.replicas",
        "status.availableReplicas: cannot be greater than readyReplicas",
    ]
    old_sts = decode_value(StatefulSet, {"metadata": meta, "status": {"replicas": 2}})
    sts = decode_value(StatefulSet, {"metadata": meta, "status": {
        "replicas": 2, "readyReplicas": 1, "currentReplicas": 3, "updatedReplicas": 4,
        "availableReplicas": 2}})
    assert messages(stateful_set_status_update_errors(sts, old_sts)) == [
        "status.currentReplicas: cannot be greater than status.replicas",
        "status.updatedReplicas: cannot be greater than status.replicas",
        "status.availableReplicas: cannot be greater than status.readyReplicas",
    ]
