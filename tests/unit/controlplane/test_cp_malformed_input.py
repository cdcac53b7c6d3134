"""Malformed input is the client's error, never the server's (issue 24 items 19 and 20):
400 or what upstream answers, not a 500."""

from __future__ import annotations

from cp_live import LiveAPI

CM = "/api/v1/namespaces/default/configmaps"


def test_deeply_nested_yaml_is_a_bad_request(api: LiveAPI) -> None:
    reply = api.call("POST", CM, data=b"[" * 100_000, content_type="application/yaml")
    assert reply.status == 400, reply.body[:300]
    assert reply.seconds < 1


def test_strategic_merge_directives_of_the_wrong_type(api: LiveAPI) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "smp", "finalizers": ["a/b"]}}
    assert api.call("POST", CM, body).status == 201
    try:
        for patch, message in (
                ({"metadata": {"$setElementOrder/finalizers": 5}},
                 "invalid patch format of setElementOrder list"),
                ({"metadata": {"$deleteFromPrimitiveList/finalizers": "a/b"}},
                 "invalid patch format of primitive list"),
                ({"metadata": {"$retainKeys": "name"}}, "invalid patch format of retainKeys")):
            reply = api.call("PATCH", f"{CM}/smp", patch,
                             content_type="application/strategic-merge-patch+json")
            assert reply.status == 400, (patch, reply.body[:300])
            assert reply.json()["message"] == message
    finally:
        api.call("PATCH", f"{CM}/smp", {"metadata": {"finalizers": None}},
                 content_type="application/merge-patch+json")
        api.call("DELETE", f"{CM}/smp")


def test_invalid_values_are_not_echoed_whole(api: LiveAPI) -> None:
    """A 2.9 MB invalid name was answered with a 17 MB body (issue 24 item 21)."""
    name = "A" * 2_900_000
    reply = api.call("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": name, "labels": {"k": "!" * 100_000}}})
    assert reply.status == 422, reply.body[:300]
    assert len(reply.body) < 8192
    assert reply.seconds < 1
    status = reply.json()
    assert status["details"]["name"] == "A" * 256 + "...(truncated)"
    assert status["message"].startswith('ConfigMap "' + "A" * 256 + '...(truncated)" is invalid')
    shown = [c["message"] for c in status["details"]["causes"]
             if c["field"] == "metadata.labels"]
    assert shown
    assert shown[0].startswith('Invalid value: "' + "!" * 256 + '"...(truncated)')


def test_duplicate_json_keys_follow_field_validation(api: LiveAPI) -> None:
    raw = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup2"},'
           b'"data":{"a":"1","a":"2"}}')
    reply = api.call("POST", f"{CM}?fieldValidation=Strict", data=raw)
    assert reply.status == 400, reply.body[:300]
    assert reply.json()["message"] == ('strict decoding error: duplicate field '
                                       '"metadata.name", duplicate field "data.a"')
    reply = api.call("POST", CM, data=raw)  # Warn, the default: the last one wins
    assert reply.status == 201, reply.body[:300]
    assert reply.headers["Warning"] == '299 - "duplicate field \\"metadata.name\\""'
    api.call("DELETE", f"{CM}/dup2")


def test_bodies_in_other_media_types_are_unsupported(api: LiveAPI) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"plain"}}'
    reply = api.call("POST", CM, data=body, content_type="text/plain")
    assert reply.status == 415, reply.body[:300]
    assert reply.json()["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf")
    ok = api.call("POST", CM, data=body, content_type="application/json; charset=utf-8")
    assert ok.status == 201, ok.body[:300]
    api.call("DELETE", f"{CM}/plain")


def test_unacceptable_answers_are_406(api: LiveAPI) -> None:
    reply = api.call("GET", CM, headers={"Accept": "text/html"})
    assert reply.status == 406, reply.body[:300]
    assert reply.json()["reason"] == "NotAcceptable"
    assert reply.json()["message"] == (
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf")
    for accept in ("*/*", "application/json", "text/html, application/json;q=0.9",
                   "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                   "application/*"):
        assert api.call("GET", CM, headers={"Accept": accept}).status == 200, accept


def test_list_and_watch_parameters_are_typed(api: LiveAPI) -> None:
    reply = api.call("GET", f"{CM}?resourceVersion=-1")
    assert reply.status == 400, reply.body[:300]
    reply = api.call("GET", f"{CM}?resourceVersion=0&resourceVersionMatch=Bogus")
    assert reply.status == 422, reply.body[:300]
    assert reply.json()["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: '
        '"Bogus": supported values: "Exact", "NotOlderThan", ""')
    reply = api.call("GET", f"{CM}?resourceVersionMatch=NotOlderThan")
    assert reply.status == 422
    for t in ("nan", "inf", "1e309", "1.5"):
        reply = api.call("GET", f"{CM}?watch=true&timeoutSeconds={t}")
        assert reply.status == 400, (t, reply.body[:300])
    reply = api.call("GET", f"{CM}?watch=true&timeoutSeconds=1&resourceVersion=-1")
    assert reply.status == 400


def test_a_yaml_alias_bomb_is_a_bad_request(api: LiveAPI) -> None:
    """A ControllerRevision's data is free-form: 7 levels of 10 aliases in 400 bytes stood
    for 10^7 nodes, decoded, encoded (a 47 MB object) and stored; go-yaml refuses the
    document (issue 29 item 3)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    body = ("apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: laughs}\n"
            "revision: 1\ndata:\n" + "".join(f"  {ln}\n" for ln in lines)).encode()
    assert len(body) < 600
    reply = api.call("POST", "/apis/apps/v1/namespaces/default/controllerrevisions",
                     data=body, content_type="application/yaml")
    assert reply.status == 400, reply.body[:300]
    assert reply.json()["message"] == (
        "error converting YAML to JSON: yaml: document contains excessive aliasing")
    assert reply.seconds < 1
    reply = api.call("POST", "/apis/apps/v1/namespaces/default/controllerrevisions",
                     data=b"apiVersion: apps/v1\nkind: ControllerRevision\n"
                          b"metadata: {name: loop}\nrevision: 1\ndata: &a {x: [*a]}\n",
                     content_type="application/yaml")
    assert reply.status == 400, reply.body[:300]
    assert "contains itself" in reply.json()["message"]
