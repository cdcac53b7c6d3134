"""The scheduler runner's informer decodes what the API server already checked with
pysched.decode's ``check_unread=False``: fields kube-scheduler never reads go unchecked
(the default decode, for input no API server saw, checks them: tests/unit/pysched)."""

from __future__ import annotations

import pytest

from pykubelet.api.machinery.errors import DecodeError
from pykubelet.controlplane.controllers.scheduler import decode_informed
from pysched.decode import from_dict

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
        "status": {"addresses": "nowhere", "allocatable": {"cpu": "1"}}}


def test_the_informer_decode_skips_fields_the_scheduler_never_reads() -> None:
    with pytest.raises(DecodeError):
        from_dict(NODE)
    node = decode_informed(NODE)
    assert node.metadata.name == "n"
    assert str(node.status.allocatable["cpu"]) == "1"


def test_the_informer_decode_still_names_unknown_keys() -> None:
    with pytest.raises(DecodeError, match=r"status\.bogus: unknown field"):
        decode_informed({**NODE, "status": {"bogus": 1}})
