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


def test_a_view_fills_what_it_reads_and_checks_the_rest() -> None:
    from pykubelet.api.types import Container, PodSpec

    view = codec.View({PodSpec: ("containers",), Container: ("name",)})
    doc = {"spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "A"}]}],
                    "hostname": "h", "volumes": [{"name": "v", "emptyDir": {}}]}}
    pod = codec.decode(Pod, doc, view=view)
    assert pod.spec.containers[0].name == "c"
    assert pod.spec.containers[0].image == ""  # not read: its default
    assert pod.spec.hostname == ""
    assert pod.spec.volumes == []
    assert pod.spec.unmodelled == {}
    assert codec.decode(Pod, doc).spec.hostname == "h"  # the complete decode is unchanged
    with pytest.raises(DecodeError, match=r"spec\.hostname: expected string"):
        codec.decode(Pod, {"spec": {"hostname": 5}}, view=view)
    with pytest.raises(DecodeError, match=r"spec\.containers\[0\]\.env\[0\]\.bogus"):
        codec.decode(Pod, {"spec": {"containers": [{"name": "c", "env": [{"bogus": 1}]}]}},
                     view=view)


def test_a_view_shares_the_empties_it_never_reads_and_nothing_it_reads() -> None:
    from pykubelet.api.types import PodStatus

    view = codec.View({PodStatus: ("conditions",)})
    a = codec.decode(Pod, {"spec": {}}, view=view)
    b = codec.decode(Pod, {"spec": {}}, view=view)
    assert a.status.container_statuses == [] == b.status.container_statuses
    assert a.status.container_statuses is b.status.container_statuses  # unread: shared
    assert a.status.conditions is not b.status.conditions  # read: each its own
    assert a.status is not b.status
    assert a.spec.containers is not b.spec.containers


def test_a_view_that_skips_unread_fields_still_names_unknown_keys() -> None:
    """check_unread=False: the fields a reader never reads are taken as they are (for input an
    API server already checked), but a key that is no field of the upstream type is still an
    error, and what the view reads is checked. The default view checks everything."""
    from pykubelet.api.types import Container, PodSpec

    reads = {PodSpec: ("containers",), Container: ("name",)}
    view = codec.View(reads, check_unread=False)
    doc = {"spec": {"containers": [{"name": "c", "env": [{"bogus": 1}], "image": 5}],
                    "hostname": 5}}
    pod = codec.decode(Pod, doc, view=view)
    assert pod.spec.containers[0].name == "c"
    assert pod.spec.hostname == ""
    with pytest.raises(DecodeError, match=r"spec\.foo: unknown field"):
        codec.decode(Pod, {"spec": {"foo": 1}}, view=view)
    with pytest.raises(DecodeError, match=r"spec\.containers\[0\]\.name: expected string"):
        codec.decode(Pod, {"spec": {"containers": [{"name": 5}]}}, view=view)
    strict = codec.View(reads)
    assert strict.check_unread
    with pytest.raises(DecodeError, match=r"spec\.hostname: expected string"):
        codec.decode(Pod, {"spec": {"hostname": 5}}, view=strict)
