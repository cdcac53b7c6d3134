"""Scheduler extenders through `pysched simulate --config`: a real HTTP extender (ours, on
127.0.0.1) driving each verb, as kube-scheduler's HTTPExtender calls them; and the
configuration checks upstream's validation makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from engine_objects import node_dict, pod_dict
from extender_server import ExtenderServer
from test_simulate_cli import results, run

from pysched.config import ConfigError, load_config

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
GPU = "example.com/gpu"


def config(tmp_path: Path, *extenders: dict[str, Any], **top: Any) -> str:
    f = tmp_path / "sched.yaml"
    f.write_text(yaml.safe_dump({**HEAD, **top, "extenders": list(extenders)}))
    return str(f)


def ext(server: ExtenderServer, **fields: Any) -> dict[str, Any]:
    return {"urlPrefix": server.url, **fields}


NODES = [node_dict("n1"), node_dict("n2"), node_dict("n3")]


def gpu_pod(name: str) -> dict[str, Any]:
    p = pod_dict(name)
    p["spec"]["containers"][0]["resources"]["limits"] = {GPU: "1"}
    p["spec"]["containers"][0]["resources"]["requests"][GPU] = "1"
    return p


def test_filter_rejects_nodes_with_reasons_in_the_message(tmp_path: Path) -> None:
    with ExtenderServer() as srv:
        srv.reject = {"n1": "no licence here"}
        srv.unresolvable = {"n2": "wrong rack", "n3": "wrong rack"}
        cfg = config(tmp_path, ext(srv, filterVerb="filter"))
        (r,) = results(tmp_path, [*NODES, pod_dict("p")], "--config", cfg)
    assert r["node"] is None
    assert r["message"].startswith("0/3 nodes are available: 1 no licence here, 2 wrong rack.")
    # the unresolvable ones are no preemption candidates; the failed one is (no victims)
    assert r["message"].endswith("preemption: 0/3 nodes are available: 1 No preemption victims "
                                 "found for incoming pod, 2 Preemption is not helpful for "
                                 "scheduling.")
    assert r["filtered"]["n1"] == {"plugin": srv.url, "code": "Unschedulable",
                                   "reason": "no licence here"}
    assert r["filtered"]["n2"]["code"] == "UnschedulableAndUnresolvable"
    assert r["extenders"][0]["verb"] == "filter"
    assert r["extenders"][0]["failed"] == 1
    # not node-cache-capable: whole Node objects went out, under Go's field names
    verb, body = srv.calls[0]
    assert verb == "filter"
    assert body["NodeNames"] is None
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["n1", "n2", "n3"]
    assert body["Pod"]["metadata"]["name"] == "p"


def test_filter_keeps_one_node(tmp_path: Path) -> None:
    with ExtenderServer() as srv:
        srv.reject = {"n1": "no", "n3": "no"}
        cfg = config(tmp_path, ext(srv, filterVerb="filter"))
        (r,) = results(tmp_path, [*NODES, pod_dict("p")], "--config", cfg)
    assert r["node"] == "n2"


def test_node_cache_capable_sends_names(tmp_path: Path) -> None:
    with ExtenderServer() as srv:
        srv.reject = {"n2": "no"}
        srv.scores = {"n3": 10}
        cfg = config(tmp_path, ext(srv, filterVerb="filter", prioritizeVerb="prioritize",
                                   weight=1, nodeCacheCapable=True))
        (r,) = results(tmp_path, [*NODES, pod_dict("p")], "--config", cfg)
        calls = list(srv.calls)
    assert r["node"] == "n3"
    assert [v for v, _ in calls] == ["filter", "prioritize"]
    assert calls[0][1]["NodeNames"] == ["n1", "n2", "n3"]
    assert calls[0][1]["Nodes"] is None
    assert calls[1][1]["NodeNames"] == ["n1", "n3"]


def test_weighted_prioritize_changes_the_winner(tmp_path: Path) -> None:
    items = [node_dict("big", cpu="16", memory="32Gi"), node_dict("small", cpu="2"),
             pod_dict("p", cpu="1")]
    (plain,) = results(tmp_path, items)
    assert plain["node"] == "big"
    with ExtenderServer() as srv:
        srv.scores = {"small": 10, "big": 0}
        cfg = config(tmp_path, ext(srv, prioritizeVerb="prioritize", weight=5))
        (r,) = results(tmp_path, items, "--config", cfg)
    assert r["node"] == "small"
    # score 10 x weight 5 x (MaxNodeScore 100 / MaxExtenderPriority 10)
    small = r["scores"]["small"]
    assert small[srv.url] == 100
    assert small["total"] - plain["scores"]["small"]["total"] == 500


def test_bind_by_the_extender_for_a_managed_resource(tmp_path: Path) -> None:
    nodes = [node_dict("n1"), node_dict("n2")]
    for n in nodes:
        n["status"]["allocatable"][GPU] = "0"  # the scheduler does not count them: ignored
    with ExtenderServer() as srv:
        cfg = config(tmp_path, ext(srv, bindVerb="bind", managedResources=[
            {"name": GPU, "ignoredByScheduler": True}]))
        rs = results(tmp_path, [*nodes, gpu_pod("gpu"), pod_dict("plain")], "--config", cfg)
        calls = list(srv.calls)
    assert [r["node"] is not None for r in rs] == [True, True]
    # only the pod asking for the managed resource interests the extender
    assert [v for v, _ in calls] == ["bind"]
    args = calls[0][1]
    assert (args["PodName"], args["PodNamespace"], args["Node"]) == (
        "gpu", "default", rs[0]["node"])
    assert args["PodUID"]
    assert rs[0]["extenders"] == [{"extender": srv.url, "verb": "bind", "node": rs[0]["node"]}]


def test_managed_resource_not_ignored_still_counts(tmp_path: Path) -> None:
    nodes = [node_dict("n1")]
    with ExtenderServer() as srv:
        cfg = config(tmp_path, ext(srv, bindVerb="bind",
                                   managedResources=[{"name": GPU}]))
        (r,) = results(tmp_path, [*nodes, gpu_pod("gpu")], "--config", cfg)
    assert r["node"] is None
    assert f"Insufficient {GPU}" in r["message"]


def test_ignorable_extender_down_is_skipped(tmp_path: Path) -> None:
    with ExtenderServer() as srv:
        url = srv.url
    # the server is gone: connection refused
    cfg = config(tmp_path, {"urlPrefix": url, "filterVerb": "filter", "ignorable": True})
    (r,) = results(tmp_path, [*NODES, pod_dict("p")], "--config", cfg)
    assert r["node"] is not None
    assert r["extenders"][0]["ignored"] is True
    assert "Connection refused" in r["extenders"][0]["error"]


def test_non_ignorable_extender_timing_out_fails_the_attempt(tmp_path: Path) -> None:
    with ExtenderServer() as srv:
        srv.delay = 1.0
        cfg = config(tmp_path, ext(srv, filterVerb="filter", httpTimeout="200ms"))
        (r,) = results(tmp_path, [*NODES, pod_dict("p")], "--config", cfg)
    assert r["node"] is None
    assert r["message"] == (f'Post "{srv.url}/filter": context deadline exceeded '
                            "(Client.Timeout exceeded while awaiting headers)")


def test_status_code_other_than_200_is_an_error(tmp_path: Path) -> None:
    with ExtenderServer() as srv:
        srv.status = 500
        cfg = config(tmp_path, ext(srv, filterVerb="filter"))
        (r,) = results(tmp_path, [*NODES, pod_dict("p")], "--config", cfg)
    assert r["message"] == f"failed filter with extender at URL {srv.url}/filter, code 500"


def _preemption_items() -> list[dict[str, Any]]:
    return [
        node_dict("n1", cpu="1"),
        node_dict("n2", cpu="1"),
        pod_dict("low-1", cpu="800m", node="n1", priority=1),
        pod_dict("low-2", cpu="800m", node="n2", priority=5),
        pod_dict("high", cpu="800m", priority=100),
    ]


@pytest.mark.parametrize("cache", [False, True])
def test_preempt_verb_vetoes_a_victim(tmp_path: Path, cache: bool) -> None:
    (plain,) = results(tmp_path, _preemption_items())
    assert plain["nominatedNode"] == "n1"  # the lowest-priority victim
    assert plain["victims"] == ["default/low-1"]
    with ExtenderServer() as srv:
        # MetaVictims carry UIDs only (engine_objects gives uid-NAMESPACE-NAME)
        srv.protected = {"uid-default-low-1"} if cache else {"low-1"}
        cfg = config(tmp_path, ext(srv, preemptVerb="preempt", nodeCacheCapable=cache))
        (r,) = results(tmp_path, _preemption_items(), "--config", cfg)
        calls = list(srv.calls)
    assert r["nominatedNode"] == "n2"
    assert r["victims"] == ["default/low-2"]
    (verb, body), = calls
    assert verb == "preempt"
    key = "NodeNameToMetaVictims" if cache else "NodeNameToVictims"
    assert sorted(body[key]) == ["n1", "n2"]
    assert body["NodeNameToVictims" if cache else "NodeNameToMetaVictims"] is None
    assert r["extenders"][0]["kept"] == ["n2"]


def test_profiles_choose_by_scheduler_name_with_a_disabled_plugin(tmp_path: Path) -> None:
    f = tmp_path / "profiles.yaml"
    f.write_text(yaml.safe_dump({**HEAD, "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "no-taints", "plugins": {
            "multiPoint": {"disabled": [{"name": "TaintToleration"}]}}},
    ]}))
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    p1 = pod_dict("default")
    p2 = pod_dict("other")
    p2["spec"]["schedulerName"] = "no-taints"
    p3 = pod_dict("nobody")
    p3["spec"]["schedulerName"] = "unknown"
    rs = results(tmp_path, [node_dict("t", taints=taint), p1, p2, p3], "--config", str(f))
    assert rs[0]["node"] is None
    assert rs[1]["node"] == "t"
    assert rs[2]["node"] is None
    assert rs[2]["message"] == 'no profile for schedulerName "unknown"'


@pytest.mark.parametrize(("extenders", "error"), [
    ([{"urlPrefix": "http://x", "prioritizeVerb": "p"}],
     r"extenders\[0\]\.weight: Invalid value: 0: must have a positive weight applied to it"),
    ([{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": -1}],
     r"extenders\[0\]\.weight: Invalid value: -1"),
    ([{"urlPrefix": "http://a", "bindVerb": "b"}, {"urlPrefix": "http://b", "bindVerb": "b"}],
     r"extenders: Invalid value: \"found 2 extenders implementing bind\": only one extender "
     "can implement bind"),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": "cpu"}]}],
     r"extenders\[0\]\.managedResources\[0\]\.name: Invalid value: 'cpu'"),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": GPU}]},
      {"urlPrefix": "http://y", "managedResources": [{"name": GPU}]}],
     r"extenders\[1\]\.managedResources\[0\]\.name: .*duplicate extender managed resource"),
    ([{"urlPrefix": "http://x", "httpTimeout": "soon"}],
     r"extenders\[0\]\.httpTimeout: time: invalid duration"),
    ([{"urlPrefix": "http://x", "filterverb": "f"}], r"extenders\[0\]\.filterverb: unknown field"),
    ([{"filterVerb": "f"}], r"extenders\[0\]\.urlPrefix: Required value"),
    ([{"urlPrefix": "http://x", "tlsConfig": {"caData": "%%%"}}],
     r"extenders\[0\]\.tlsConfig\.caData: illegal base64 data"),
])
def test_bad_extender_configs_are_refused(extenders: list[Any], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        load_config({**HEAD, "extenders": extenders})


def test_bad_config_refused_by_simulate_naming_the_field(tmp_path: Path) -> None:
    cfg = config(tmp_path, {"urlPrefix": "http://x", "prioritizeVerb": "p"})
    p = run(tmp_path, [node_dict("n1"), pod_dict("p")], "--config", cfg)
    assert p.returncode == 1
    assert "extenders[0].weight: Invalid value: 0" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_ignored_by_scheduler_replaces_fit_ignored_resources() -> None:
    cfg = load_config({**HEAD, "extenders": [{"urlPrefix": "http://x", "managedResources": [
        {"name": GPU, "ignoredByScheduler": True}, {"name": "example.com/fpga"}]}]})
    assert cfg.profiles[0].plugin_config["NodeResourcesFit"].ignored_resources == [GPU]


def test_decisions_json_shape_unchanged_without_extenders(tmp_path: Path) -> None:
    (r,) = results(tmp_path, [node_dict("n1"), pod_dict("p")])
    assert "extenders" not in r
    assert json.dumps(r)


@pytest.mark.parametrize("cache", [False, True])
def test_nodes_in_the_extenders_order_keep_their_own_scores(tmp_path: Path, cache: bool) -> None:
    items = [node_dict("big", cpu="16", memory="32Gi"), node_dict("small-1", cpu="2"),
             node_dict("small-2", cpu="4"), pod_dict("p", cpu="1")]
    with ExtenderServer() as srv:
        srv.reverse = True
        cfg = config(tmp_path, ext(srv, filterVerb="filter", nodeCacheCapable=cache))
        (r,) = results(tmp_path, items, "--config", cfg)
    (plain,) = results(tmp_path, items)
    assert r["node"] == plain["node"] == "big"
    assert r["scores"] == plain["scores"]
