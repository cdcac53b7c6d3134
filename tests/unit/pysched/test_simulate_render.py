"""render_json: simulate's -o json document, byte for byte what ``json.dumps(indent=2)``
wrote before, written by orjson (the pure-Python indenting encoder cost ~35 us a decision at
5,000 nodes: issue 23 item 7). Non-ASCII text keeps json's \\uXXXX escapes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engine_objects import make_node, make_pod

import pysched.simulate as sim


def _results() -> dict[str, Any]:
    nodes = [make_node(f"n{i}", cpu="1") for i in range(4)]
    pods = [make_pod(f"p{i}", cpu="600m") for i in range(6)]
    return sim.simulate(sim.Inputs(nodes=nodes, pods=pods), explain=True)


def test_the_same_bytes_as_json_dumps_without_its_python_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _results()
    want = json.dumps(result, indent=2) + "\n"
    for part in ('"filtered": {}', '"victims": []', "null"):
        assert part in want
    assert '"message": "0/4 nodes are available' in want  # a pod that fits nowhere

    def no_python_encoder(*a: Any, **kw: Any) -> str:
        raise AssertionError("json.dumps ran")

    monkeypatch.setattr(sim.json, "dumps", no_python_encoder)
    assert sim.render_json(result) == want


def test_non_ascii_text_keeps_json_escapes() -> None:
    result = {"results": [{"pod": "default/caf\u00e9", "node": None, "victims": [],
                           "message": "n\u00f6de \u2603", "filtered": {}}]}
    out = sim.render_json(result)
    assert out == json.dumps(result, indent=2) + "\n"
    assert out.isascii()
    assert "\\u00e9" in out


def test_what_orjson_cannot_encode_is_written_by_json() -> None:
    result = {"results": [{"pod": "default/p", "total": 2**70}]}
    assert sim.render_json(result) == json.dumps(result, indent=2) + "\n"


def test_empty_results() -> None:
    assert sim.render_json({"results": []}) == json.dumps({"results": []}, indent=2) + "\n"
