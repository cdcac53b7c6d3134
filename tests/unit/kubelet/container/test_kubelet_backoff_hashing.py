"""flowcontrol.Backoff semantics and the container spec hash."""

from __future__ import annotations

from kubelet_builders import FakeClock, make_pod

from pykubelet.kubelet.container.hashing import (
    deep_hash_json,
    fnv1a_32,
    go_json_marshal_str_map,
    hash_container_hex,
)
from pykubelet.kubelet.events.reasons import format_duration
from pykubelet.kubelet.util.backoff import Backoff


def test_backoff_doubles_and_caps() -> None:
    clock = FakeClock(0.0)
    b = Backoff(clock, initial=1.0, maximum=8.0)
    seen = []
    for _ in range(6):
        b.next("k", clock.now)
        seen.append(b.get("k"))
    assert seen == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_backoff_is_in_backoff_since_event() -> None:
    clock = FakeClock(100.0)
    b = Backoff(clock)
    assert not b.is_in_backoff_since("k", 100.0)  # no entry
    b.next("k", 100.0)
    clock.now = 109.9
    assert b.is_in_backoff_since("k", 100.0)
    clock.now = 110.0
    assert not b.is_in_backoff_since("k", 100.0)


def test_backoff_expires_after_twice_the_cap() -> None:
    clock = FakeClock(0.0)
    b = Backoff(clock)
    b.next("k", 0.0)
    b.next("k", 0.0)
    assert b.get("k") == 20
    # an event 600 s after the last update still counts (strictly greater expires)
    assert b.is_in_backoff_since_update("k", 15.0)
    clock.now = 700.0
    assert not b.is_in_backoff_since("k", 601.0)
    b.next("k", 601.0)
    assert b.get("k") == 10


def test_backoff_gc_and_reset() -> None:
    clock = FakeClock(0.0)
    b = Backoff(clock)
    b.next("a", 0.0)
    clock.now = 300.0
    b.next("b", 300.0)
    clock.now = 601.0
    b.gc()
    assert b.keys() == ["b"]
    b.reset("b")
    assert b.get("b") == 0.0


def test_fnv1a_known_vectors() -> None:
    assert fnv1a_32(b"") == 0x811C9DC5
    assert fnv1a_32(b"a") == 0xE40C292C
    assert fnv1a_32(b"foobar") == 0xBF9CF968


def test_deep_hash_matches_upstream_vector() -> None:
    """container_hash_test.go: the JSON of its sample container hashes to 0x311670a."""
    sample = (
        b'{"name":"test_container","image":"foo/image:v1","command":["/bin/testcmd"],'
        b'"args":["/bin/sh","-c","echo abc"],"ports":[{"containerPort":8001}],'
        b'"env":[{"name":"ENV_FOO","value":"bar"},{"name":"ENV_BAR","valueFrom":'
        b'{"secretKeyRef":{"name":"foo","key":"bar","optional":true}}}],'
        b'"resources":{"limits":{"foo":"1G"},"requests":{"foo":"500M"}}}'
    )
    assert deep_hash_json(sample) == 0x311670A


def test_go_json_escapes_html() -> None:
    assert go_json_marshal_str_map({"name": "a", "image": "x<y>&"}) == (
        b'{"image":"x\\u003cy\\u003e\\u0026","name":"a"}'
    )


def test_hash_depends_on_name_and_image_only() -> None:
    pod = make_pod()
    c = pod.spec.containers[0]
    h = hash_container_hex(c)
    assert h == format(int(h, 16), "x")
    c.command = ["sleep", "1"]
    assert hash_container_hex(c) == h
    c.image = "busybox:1.37"
    assert hash_container_hex(c) != h


def test_format_duration_like_go() -> None:
    assert format_duration(10) == "10s"
    assert format_duration(300) == "5m0s"
    assert format_duration(160) == "2m40s"
    assert format_duration(0.5) == "500ms"
    assert format_duration(3661) == "1h1m1s"
