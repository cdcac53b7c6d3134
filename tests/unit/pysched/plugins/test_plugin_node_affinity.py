"""NodeAffinity: nodeSelector + required node affinity (filter), preferred terms (score)."""

from __future__ import annotations

import pytest
from builders import FakeSnapshot, make_node, make_pod, plugin_for, run_filter, run_score

from pysched.config import load_config
from pysched.framework.cycle_state import CycleState
from pysched.framework.status import Code
from pysched.plugins.node_affinity import ERR_REASON_POD

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

NODES = [
    make_node("n1").labels({"zone": "a", "disk": "ssd", "gen": "5"}).obj(),
    make_node("n2").labels({"zone": "b", "disk": "hdd", "gen": "2"}).obj(),
    make_node("n3").labels({"zone": "c"}).obj(),
]


def _fits(pod) -> set[str]:  # type: ignore[no-untyped-def]
    res = run_filter(plugin_for("NodeAffinity", NODES), pod, NODES)
    for s in res.values():
        if s is not None:
            assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert s.reasons == [ERR_REASON_POD]
    return {n for n, s in res.items() if s is None}


@pytest.mark.parametrize(
    ("build", "want"),
    [
        (lambda: make_pod(), {"n1", "n2", "n3"}),
        (lambda: make_pod().node_selector({"disk": "ssd"}), {"n1"}),
        (lambda: make_pod().node_selector({"disk": "ssd", "zone": "b"}), set()),
        (lambda: make_pod().node_affinity_in("zone", ["a", "b"]), {"n1", "n2"}),
        (lambda: make_pod().node_affinity_in("zone", ["a"], "NotIn"), {"n2", "n3"}),
        (lambda: make_pod().node_affinity_in("disk", [], "Exists"), {"n1", "n2"}),
        (lambda: make_pod().node_affinity_in("disk", [], "DoesNotExist"), {"n3"}),
        (lambda: make_pod().node_affinity_in("gen", ["3"], "Gt"), {"n1"}),
        (lambda: make_pod().node_affinity_in("gen", ["3"], "Lt"), {"n2"}),
        # terms are ORed
        (
            lambda: make_pod().node_affinity_in("zone", ["a"]).node_affinity_in("zone", ["c"]),
            {"n1", "n3"},
        ),
        # nodeSelector AND affinity
        (
            lambda: make_pod().node_selector({"disk": "hdd"}).node_affinity_in("zone", ["a", "b"]),
            {"n2"},
        ),
        # an empty term list selects nothing
        (
            lambda: make_pod().node_affinity_raw(
                {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
            ),
            set(),
        ),
    ],
)
def test_filter(build, want) -> None:  # type: ignore[no-untyped-def]
    assert _fits(build().obj()) == want


def test_pre_filter_narrows_to_named_nodes_and_detects_conflicts() -> None:
    pl = plugin_for("NodeAffinity", NODES)
    pod = (
        make_pod()
        .node_affinity_raw(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}
                            ]
                        },
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n3"]}
                            ]
                        },
                    ]
                }
            }
        )
        .obj()
    )
    res, s = pl.pre_filter(CycleState(), pod, [])
    assert s is None
    assert res.node_names == {"n1", "n2", "n3"}
    conflict = (
        make_pod()
        .node_affinity_raw(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]},
                                {"key": "metadata.name", "operator": "In", "values": ["n2"]},
                            ]
                        }
                    ]
                }
            }
        )
        .obj()
    )
    _, s = pl.pre_filter(CycleState(), conflict, [])
    assert s is not None
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.reasons == ["pod affinity terms conflict"]
    # a term without a name field allows every node
    mixed = (
        make_pod()
        .node_affinity_raw(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        },
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["c"]}]},
                    ]
                }
            }
        )
        .obj()
    )
    res, s = pl.pre_filter(CycleState(), mixed, [])
    assert res is None
    assert s is None
    _, s = pl.pre_filter(CycleState(), make_pod().obj(), [])
    assert s is not None
    assert s.code == Code.SKIP


def test_score_sums_matching_preferred_weights_and_normalizes() -> None:
    pod = (
        make_pod()
        .preferred_node_affinity(2, "zone", ["a"])
        .preferred_node_affinity(5, "disk", ["ssd", "hdd"])
        .preferred_node_affinity(0, "zone", ["c"])
        .obj()
    )  # weight 0 is ignored
    got = run_score(plugin_for("NodeAffinity", NODES), pod, FakeSnapshot(NODES))
    # raw: n1 = 2 + 5 = 7, n2 = 5, n3 = 0 -> 100 * raw / 7
    assert got == {"n1": 100, "n2": 71, "n3": 0}
    assert (
        run_score(plugin_for("NodeAffinity", NODES), make_pod().obj(), FakeSnapshot(NODES)) is None
    )


def test_added_affinity_from_args_is_enforced_and_scored() -> None:
    cfg = load_config(
        {
            **CFG,
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "NodeAffinity",
                            "args": {
                                "addedAffinity": {
                                    "requiredDuringSchedulingIgnoredDuringExecution": {
                                        "nodeSelectorTerms": [
                                            {
                                                "matchExpressions": [
                                                    {
                                                        "key": "zone",
                                                        "operator": "In",
                                                        "values": ["a", "b"],
                                                    }
                                                ]
                                            }
                                        ]
                                    },
                                    "preferredDuringSchedulingIgnoredDuringExecution": [
                                        {
                                            "weight": 1,
                                            "preference": {
                                                "matchExpressions": [
                                                    {
                                                        "key": "zone",
                                                        "operator": "In",
                                                        "values": ["b"],
                                                    }
                                                ]
                                            },
                                        }
                                    ],
                                }
                            },
                        }
                    ]
                }
            ],
        }
    )
    args = cfg.profiles[0].plugin_config["NodeAffinity"]
    pl = plugin_for("NodeAffinity", NODES, args=args)
    res = run_filter(pl, make_pod().obj(), NODES)
    assert res["n1"] is None
    assert res["n3"] is not None
    assert res["n3"].reasons == ["node(s) didn't match scheduler-enforced node affinity"]
    assert run_score(pl, make_pod().obj(), FakeSnapshot(NODES), ["n1", "n2"]) == {
        "n1": 0,
        "n2": 100,
    }
