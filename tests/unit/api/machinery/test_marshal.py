"""marshal.sorted_maps: json.Marshal's order of an untyped value (every map's keys sorted,
lists kept in order), the one copy revision_patch and pykubectl's struct_order share."""

from __future__ import annotations

import json

from pykubelet.api.machinery.marshal import sorted_maps


def test_every_map_at_every_depth_is_sorted_and_lists_keep_their_order() -> None:
    value = {"b": [{"z": 1, "a": {"y": None, "c": 2}}, 3, "x"], "a": {"k": [], "e": {}}}
    out = sorted_maps(value)
    assert json.dumps(out) == ('{"a": {"e": {}, "k": []}, '
                               '"b": [{"a": {"c": 2, "y": null}, "z": 1}, 3, "x"]}')
    assert out == value  # the same value, only its maps' order differs
    assert list(value) == ["b", "a"]  # the input is not changed


def test_scalars_come_back_as_they_are() -> None:
    for scalar in (None, 0, "s", 1.5, True):
        assert sorted_maps(scalar) is scalar
