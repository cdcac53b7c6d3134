"""Hostile protobuf bodies (issue 24 item 3): the decoder checks every field's wire type
and bounds every length by the body before it allocates anything, and an out-of-range
value is a 400, never a 500; the API answers each at once."""

from __future__ import annotations

import pytest
from cp_live import LiveAPI

from pykubelet.controlplane.apiserver.protobuf import MAGIC, ProtobufError, decode_object

PROTOBUF = "application/vnd.kubernetes.protobuf"


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num: int, payload: bytes) -> bytes:
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def int_field(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(value & (1 << 64) - 1)


def envelope(kind: str, raw: bytes, api_version: str = "v1") -> bytes:
    type_meta = field(1, api_version.encode()) + field(2, kind.encode())
    return MAGIC + field(1, type_meta) + field(2, raw)


def namespace(meta: bytes) -> bytes:
    return envelope("Namespace", field(1, meta))


def test_a_string_sent_as_a_varint_is_refused_without_allocating() -> None:
    # metadata.name (field 1, a string) as a varint: before, bytes(N) of N NULs
    for n in (3, 1 << 62):
        with pytest.raises(ProtobufError, match="wrong wireType = 0 for field Name"):
            decode_object(namespace(int_field(1, n)))


def test_an_int_sent_as_bytes_is_refused() -> None:
    meta = field(1, b"x") + field(7, b"\x01\x02")  # generation (int64) as bytes
    with pytest.raises(ProtobufError, match="wrong wireType = 2 for field Generation"):
        decode_object(namespace(meta))


def test_lengths_are_bounded_by_the_body() -> None:
    body = namespace(b"")[:-1]
    # a length prefix claiming far more than what follows
    bad = MAGIC + varint(1 << 3 | 2) + varint(1 << 62) + b"xx"
    with pytest.raises(ProtobufError, match="unexpected EOF"):
        decode_object(bad)
    with pytest.raises(ProtobufError):
        decode_object(body)


def test_creation_timestamp_out_of_range_is_refused() -> None:
    time = int_field(1, 1 << 62)
    with pytest.raises(ProtobufError, match="out of range"):
        decode_object(namespace(field(1, b"x") + field(8, time)))


def test_api_answers_hostile_bodies_with_400_at_once(api: LiveAPI) -> None:
    cases = [
        namespace(int_field(1, 1 << 62)),  # a 30-byte request that asked for 4 EiB
        namespace(field(1, b"x") + field(8, int_field(1, 1 << 62))),
        namespace(field(1, b"x") + field(7, b"\x01")),
        MAGIC + varint(1 << 3 | 2) + varint(1 << 62),
    ]
    for body in cases:
        reply = api.call("POST", "/api/v1/namespaces", data=body, content_type=PROTOBUF)
        assert reply.seconds < 1
        assert reply.status == 400, reply.body[:300]
        status = reply.json()
        assert status["reason"] == "BadRequest"
        assert len(reply.body) < 1024


def test_a_protobuf_body_is_not_read_before_authorization(api: LiveAPI) -> None:
    # a node may not create namespaces: 403 whatever the body holds
    reply = api.call("POST", "/api/v1/namespaces", data=namespace(int_field(1, 1 << 62)),
                     content_type=PROTOBUF, token=api.node_token("node-a"))
    assert reply.status == 403


def test_valid_protobuf_namespace_still_created(api: LiveAPI) -> None:
    reply = api.call("POST", "/api/v1/namespaces",
                     data=namespace(field(1, b"pb-ok")), content_type=PROTOBUF)
    assert reply.status == 201, reply.body
    assert api.call("DELETE", "/api/v1/namespaces/pb-ok").status == 200


def test_a_long_invalid_name_is_not_echoed(api: LiveAPI) -> None:
    # a 2 Mi-character name gave a 67 MB answer, built a character at a time
    reply = api.call("POST", "/api/v1/namespaces",
                     data=namespace(field(1, b"\x01" * (2 << 20))), content_type=PROTOBUF)
    assert reply.status == 422, reply.body[:300]
    assert len(reply.body) < 32768  # each error shows 256 characters of it, at most
    assert reply.seconds < 1


def test_kubectl_create_deployment_body_is_read() -> None:
    """What ``kubectl create deployment web --image=busybox --replicas=3`` sends."""
    labels = field(11, field(1, b"app") + field(2, b"web"))
    selector = field(1, field(1, b"app") + field(2, b"web"))
    container = field(1, b"busybox") + field(2, b"busybox") + field(8, b"")
    template = field(1, labels) + field(2, field(2, container))
    spec = int_field(1, 3) + field(2, selector) + field(3, template) + field(4, b"")
    body = envelope("Deployment", field(1, field(1, b"web") + labels) + field(2, spec)
                    + field(3, b""), "apps/v1")
    assert decode_object(body) == {
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "busybox",
                                                       "image": "busybox"}]}}}}


def test_kubectl_create_serviceaccount_and_token_bodies_are_read() -> None:
    """What ``kubectl create sa reader`` and ``kubectl create token reader --duration=10m
    --bound-object-kind Pod --bound-object-name web`` send."""
    sa = envelope("ServiceAccount", field(1, field(1, b"reader")))
    assert decode_object(sa) == {"kind": "ServiceAccount", "apiVersion": "v1",
                                 "metadata": {"name": "reader"}}
    ref = field(1, b"Pod") + field(2, b"v1") + field(3, b"web")
    spec = field(1, b"vault") + int_field(4, 600) + field(3, ref)
    tr = envelope("TokenRequest", field(1, b"") + field(2, spec) + field(3, field(1, b"")),
                  "authentication.k8s.io/v1")
    assert decode_object(tr) == {
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "spec": {"audiences": ["vault"], "expirationSeconds": 600,
                 "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web"}}}
