"""pycni.jsonlite reads and writes what json does, for the values a CNI message holds."""

from __future__ import annotations

import json

import pytest

from pycni import jsonlite

VALUES: list[object] = [
    {"cniVersion": "1.0.0", "ips": [{"address": "10.1.0.2/24", "gateway": "10.1.0.1"}],
     "dns": {}, "routes": [], "n": -3, "f": 2.5, "big": 1e100, "t": True, "no": False,
     "nil": None, "text": 'quote " newline \n tab \t é ☃ \x01'},
    {2: "int key", 1.5: "float key", True: "bool key", None: "none key"},
    [], {}, "", 0, -0.0, [[[]], {"a": {"b": [1, (2, 3)]}}],
]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("indent", [None, 4, 1])
def test_dumps_writes_what_json_writes(value: object, indent: int | None) -> None:
    assert jsonlite.dumps(value, indent=indent) == json.dumps(value, indent=indent)


@pytest.mark.parametrize("value", VALUES)
def test_loads_reads_what_json_reads(value: object) -> None:
    text = json.dumps(value, indent=2)
    assert jsonlite.loads(text) == json.loads(text)
    assert jsonlite.loads(text.encode()) == json.loads(text.encode())


def test_loads_keeps_json_numbers_and_constants() -> None:
    out = jsonlite.loads(' \n{"i": 10, "f": 1.0, "e": 1e3, "n": NaN, "inf": -Infinity} \r\n')
    assert out["i"] == 10
    assert isinstance(out["i"], int)
    assert out["f"] == 1.0
    assert isinstance(out["f"], float)
    assert out["e"] == 1000.0
    assert out["n"] != out["n"]
    assert out["inf"] == float("-inf")
    assert jsonlite.dumps(out) == json.dumps(out)


@pytest.mark.parametrize("bad", ["", "   ", "{", '{"a": 1} x', "[1,]", '"\\x"', "nul", b"\xff{}"])
def test_loads_rejects_what_json_rejects_with_a_value_error(bad: str | bytes) -> None:
    with pytest.raises(ValueError):  # json's: JSONDecodeError or UnicodeDecodeError
        json.loads(bad)
    with pytest.raises(ValueError) as info:
        jsonlite.loads(bad)
    if isinstance(bad, str):
        with pytest.raises(json.JSONDecodeError) as ref:
            json.loads(bad)
        assert str(info.value) == str(ref.value)


def test_dumps_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError):
        jsonlite.dumps({"a": object()})
    with pytest.raises(TypeError):
        jsonlite.dumps({("a",): 1})
