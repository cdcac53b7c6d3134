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
