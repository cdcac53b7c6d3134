"""pysched.decode: strict decoding of v1 objects into the one model, the scheduler's
defaults and checks, its integer views, quantities, toleration matching."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.machinery.quantity import QuantityError, int_value, milli_value, parse_quantity
from pykubelet.api.objects import PodDisruptionBudget, PriorityClass
from pykubelet.api.types import Taint, Toleration
from pysched import decode as sched_decode
from pysched.decode import from_dict
from pysched.views import int_resources, pod_resources


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("1", Fraction(1)),
        ("1.5", Fraction(3, 2)),
        ("1Gi", Fraction(2**30)),
        ("128Mi", Fraction(128 * 2**20)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("1e3", Fraction(1000)),
        ("2E-3", Fraction(2, 1000)),
        ("100n", Fraction(1, 10**7)),
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse_quantity(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "1.2.3", "abc", "1Qi", "--1", True, None])
def test_parse_quantity_rejects(bad: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_milli_and_value_round_up_like_apimachinery() -> None:
    assert milli_value("0.1") == 100
    assert milli_value("1n") == 1  # MilliValue rounds up
    assert int_value("1.2") == 2
    assert int_value("200Mi") == 200 * 2**20


def _pod(spec: dict, **meta: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta}, "spec": spec}


def test_pod_decodes_resources_in_canonical_units_and_limits_default_requests() -> None:
    p = sched_decode.pod(
        _pod(
            {
                "containers": [
                    {
                        "name": "a",
                        "image": "nginx",
                        "resources": {
                            "requests": {"cpu": "250m"},
                            "limits": {"memory": "1Gi", "cpu": "1"},
                        },
                    },
                ],
                "overhead": {"cpu": "10m"},
            }
        )
    )
    c = p.spec.containers[0]
    assert pod_resources(p).containers[0] == {"cpu": 250, "memory": 2**30}
    assert int_resources(c.resources.limits) == {"cpu": 1000, "memory": 2**30}
    assert pod_resources(p).overhead == {"cpu": 10}
    assert p.namespace == "default"
    assert p.spec.scheduler_name == "default-scheduler"
    assert p.key == "default/p"


def test_pod_accepts_known_fields_it_does_not_model() -> None:
    p = sched_decode.pod(
        _pod(
            {
                "containers": [
                    {
                        "name": "a",
                        "image": "x",
                        "env": [{"name": "A", "value": "1"}],
                        "livenessProbe": {"exec": {"command": ["true"]}},
                    }
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "restartPolicy": "Always",
            },
            annotations={"a": "b"},
            finalizers=["x"],
        )
    )
    assert p.spec.containers[0].image == "x"


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        (_pod({"containers": [{"name": "a", "imagee": "x"}]}), "spec.containers[0].imagee"),
        (_pod({"containers": [], "nodeSelectr": {}}), "spec.nodeSelectr"),
        (
            _pod({"containers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]}),
            "spec.containers[0].resources.requests.cpu",
        ),
        (
            _pod({"tolerations": [{"key": "k", "operator": "Maybe"}]}),
            "spec.tolerations[0].operator",
        ),
        (_pod({"priority": "high"}), "spec.priority"),
        (
            _pod(
                {
                    "affinity": {
                        "podAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": {}}
                            ]
                        }
                    }
                }
            ),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        ),
        (
            _pod(
                {
                    "topologySpreadConstraints": [
                        {"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
                    ]
                }
            ),
            "spec.topologySpreadConstraints[0].maxSkew",
        ),
        ({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, "metadata.name"),
        ({"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "p"}}, "apiVersion"),
    ],
)
def test_pod_decode_errors_name_the_field(doc: dict, path: str) -> None:
    with pytest.raises(DecodeError) as ei:
        sched_decode.pod(doc)
    assert ei.value.path == path


def test_node_decodes_taints_images_and_defaults_allocatable_to_capacity() -> None:
    n = sched_decode.node(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "spec": {
                "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
                "unschedulable": True,
            },
            "status": {
                "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "images": [{"names": ["nginx:1"], "sizeBytes": 5}],
            },
        }
    )
    assert int_resources(n.status.allocatable) == {"cpu": 2000, "memory": 4 * 2**30, "pods": 110}
    assert n.spec.taints[0].to_string() == "k=v:NoSchedule"
    assert n.spec.unschedulable
    assert n.status.images[0].size_bytes == 5


def test_node_rejects_bad_taint_effect_and_namespace() -> None:
    with pytest.raises(DecodeError, match=r"spec.taints\[0\].effect"):
        sched_decode.node(
            {
                "kind": "Node",
                "metadata": {"name": "n"},
                "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]},
            }
        )
    with pytest.raises(DecodeError, match=r"metadata\.namespace"):
        sched_decode.node({"kind": "Node", "metadata": {"name": "n", "namespace": "x"}})


def test_from_dict_dispatches_by_kind() -> None:
    pc = from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    assert isinstance(pc, PriorityClass)
    assert pc.value == 1000
    assert pc.preemption_policy == "PreemptLowerPriority"
    pdb = from_dict(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"a": "b"}}},
            "status": {"disruptionsAllowed": 1},
        }
    )
    assert isinstance(pdb, PodDisruptionBudget)
    assert pdb.spec.min_available == "50%"
    assert pdb.status.disruptions_allowed == 1
    with pytest.raises(DecodeError, match="unsupported kind"):
        from_dict({"kind": "Deployment"})


def _tol(key: str, op: str, value: str, effect: str) -> Toleration:
    return Toleration(key=key, operator=op, value=value, effect=effect)


def _taint(key: str, value: str, effect: str) -> Taint:
    return Taint(key=key, value=value, effect=effect)


# v1 Toleration.ToleratesTaint table (k8s.io/api/core/v1 toleration_test.go semantics).
@pytest.mark.parametrize(
    ("tol", "taint", "ok"),
    [
        (_tol("foo", "Equal", "bar", "NoSchedule"), _taint("foo", "bar", "NoSchedule"), True),
        (_tol("foo", "Equal", "bar", ""), _taint("foo", "bar", "NoExecute"), True),
        (_tol("foo", "Equal", "bar", "NoSchedule"), _taint("foo", "bar", "NoExecute"), False),
        (_tol("foo", "Equal", "baz", ""), _taint("foo", "bar", "NoSchedule"), False),
        (_tol("foo", "Exists", "", ""), _taint("foo", "anything", "NoSchedule"), True),
        (_tol("", "Exists", "", ""), _taint("any", "x", "PreferNoSchedule"), True),
        (_tol("", "Exists", "", "NoSchedule"), _taint("any", "x", "NoExecute"), False),
        (_tol("other", "Exists", "", ""), _taint("foo", "", "NoSchedule"), False),
        (_tol("foo", "Equal", "", ""), _taint("foo", "", "NoSchedule"), True),
    ],
)
def test_toleration_tolerates_taint(tol: Toleration, taint: Taint, ok: bool) -> None:
    assert tol.tolerates_taint(taint) is ok


def test_empty_enums_take_the_api_defaults() -> None:
    p = sched_decode.pod(
        _pod(
            {
                "containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": ""}]}],
                "tolerations": [{"key": "k", "operator": "", "value": "v"}],
            }
        )
    )
    assert p.spec.containers[0].ports[0].protocol == "TCP"
    assert p.spec.tolerations[0].operator == "Equal"
    with pytest.raises(DecodeError, match="effect"):
        sched_decode.node(
            {
                "kind": "Node",
                "metadata": {"name": "n"},
                "spec": {"taints": [{"key": "k", "effect": ""}]},
            }
        )


def test_collector_paused_restores_the_collector() -> None:
    import gc

    from pysched.decode import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


_UNREAD_ILL_TYPED_POD = _pod({"containers": [{"name": "a", "livenessProbe": 5}],
                              "hostname": ["not", "a", "string"]})
_UNREAD_ILL_TYPED_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                          "status": {"addresses": "nowhere",
                                     "conditions": [{"type": "Ready", "status": "True",
                                                     "lastHeartbeatTime": "yesterday"}]}}


def test_the_default_decode_checks_fields_the_scheduler_never_reads() -> None:
    """By default pysched's decode fails where the API server's does (test_one_walker.py)."""
    with pytest.raises(DecodeError) as ei:
        from_dict(_UNREAD_ILL_TYPED_POD)
    assert ei.value.path == "spec.containers[0].livenessProbe"
    with pytest.raises(DecodeError) as ei:
        from_dict(_UNREAD_ILL_TYPED_NODE)
    assert ei.value.path == "status.addresses"


def test_check_unread_false_skips_unread_fields_but_names_typos() -> None:
    """check_unread=False (input an API server checked, or simulate's bulk input) takes the
    fields kube-scheduler never looks at unchecked, yet a key no upstream type has is an
    error, as is a read field's wrong type."""
    p = from_dict(_UNREAD_ILL_TYPED_POD, check_unread=False)
    assert p.spec.containers[0].name == "a"
    n = sched_decode.node(_UNREAD_ILL_TYPED_NODE, check_unread=False)
    assert n.status.conditions[0].type == "Ready"
    with pytest.raises(DecodeError) as ei:
        sched_decode.pod(_pod({"containers": [{"name": "a", "livenessProb": {}}]}),
                         check_unread=False)
    assert ei.value.path == "spec.containers[0].livenessProb"
    with pytest.raises(DecodeError) as ei:
        sched_decode.pod(_pod({"containers": [{"name": "a"}], "nodeName": 5}),
                         check_unread=False)
    assert ei.value.path == "spec.nodeName"
    with pytest.raises(DecodeError) as ei:
        from_dict({**_pod({"containers": [{"name": "a"}]}), "metadata": {}},
                  check_unread=False)
    assert ei.value.path == "metadata.name"  # the scheduler's own checks still run
