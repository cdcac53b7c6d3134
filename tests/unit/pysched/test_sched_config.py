"""KubeSchedulerConfiguration v1: defaults, plugin merging, strictness, args, frameworks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pysched.config import (
    ConfigError,
    PluginRef,
    PluginSet,
    build_frameworks,
    default_config,
    load_config,
    merge_plugin_set,
)
from pysched.framework.runtime import FrameworkDeps, FrameworkError
from pysched.plugins.args import (
    InterPodAffinityArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
)

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def cfg(**kw: Any) -> dict[str, Any]:
    return {**HEAD, **kw}


def test_defaults() -> None:
    c = default_config()
    assert c.percentage_of_nodes_to_score == 0
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (1, 10)
    assert [p.scheduler_name for p in c.profiles] == ["default-scheduler"]
    pc = c.profiles[0].plugin_config
    assert isinstance(pc["NodeResourcesFit"], NodeResourcesFitArgs)
    assert pc["NodeResourcesFit"].scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in pc["NodeResourcesFit"].scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    assert pc["InterPodAffinity"] == InterPodAffinityArgs(1, False)
    assert pc["PodTopologySpread"] == PodTopologySpreadArgs([], "System")
    assert pc["DefaultPreemption"].min_candidate_nodes_percentage == 10
    assert pc["DefaultPreemption"].min_candidate_nodes_absolute == 100


def test_default_framework_plugin_order_and_weights() -> None:
    fw = build_frameworks(default_config(), FrameworkDeps())["default-scheduler"]
    pts = fw.list_plugins()
    assert pts["queueSort"] == ["PrioritySort"]
    assert pts["preEnqueue"] == ["SchedulingGates"]
    assert pts["filter"] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ]
    assert pts["postFilter"] == ["DynamicResources", "DefaultPreemption"]
    assert pts["bind"] == ["DefaultBinder"]
    assert fw.score_plugin_weight == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "VolumeBinding": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }


def test_merge_plugin_set_like_upstream() -> None:
    d = PluginSet([PluginRef("A"), PluginRef("B", 1), PluginRef("C")])
    got = merge_plugin_set(d, PluginSet([PluginRef("B", 5), PluginRef("X")], [PluginRef("C")]))
    assert [(p.name, p.weight) for p in got.enabled] == [("A", None), ("B", 5), ("X", None)]
    got = merge_plugin_set(d, PluginSet([PluginRef("X")], [PluginRef("*")]))
    assert [p.name for p in got.enabled] == ["X"]


def test_custom_profile_reweights_disables_and_changes_strategy() -> None:
    c = load_config(
        cfg(
            profiles=[
                {
                    "schedulerName": "packer",
                    "percentageOfNodesToScore": 50,
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                            "disabled": [{"name": "ImageLocality"}],
                        },
                        "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
                        "filter": {"disabled": [{"name": "NodePorts"}]},
                    },
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": {"type": "MostAllocated"}},
                        }
                    ],
                }
            ]
        )
    )
    fw = build_frameworks(c, FrameworkDeps())["packer"]
    pts = fw.list_plugins()
    assert "ImageLocality" not in pts["score"]
    assert "NodeResourcesBalancedAllocation" not in pts["score"]
    assert "NodePorts" not in pts["filter"]
    assert "NodePorts" in pts["preFilter"]  # disabled only for filter
    assert fw.score_plugin_weight["NodeResourcesFit"] == 5
    assert fw.percentage_of_nodes_to_score == 50
    assert fw.plugins_map["NodeResourcesFit"].strategy == "MostAllocated"


def test_explicit_point_overrides_multipoint_order_and_weight() -> None:
    c = load_config(
        cfg(
            profiles=[
                {
                    "plugins": {
                        "score": {
                            "enabled": [
                                {"name": "ImageLocality", "weight": 7},
                                {"name": "TaintToleration", "weight": 1},
                            ]
                        }
                    }
                }
            ]
        )
    )
    fw = build_frameworks(c, FrameworkDeps())["default-scheduler"]
    assert fw.list_plugins()["score"][:2] == ["ImageLocality", "TaintToleration"]
    assert fw.score_plugin_weight["ImageLocality"] == 7
    assert fw.score_plugin_weight["TaintToleration"] == 1


def test_multiple_profiles_need_names_and_share_queue_sort(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "podInitialBackoffSeconds: 2\n"
        "podMaxBackoffSeconds: 20\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "- schedulerName: no-scoring\n"
        "  plugins:\n"
        "    preScore: {disabled: [{name: '*'}]}\n"
        "    score: {disabled: [{name: '*'}]}\n"
    )
    c = load_config(f)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (2, 20)
    fws = build_frameworks(c, FrameworkDeps())
    assert set(fws) == {"default-scheduler", "no-scoring"}
    assert not fws["no-scoring"].has_score_plugins()
    assert fws["default-scheduler"].has_score_plugins()
    with pytest.raises(ConfigError, match=r"profiles\[1\]\.schedulerName: Required"):
        load_config(cfg(profiles=[{"schedulerName": "a"}, {}]))
    with pytest.raises(ConfigError, match="Duplicate"):
        load_config(cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]))


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (cfg(bogus=1), r"^bogus: unknown field"),
        (
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1beta3",
                "kind": "KubeSchedulerConfiguration",
            },
            "apiVersion",
        ),
        (cfg(kind="Other"), "kind"),
        (cfg(percentageOfNodesToScore=101), "percentageOfNodesToScore"),
        (cfg(podInitialBackoffSeconds=0), "podInitialBackoffSeconds"),
        (cfg(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2), "podMaxBackoffSeconds"),
        (cfg(profiles=[{"schedulerNam": "x"}]), r"profiles\[0\]\.schedulerNam: unknown field"),
        (cfg(profiles=[{"plugins": {"filtre": {}}}]), r"profiles\[0\]\.plugins\.filtre"),
        (
            cfg(profiles=[{"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}]),
            r"profiles\[0\]\.plugins\.filter\.enabled\[0\]\.name: .*'NoSuchPlugin': plugin does",
        ),
        (
            cfg(profiles=[{"plugins": {"score": {"enabled": [{"name": "SelectorSpread"}]}}}]),
            "was removed",
        ),
        (
            cfg(
                profiles=[
                    {"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": -1}]}}}
                ]
            ),
            "weight",
        ),
        (
            cfg(profiles=[{"pluginConfig": [{"name": "Nope", "args": {}}]}]),
            r"pluginConfig\[0\]\.name",
        ),
        (
            cfg(profiles=[{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"x": 1}}]}]),
            r"pluginConfig\[0\]\.args\.x: unknown field",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {"scoringStrategy": {"type": "Random"}},
                            }
                        ]
                    }
                ]
            ),
            r"scoringStrategy\.type: Unsupported",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
                            }
                        ]
                    }
                ]
            ),
            r"shape: Required",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "type": "RequestedToCapacityRatio",
                                        "requestedToCapacityRatio": {
                                            "shape": [
                                                {"utilization": 50, "score": 1},
                                                {"utilization": 40, "score": 2},
                                            ]
                                        },
                                    }
                                },
                            }
                        ]
                    }
                ]
            ),
            "increasing",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "resources": [{"name": "cpu", "weight": 101}]
                                    }
                                },
                            }
                        ]
                    }
                ]
            ),
            r"resources\[0\]\.weight",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}
                        ]
                    }
                ]
            ),
            "hardPodAffinityWeight",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "PodTopologySpread",
                                "args": {
                                    "defaultConstraints": [
                                        {
                                            "maxSkew": 1,
                                            "topologyKey": "z",
                                            "whenUnsatisfiable": "DoNotSchedule",
                                        }
                                    ]
                                },
                            }
                        ]
                    }
                ]
            ),
            "defaultingType must be List",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {
                                "name": "DefaultPreemption",
                                "args": {
                                    "minCandidateNodesPercentage": 0,
                                    "minCandidateNodesAbsolute": 0,
                                },
                            }
                        ]
                    }
                ]
            ),
            "cannot be zero",
        ),
        (
            cfg(
                profiles=[
                    {
                        "pluginConfig": [
                            {"name": "NodeResourcesFit", "args": {"kind": "InterPodAffinityArgs"}}
                        ]
                    }
                ]
            ),
            r"args\.kind",
        ),
        (
            cfg(profiles=[{"pluginConfig": [{"name": "NodeName", "args": {"a": 1}}]}]),
            "takes no args",
        ),
        (
            cfg(extenders=[{"urlPrefix": "http://x", "prioritizeVerb": "p"}]),
            r"extenders\[0\]\.weight: Invalid value: 0: must have a positive weight",
        ),
        (
            cfg(
                profiles=[
                    {
                        "schedulerName": "a",
                        "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}},
                    },
                    {
                        "schedulerName": "b",
                        "plugins": {"queueSort": {"disabled": [{"name": "*"}], "enabled": []}},
                    },
                ]
            ),
            "must be the same for all profiles",
        ),
        ("{not yaml", "invalid YAML"),
    ],
)
def test_invalid_configs_name_the_field(doc: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(doc)


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (cfg(percentageOfNodesToScore=True),
         r"^percentageOfNodesToScore: expected an integer, got bool$"),
        (cfg(profiles=[{"schedulerName": 3}]),
         r"^profiles\[0\]\.schedulerName: expected a string, got int$"),
        (cfg(profiles="nope"), r"^profiles: expected a list, got str$"),
    ],
)
def test_a_field_of_the_wrong_type_is_named_with_the_type_expected(doc: Any, match: str) -> None:
    """The typed field readers: a boolean is not an integer (as Go decodes), and the error
    names the field, the type wanted and the type given."""
    with pytest.raises(ConfigError, match=match):
        load_config(doc)


def test_framework_build_errors() -> None:
    c = load_config(
        cfg(
            profiles=[
                {
                    "plugins": {
                        "queueSort": {"disabled": [{"name": "*"}]},
                        "multiPoint": {"disabled": [{"name": "*"}]},
                    }
                }
            ]
        )
    )
    with pytest.raises(FrameworkError, match="queue sort"):
        build_frameworks(c, FrameworkDeps())
    c = load_config(
        cfg(profiles=[{"plugins": {"bind": {"disabled": [{"name": "DefaultBinder"}]}}}])
    )
    with pytest.raises(FrameworkError, match="bind plugin"):
        build_frameworks(c, FrameworkDeps())
    c = load_config(cfg(profiles=[{"plugins": {"score": {"enabled": [{"name": "NodeName"}]}}}]))
    with pytest.raises(FrameworkError, match="does not extend score"):
        build_frameworks(c, FrameworkDeps())


def test_handle_factory_per_profile() -> None:
    c = load_config(cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}]))
    seen: list[str] = []

    def factory(prof):  # type: ignore[no-untyped-def]
        seen.append(prof.scheduler_name)
        return FrameworkDeps(extras={"who": prof.scheduler_name})

    fws = build_frameworks(c, factory)
    assert seen == ["a", "b"]
    assert fws["b"].extra("who") == "b"


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(str(tmp_path / "nope.yaml"))
    # YAML text is accepted too
    c = load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 30\n"
    )
    assert c.percentage_of_nodes_to_score == 30
