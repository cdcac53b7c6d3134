"""`pykubectl why`'s rendering of a recorded decision (the shape pods/scheduling serves)."""

from __future__ import annotations

import io

from pykubelet.cli.kubectl.tabwriter import TabWriter
from pykubelet.cli.kubectl.why import NOT_RECORDED, render


def rendered(decision: dict, nodes: list[str], nominated: str = "") -> list[str]:
    out = io.StringIO()
    w = TabWriter(out, minwidth=0, padding=3, remember_widths=False)
    render(w, decision, nodes, nominated)
    w.flush()
    return out.getvalue().splitlines()


def test_pending_pod_lists_every_node_with_its_rejecting_plugin() -> None:
    d = {"pod": "default/big", "node": None, "nominatedNode": None, "victims": [],
         "message": "0/2 nodes are available: 2 Insufficient cpu.",
         "filtered": {"n2": {"plugin": "NodeResourcesFit", "code": "Unschedulable",
                             "reason": "Insufficient cpu"},
                      "n1": {"plugin": "TaintToleration", "code": "UnschedulableAndUnresolvable",
                             "reason": "node(s) had untolerated taint(s)"}},
         "evaluatedNodes": 2, "feasibleNodes": 0}
    lines = rendered(d, ["n1", "n2"])
    assert lines[0] == "Pod default/big is Pending: no node fits it."
    assert lines[1] == "  0/2 nodes are available: 2 Insufficient cpu."
    assert "Nodes: 2 evaluated, 0 passed the filters." in lines
    table = lines[lines.index(next(x for x in lines if x.startswith("NODE"))):]
    assert table[0].split() == ["NODE", "FILTER", "PLUGIN", "REASON"]
    assert table[1].split()[:3] == ["n1", "rejected", "TaintToleration"]
    assert table[1].endswith("(preemption cannot help)")
    assert table[2].split()[:3] == ["n2", "rejected", "NodeResourcesFit"]
    assert table[2].endswith("Insufficient cpu")


def test_scheduled_pod_shows_winner_scores_and_unrecorded_rejections() -> None:
    d = {"pod": "default/web", "node": "n2", "nominatedNode": None, "victims": [],
         "message": "", "filtered": {},
         "scores": {"n1": {"NodeResourcesFit": 40, "TaintToleration": 100, "total": 300},
                    "n2": {"NodeResourcesFit": 90, "TaintToleration": 100, "total": 413}},
         "evaluatedNodes": 3, "feasibleNodes": 2}
    lines = rendered(d, ["n1", "n2", "n3"])
    assert lines[0] == "Pod default/web was scheduled to n2."
    rows = [x.split() for x in lines if x.startswith(("n1", "n2", "n3"))]
    assert rows[0] == ["n2", "passed", "chosen"]
    assert rows[1] == ["n1", "passed"]
    assert rows[2][:2] == ["n3", "rejected"]
    assert " ".join(rows[2][2:]) == NOT_RECORDED
    scores = lines[lines.index(next(x for x in lines if x.startswith("SCORES"))) + 1:]
    assert scores[0].split() == ["NODE", "TOTAL", "NodeResourcesFit", "TaintToleration"]
    assert scores[1].split() == ["n2", "(chosen)", "413", "90", "100"]
    assert scores[2].split() == ["n1", "300", "40", "100"]


def test_preemption_is_told() -> None:
    d = {"pod": "default/vip", "node": None, "nominatedNode": "n1",
         "victims": ["default/low-1"], "message": "0/1 nodes are available.",
         "filtered": {"n1": {"plugin": "NodeResourcesFit", "code": "Unschedulable",
                             "reason": "Insufficient cpu"}},
         "evaluatedNodes": 1, "feasibleNodes": 0}
    assert "Preemption nominated n1, evicting default/low-1." in rendered(d, ["n1"])
    d["nominatedNode"] = None
    lines = rendered(d, ["n1"], nominated="n1")
    assert any(x.startswith("It is nominated to n1") for x in lines)


def test_profile_and_extender_verdicts_are_shown() -> None:
    url = "http://127.0.0.1:9999/scheduler"
    d = {"pod": "default/gpu", "node": None, "nominatedNode": None, "victims": [],
         "message": "0/2 nodes are available: 2 no licence here.",
         "filtered": {n: {"plugin": url, "code": "Unschedulable", "reason": "no licence here"}
                      for n in ("n1", "n2")},
         "evaluatedNodes": 2, "feasibleNodes": 0, "profile": "gpu-scheduler",
         "extenders": [{"extender": url, "verb": "filter", "passed": 0, "failed": 2,
                        "unresolvable": 0},
                       {"extender": "http://other", "verb": "filter", "error": "refused",
                        "ignored": True}]}
    lines = rendered(d, ["n1", "n2"])
    assert "Decided by profile gpu-scheduler (the pod's schedulerName)." in lines
    assert [x.split()[:3] for x in lines if x.startswith("n1")] == [["n1", "rejected", url]]
    i = lines.index(next(x for x in lines if x.startswith("EXTENDER")))
    assert lines[i].split() == ["EXTENDER", "VERB", "RESULT"]
    assert lines[i + 1].split() == [url, "filter", "0", "passed,", "2", "failed,", "0",
                                    "unresolvable"]
    assert lines[i + 2].endswith("error: refused (ignorable: skipped)")
