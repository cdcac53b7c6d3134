"""Fuzzed KubeSchedulerConfiguration (issue 29 item 3): mutated configurations (profiles,
plugin sets, every in-tree plugin's args, extenders) decode or raise ConfigError, whose
message starts with the path of the field it is about."""

from __future__ import annotations

import re
from typing import Any

from fuzz_strategies import FUZZ, JSON, check_message, mutated
from hypothesis import example, given
from hypothesis import strategies as st

from pysched.config import ConfigError, load_config

CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "parallelism": 16, "percentageOfNodesToScore": 50,
    "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 10,
    "profiles": [{
        "schedulerName": "default-scheduler",
        "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}],
                              "disabled": [{"name": "ImageLocality"}]},
                    "multiPoint": {"enabled": [{"name": "TaintToleration"}]}},
        "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 1}],
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                                       {"utilization": 100, "score": 10}]}}}},
            {"name": "PodTopologySpread", "args": {"defaultingType": "List",
                                                   "defaultConstraints": [{
                                                       "maxSkew": 1,
                                                       "topologyKey": "zone",
                                                       "whenUnsatisfiable": "DoNotSchedule"}]}},
            {"name": "DefaultPreemption", "args": {"minCandidateNodesPercentage": 10,
                                                   "minCandidateNodesAbsolute": 100}},
            {"name": "NodeAffinity", "args": {"addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                    "matchExpressions": [{"key": "a", "operator": "In",
                                          "values": ["b"]}]}]}}}},
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 1}},
        ]}],
    "extenders": [{"urlPrefix": "http://127.0.0.1:1/", "filterVerb": "filter",
                   "weight": 1, "managedResources": [{"name": "example.com/foo"}]}],
}
PATH = re.compile(r"^[^:\s][^\n]*: ")  # "profiles[0].plugins.score: ...", a field first


@FUZZ
@given(st.one_of(mutated(CONFIG), JSON))
@example({"": None})  # ": unknown field" named nothing
@example({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {" ": 1}}]}]})
def test_configurations_load_or_name_the_bad_field(doc: Any) -> None:
    message = ""
    try:
        load_config(doc if isinstance(doc, dict) else {"profiles": doc})
    except ConfigError as exc:
        check_message(exc)
        message = str(exc)
    assert not message or PATH.match(message), message
