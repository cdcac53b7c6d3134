"""-f arguments read as kubectl reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.cli.kubectl.manifests import parse, read_all

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\n"


def test_multi_document_yaml_lists_and_json(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POD % "a" + "---\n---\n" + POD % "b")
    (tmp_path / "b.json").write_text('{"apiVersion": "v1", "kind": "List", "items": ['
                                     '{"apiVersion": "v1", "kind": "Pod", '
                                     '"metadata": {"name": "c"}}]}')
    (tmp_path / "notes.txt").write_text("ignored")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "d.yml").write_text(POD % "d")
    names = [m.name for m in read_all([str(tmp_path)])]
    assert names == ["a", "b", "c"]
    assert [m.name for m in read_all([str(tmp_path)], recursive=True)] == ["a", "b", "c", "d"]
    assert {m.source for m in read_all([str(tmp_path)])} == {str(tmp_path / "a.yaml"),
                                                             str(tmp_path / "b.json")}


def test_dates_stay_strings_as_in_kubernetes() -> None:
    (m,) = parse(POD % "a" + "data: {day: 2024-01-02}\n", "x")
    assert m.obj["data"]["day"] == "2024-01-02"


@pytest.mark.parametrize(("text", "words"), [
    ("kind: Pod\nmetadata: {name: a}\n", "apiVersion not set"),
    ("a: [\n", "error parsing x.yaml"),
    ("- 1\n- 2\n", "a manifest must be a mapping"),
    ("apiVersion: v1\nkind: Pod\n1: x\n", "is not a string"),
])
def test_bad_manifests_are_one_clear_error(text: str, words: str) -> None:
    with pytest.raises(CommandError, match=words):
        list(parse(text, "x.yaml"))


def test_missing_path_is_kubectls_error() -> None:
    with pytest.raises(CommandError, match=r'the path "nope\.yaml" does not exist'):
        read_all(["nope.yaml"])
