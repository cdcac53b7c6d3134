"""`pysched simulate` end to end: its click command in this process (a fresh interpreter per
case cost 1-2.7 s of imports each on this machine: issue 23 item 8), and through the
installed console script (test_reads_standard_input)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from engine_objects import node_dict, pod_dict


def pysched_exe() -> str:
    exe = Path(sys.executable).parent / "pysched"
    if exe.exists():
        return str(exe)
    found = shutil.which("pysched")
    assert found, "the pysched console script is not installed"
    return found


def run(
    tmp_path: Path, items: list[dict[str, Any]], *args: str, fmt: str = "yaml"
) -> subprocess.CompletedProcess[str]:
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    f = tmp_path / f"cluster.{fmt}"
    f.write_text(yaml.safe_dump(doc) if fmt == "yaml" else json.dumps(doc))
    return simulate(["simulate", str(f), *args])


def simulate(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``pysched <argv>`` run by click in this process, its exit status and outputs as a
    subprocess's would be."""
    from click.testing import CliRunner

    from pysched.cli import main

    res = CliRunner().invoke(main, argv, catch_exceptions=False)
    return subprocess.CompletedProcess(["pysched", *argv], res.exit_code, res.stdout,
                                       res.stderr)


def results(tmp_path: Path, items: list[dict[str, Any]], *args: str) -> list[dict[str, Any]]:
    p = run(tmp_path, items, "-o", "json", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["results"]


TAINT = [{"key": "k", "value": "v", "effect": "NoSchedule"}]


def test_scores_and_choice(tmp_path: Path) -> None:
    items = [
        node_dict("n1", cpu="2", memory="4Gi"),
        node_dict("n2", cpu="4", memory="8Gi"),
        node_dict("n3", cpu="8", memory="8Gi", taints=TAINT),
        pod_dict("web-0", cpu="3", memory=None, node="n2", priority=1),
        pod_dict("web-1", cpu="1", memory="1Gi"),
    ]
    (r,) = results(tmp_path, items)
    assert r["pod"] == "default/web-1"
    assert r["node"] == "n1"
    assert r["nominatedNode"] is None
    assert r["victims"] == []
    assert r["message"] == ""
    assert r["filtered"] == {
        "n3": {
            "plugin": "TaintToleration",
            "code": "UnschedulableAndUnresolvable",
            "reason": "node(s) had untolerated taint(s)",
        }
    }
    # LeastAllocated: n1 cpu 50, memory 75 -> 62; n2 cpu 0, memory 85 -> 42.
    # BalancedAllocation (v1.36): n1 with pod std .125 -> 87, without 100 -> 50+(50+87-100)//2 = 68
    assert r["scores"] == {
        "n1": {
            "TaintToleration": 100,
            "NodeResourcesFit": 62,
            "NodeResourcesBalancedAllocation": 68,
            "ImageLocality": 0,
            "total": 430,
        },
        "n2": {
            "TaintToleration": 100,
            "NodeResourcesFit": 42,
            "NodeResourcesBalancedAllocation": 72,
            "ImageLocality": 0,
            "total": 414,
        },
    }


def test_fit_error_message_and_per_node_reasons(tmp_path: Path) -> None:
    items = [node_dict(f"a{i}", cpu="1") for i in range(2)]
    items += [node_dict(f"t{i}", cpu="8", taints=TAINT) for i in range(3)]
    items.append(pod_dict("big", cpu="2"))
    (r,) = results(tmp_path, items)
    assert r["node"] is None
    assert r["message"] == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s). "
        "no new claims to deallocate, preemption: 0/5 nodes are available: "
        "5 Preemption is not helpful for scheduling."
    )
    assert r["filtered"]["a0"] == {
        "plugin": "NodeResourcesFit",
        "code": "UnschedulableAndUnresolvable",  # 2 cpu > the node's whole 1 cpu
        "reason": "Insufficient cpu",
    }
    assert r["filtered"]["t2"]["plugin"] == "TaintToleration"
    assert "scores" not in r


def test_preemption_evicts_lowest_priority_and_rebinds(tmp_path: Path) -> None:
    items = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
        node_dict("n1", cpu="2"),
        node_dict("n2", cpu="2"),
        pod_dict("a-low", cpu="1", node="n1", priority=1),
        pod_dict("a-mid", cpu="1", node="n1", priority=50),
        pod_dict("b-mid", cpu="1", node="n2", priority=50),
        pod_dict("b-mid2", cpu="1", node="n2", priority=50),
        pod_dict("urgent", cpu="1"),
    ]
    items[-1]["spec"]["priorityClassName"] = "high"
    (r,) = results(tmp_path, items)
    assert r["nominatedNode"] == "n1"
    assert r["victims"] == ["default/a-low"]
    assert r["node"] == "n1"
    assert r["message"] == ""


def test_preemption_respects_pdb_and_policy_never(tmp_path: Path) -> None:
    items = [
        node_dict("n1", cpu="1"),
        node_dict("n2", cpu="1"),
        pod_dict("guarded", cpu="1", node="n1", priority=1, labels={"app": "db"}),
        pod_dict("other", cpu="1", node="n2", priority=5),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
            "status": {"disruptionsAllowed": 0},
        },
        pod_dict("polite", cpu="1", priority=100, preemption_policy="Never"),
        pod_dict("urgent", cpu="1", priority=100),
    ]
    polite, urgent = results(tmp_path, items)
    assert polite["node"] is None
    assert polite["message"].endswith(
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    assert urgent["victims"] == ["default/other"]  # the PDB-protected pod is spared
    assert urgent["node"] == "n2"


def test_pending_pods_in_list_order_each_decision_assumed(tmp_path: Path) -> None:
    items = [node_dict("only", cpu="1")] + [pod_dict(f"p{i}", cpu="600m") for i in range(2)]
    first, second = results(tmp_path, items)
    assert first["node"] == "only"
    assert second["node"] is None
    assert second["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_nominated_pod_counts_for_later_pods(tmp_path: Path) -> None:
    items = [
        node_dict("n1", cpu="2"),
        pod_dict("first", cpu="1500m", priority=100, nominated="n1"),
        pod_dict("second", cpu="1", priority=10),
    ]
    first, second = results(tmp_path, items)
    # "second" is scheduled after "first" (list order); "first" was bound by then
    assert first["node"] == "n1"
    assert second["node"] is None


def test_nominated_pod_reserves_room_ahead_of_its_turn(tmp_path: Path) -> None:
    items = [
        node_dict("n1", cpu="2"),
        pod_dict("second", cpu="1", priority=10),
        pod_dict("first", cpu="1500m", priority=100, nominated="n1"),
    ]
    second, first = results(tmp_path, items)
    assert second["node"] is None  # the higher-priority nominated pod holds n1
    assert "Insufficient cpu" in second["message"]
    assert first["node"] == "n1"


def test_node_affinity_prefilter_message(tmp_path: Path) -> None:
    aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
                ]
            }
        }
    }
    items = [node_dict("n1"), node_dict("n2", cpu="1"), pod_dict("p", cpu="2", affinity=aff)]
    (r,) = results(tmp_path, items)
    assert r["node"] is None
    assert r["message"].startswith(
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    assert r["filtered"]["n1"]["reason"] == "node(s) didn't satisfy plugin(s) [NodeAffinity]"


def test_explain_shows_raw_normalised_weighted(tmp_path: Path) -> None:
    items = [
        node_dict("n1", taints=[{"key": "soft", "value": "", "effect": "PreferNoSchedule"}]),
        node_dict("n2"),
        node_dict("n3", taints=TAINT),
        pod_dict("p"),
    ]
    (r,) = results(tmp_path, items, "--explain")
    exp = r["explain"]
    assert exp["n3"]["filter"]["plugin"] == "TaintToleration"
    tt1 = exp["n1"]["scores"]["TaintToleration"]
    tt2 = exp["n2"]["scores"]["TaintToleration"]
    assert (tt1["raw"], tt1["normalized"], tt1["weighted"]) == (1, 0, 0)
    assert (tt2["raw"], tt2["normalized"], tt2["weighted"]) == (0, 100, 300)
    assert exp["n2"]["total"] == r["scores"]["n2"]["total"]
    assert r["node"] == "n2"
    p = run(tmp_path, items, "--explain")
    assert p.returncode == 0
    assert "TaintToleration: raw=1 normalized=0 weighted=0" in p.stdout
    assert (
        "n3: TaintToleration: node(s) had untolerated taint(s) (UnschedulableAndUnresolvable)"
        in p.stdout
    )


def test_json_input_and_text_output(tmp_path: Path) -> None:
    p = run(tmp_path, [node_dict("n1"), pod_dict("p")], fmt="json")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "default/p -> n1"


def test_config_file_changes_weights(tmp_path: Path) -> None:
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": "default-scheduler",
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {
                                    "scoringStrategy": {
                                        "type": "MostAllocated",
                                        "resources": [{"name": "cpu", "weight": 1}],
                                    }
                                },
                            }
                        ],
                    }
                ],
            }
        )
    )
    items = [node_dict("small", cpu="2"), node_dict("large", cpu="16"), pod_dict("p", cpu="1")]
    (least,) = results(tmp_path, items)
    (most,) = results(tmp_path, items, "--config", str(cfg))
    assert least["node"] == "large"
    assert most["node"] == "small"


@pytest.mark.parametrize(
    ("items", "needle"),
    [
        (
            [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "x"},
                    "spec": {"containers": [{"name": "c", "bogus": 1}]},
                }
            ],
            "items[0].spec.containers[0].bogus: unknown field",
        ),
        ([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}], "items[0].kind"),
        (
            [
                pod_dict("p")
                | {"spec": {"priorityClassName": "nope", "containers": [{"name": "c"}]}}
            ],
            "items[0].spec.priorityClassName: no PriorityClass with name nope was found",
        ),
    ],
)
def test_bad_input_names_the_field(tmp_path: Path, items: list[Any], needle: str) -> None:
    p = run(tmp_path, items)
    assert p.returncode == 1
    assert needle in p.stderr
    assert p.stdout == ""


def test_fields_the_scheduler_never_reads_are_not_checked_in_bulk_input(tmp_path: Path) -> None:
    """The loader decodes with pysched.decode's check_unread=False: an ill-typed node
    address or probe (never read by kube-scheduler) does not stop the simulation, while a
    misspelt key still does (test_bad_input_names_the_field)."""
    n = node_dict("n1") | {"status": node_dict("n1")["status"] | {"addresses": "nowhere"}}
    p = pod_dict("p")
    p["spec"]["containers"][0]["livenessProbe"] = 5
    (result,) = results(tmp_path, [n, p])
    assert result["node"] == "n1"


def test_not_a_list(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("kind: Pod\napiVersion: v1\n")
    p = subprocess.run(
        [pysched_exe(), "simulate", str(f)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 1
    assert "kind: expected 'List'" in p.stderr


def test_bad_config_names_the_field(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nbogus: 1\n"
    )
    p = run(tmp_path, [node_dict("n1")], "--config", str(cfg))
    assert p.returncode == 1
    assert "bogus" in p.stderr


def test_reads_standard_input() -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": [node_dict("n1"), pod_dict("p")]}
    p = subprocess.run(
        [pysched_exe(), "simulate", "-", "-o", "json"],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["results"][0]["node"] == "n1"


def test_warns_about_nodes_without_pod_capacity(tmp_path: Path) -> None:
    n = node_dict("bare")
    del n["status"]["allocatable"]["pods"]
    p = run(tmp_path, [n, pod_dict("p")], "-o", "json")
    assert p.returncode == 0
    assert "items[0] (node bare): status.allocatable has no 'pods'" in p.stderr
    assert json.loads(p.stdout)["results"][0]["message"].startswith(
        "0/1 nodes are available: 1 Too many pods."
    )


def test_the_objects_are_frozen_at_exit_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter's last collections at exit walked everything the run made (~0.2 s at
    5,000 nodes: issue 23 item 7): the command has gc.freeze run at exit, once."""
    import atexit
    import gc

    import pysched.cli as cli

    registered: list[Any] = []
    monkeypatch.setattr(cli.atexit, "register", registered.append)
    monkeypatch.setattr(cli.atexit, "unregister", lambda fn: registered.remove(fn)
                        if fn in registered else None)
    items = [node_dict("n1"), pod_dict("p1")]
    for _ in range(2):
        assert results(tmp_path, items)[0]["node"] == "n1"
    assert registered == [gc.freeze]
    assert cli.atexit is atexit
