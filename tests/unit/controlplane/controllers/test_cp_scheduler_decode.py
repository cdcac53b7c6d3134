"""The scheduler runner's informer decodes what the API server already checked with
pysched.decode's ``check_unread=False``: fields kube-scheduler never reads go unchecked
(the default decode, for input no API server saw, checks them: tests/unit/pysched)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pykubelet.api.machinery.errors import DecodeError
from pykubelet.controlplane.controllers.scheduler import InformedObjects, decode_informed
from pykubelet.controlplane.storage.cacher import Attrs, Entry
from pysched.decode import from_dict

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
        "status": {"addresses": "nowhere", "allocatable": {"cpu": "1"}}}
NODE_OK = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
           "status": {"allocatable": {"cpu": "1"}}}


def test_the_informer_decode_skips_fields_the_scheduler_never_reads() -> None:
    with pytest.raises(DecodeError):
        from_dict(NODE)
    node = decode_informed(NODE)
    assert node.metadata.name == "n"
    assert str(node.status.allocatable["cpu"]) == "1"


def test_the_informer_decode_still_names_unknown_keys() -> None:
    with pytest.raises(DecodeError, match=r"status\.bogus: unknown field"):
        decode_informed({**NODE, "status": {"bogus": 1}})


def _entry(key: str, rev: int, obj: dict[str, Any]) -> Entry:
    return Entry(key, orjson.dumps(obj), rev, 1, Attrs("", key, {}, {}))


def test_an_update_reuses_the_object_decoded_at_the_key_s_previous_event() -> None:
    """client-go's informer hands an update handler the old object from its store, not a
    second decode of the same bytes: each (key, revision) is decoded once."""
    decoded: list[dict[str, Any]] = []

    def decode(obj: dict[str, Any]) -> Any:
        decoded.append(obj)
        return decode_informed(obj)

    objects = InformedObjects(decode)
    first = _entry("/nodes/n", 5, NODE_OK)
    node = objects.get(first)
    assert node.metadata.name == "n"
    assert objects.get(first) is node
    assert len(decoded) == 1
    second = _entry("/nodes/n", 6, {**NODE_OK, "metadata": {"name": "n", "labels": {"a": "b"}}})
    changed = objects.get(second)
    assert changed is not node
    assert changed.metadata.labels == {"a": "b"}
    assert objects.get(second) is changed
    assert len(decoded) == 2
    assert objects.get(first) is not node  # an older revision is decoded again, not mixed up
    objects.forget("/nodes/n")  # deleted: nothing kept for it
    assert len(objects) == 0
    objects.get(second)
    assert len(decoded) == 4
