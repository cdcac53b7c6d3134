"""The slim decode (keep_unmodelled=False): same types, same checks, nothing unmodelled kept."""

from __future__ import annotations

import pytest

from pykubelet.api.machinery import codec
from pykubelet.api.machinery.errors import DecodeError
from pykubelet.api.types import Pod

DOC = {
    "metadata": {"name": "p", "generation": 3},
    "spec": {
        "containers": [{"name": "c", "image": "i", "resizePolicy": [{"resourceName": "cpu",
                                                                     "restartPolicy": "x"}]}],
        "runtimeClassName": "rc",
    },
}


def test_slim_decode_drops_unmodelled_fields_at_every_level() -> None:
    full = codec.decode(Pod, DOC)
    assert full.spec.unmodelled == {"runtimeClassName": "rc"}
    assert "resizePolicy" in full.spec.containers[0].unmodelled
    slim = codec.decode(Pod, DOC, keep_unmodelled=False)
    assert slim.spec.unmodelled == {}
    assert slim.spec.containers[0].unmodelled == {}
    assert slim.metadata.name == "p"
    assert slim.metadata.generation == 3
    assert slim.spec.containers[0].image == "i"


def test_slim_decode_still_checks_unmodelled_fields_and_unknown_keys() -> None:
    bad = {"spec": {"containers": [], "runtimeClassName": 5}}
    with pytest.raises(DecodeError, match=r"spec\.runtimeClassName"):
        codec.decode(Pod, bad, keep_unmodelled=False)
    with pytest.raises(DecodeError, match=r"spec\.foo"):
        codec.decode(Pod, {"spec": {"foo": 1}}, keep_unmodelled=False)
