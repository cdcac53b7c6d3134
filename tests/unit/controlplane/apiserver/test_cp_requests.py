"""Request paths, protobuf bodies from typed clients, and the watch cache's view of a
selector watch."""

from __future__ import annotations

import pytest

from pykubelet.controlplane.apiserver.protobuf import MAGIC, ProtobufError, decode_object
from pykubelet.controlplane.apiserver.requestinfo import parse_bool, parse_request_info
from pykubelet.controlplane.storage.cacher import (
    ADDED,
    DELETED,
    MODIFIED,
    Attrs,
    CachedEvent,
    Entry,
    Watcher,
    with_resource_version,
)


@pytest.mark.parametrize(
    ("method", "path", "watch", "expect"),
    [
        ("GET", "/api/v1/pods", False, ("list", "", "", "pods", "", "")),
        ("GET", "/api/v1/namespaces/d/pods", True, ("watch", "", "d", "pods", "", "")),
        ("GET", "/api/v1/namespaces/d/pods/p/log", False, ("get", "", "d", "pods", "p", "log")),
        ("POST", "/api/v1/namespaces/d/pods/p/binding", False,
         ("create", "", "d", "pods", "p", "binding")),
        ("GET", "/api/v1/namespaces/d", False, ("get", "", "d", "namespaces", "d", "")),
        ("PUT", "/api/v1/namespaces/d/finalize", False,
         ("update", "", "d", "namespaces", "d", "finalize")),
        ("DELETE", "/api/v1/namespaces/d/pods", False,
         ("deletecollection", "", "d", "pods", "", "")),
        ("PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", False,
         ("patch", "coordination.k8s.io", "kube-node-lease", "leases", "n1", "")),
        ("GET", "/api/v1/watch/namespaces/d/pods", False, ("watch", "", "d", "pods", "", "")),
    ],
)
def test_request_info(method: str, path: str, watch: bool, expect: tuple[str, ...]) -> None:
    info = parse_request_info(method, path, watch)
    assert info.is_resource_request
    assert (info.verb, info.group, info.namespace, info.resource, info.name,
            info.subresource) == expect


def test_discovery_paths_are_not_resource_requests() -> None:
    for path in ("/api", "/apis", "/api/v1", "/apis/policy/v1", "/version"):
        assert not parse_request_info("GET", path).is_resource_request


def test_go_booleans() -> None:
    assert parse_bool("True") is True
    assert parse_bool("t") is True
    assert parse_bool("0") is False
    assert parse_bool(None) is None
    with pytest.raises(ValueError):
        parse_bool("yes")


def _pb_field(num: int, payload: bytes) -> bytes:
    return bytes([(num << 3) | 2, len(payload)]) + payload


def test_protobuf_configmap_body() -> None:
    meta = _pb_field(1, b"cfg") + _pb_field(3, b"team")
    entry = _pb_field(1, b"a") + _pb_field(2, b"1")
    raw = _pb_field(1, meta) + _pb_field(2, entry)
    type_meta = _pb_field(1, b"v1") + _pb_field(2, b"ConfigMap")
    body = MAGIC + _pb_field(1, type_meta) + _pb_field(2, raw)
    assert decode_object(body) == {"kind": "ConfigMap", "apiVersion": "v1",
                                   "metadata": {"name": "cfg", "namespace": "team"},
                                   "data": {"a": "1"}}
    with pytest.raises(ProtobufError):
        decode_object(b"not protobuf")


def _entry(name: str, labels: dict[str, str], rev: int) -> Entry:
    data = with_resource_version(b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"%s"}}'
                                 % name.encode(), rev)
    return Entry(f"/registry/pods/d/{name}", data, rev, 1, Attrs("d", name, labels, {}))


def test_selector_watch_turns_stopping_to_match_into_deleted() -> None:
    w = Watcher("d", lambda a: a.labels.get("app") == "web", lambda _: None)
    a1 = _entry("p", {"app": "web"}, 2)
    a2 = _entry("p", {"app": "db"}, 3)
    a3 = _entry("p", {"app": "web"}, 4)
    w.offer(CachedEvent(ADDED, 2, a1, None))
    w.offer(CachedEvent(MODIFIED, 3, a2, a1))
    w.offer(CachedEvent(MODIFIED, 4, a3, a2))
    w.offer(CachedEvent(DELETED, 5, a3, a3))
    kinds = []
    while not w.queue.empty():
        item = w.queue.get_nowait()
        assert item is not None
        kinds.append((item[0], item[1].rev))
    # stopped matching: DELETED stamped with the revision it stopped at
    assert kinds == [(ADDED, 2), (DELETED, 3), (ADDED, 4), (DELETED, 4)]


def test_resource_version_splice() -> None:
    assert with_resource_version(b'{"kind":"X","metadata":{"name":"a"}}', 7) == (
        b'{"kind":"X","metadata":{"resourceVersion":"7","name":"a"}}')
    assert with_resource_version(b'{"metadata":{}}', 3) == b'{"metadata":{"resourceVersion":"3"}}'
