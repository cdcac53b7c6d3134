"""The reason strings are kube-scheduler's, character for character (v1.36 sources)."""

from __future__ import annotations

from pysched.plugins import reasons


def test_reason_strings_match_upstream() -> None:
    assert reasons.ERR_REASON_UNSCHEDULABLE == "node(s) were unschedulable"
    assert reasons.ERR_REASON_NODE_NAME == "node(s) didn't match the requested node name"
    assert reasons.ERR_REASON_UNTOLERATED == "node(s) had untolerated taint(s)"
    assert reasons.ERR_REASON_POD == "node(s) didn't match Pod's node affinity/selector"
    assert reasons.ERR_REASON_ENFORCED == "node(s) didn't match scheduler-enforced node affinity"
    assert (
        reasons.ERR_REASON_NODE_PORTS
        == "node(s) didn't have free ports for the requested pod ports"
    )
    assert reasons.ERR_REASON_AFFINITY == "node(s) didn't match pod affinity rules"
    assert reasons.ERR_REASON_ANTI_AFFINITY == "node(s) didn't match pod anti-affinity rules"
    assert (
        reasons.ERR_REASON_EXISTING_ANTI_AFFINITY
        == "node(s) didn't satisfy existing pods anti-affinity rules"
    )
    assert (
        reasons.ERR_REASON_CONSTRAINTS_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints"
    )
    assert (
        reasons.ERR_REASON_NODE_LABEL_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints (missing required label)"
    )
    assert reasons.TOO_MANY_PODS == "Too many pods"
    assert reasons.insufficient("cpu") == "Insufficient cpu"
    assert reasons.NO_NEW_CLAIMS == "no new claims to deallocate"
