"""Timeout errors as apimachinery's NewTimeoutError makes them (504, reason Timeout, the
message prefixed "Timeout: ", details.retryAfterSeconds and the Retry-After header), and a
resourceVersion ahead of the store as storage.NewTooLargeResourceVersionError: that
timeout with the cause ResourceVersionTooLarge, which clients (client-go's
IsTooLargeResourceVersion, the reflector's relist) look for."""

from __future__ import annotations

from typing import Any

from pykubelet.controlplane import errors


def test_timeout_is_new_timeout_error() -> None:
    err = errors.timeout("the watch cache did not catch up", 2)
    assert err.code == 504
    status = err.status()
    assert status["reason"] == "Timeout"
    assert status["message"] == "Timeout: the watch cache did not catch up"
    assert status["details"] == {"retryAfterSeconds": 2}


def test_too_large_resource_version_names_its_cause() -> None:
    status = errors.too_large_resource_version(120, 99).status()
    assert status["code"] == 504
    assert status["reason"] == "Timeout"
    assert status["message"] == "Timeout: Too large resource version: 120, current: 99"
    assert status["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge",
                    "message": "Too large resource version"}],
        "retryAfterSeconds": 1}


def test_a_list_ahead_of_the_store_answers_too_large(api: Any) -> None:
    listed = api.call("GET", "/api/v1/namespaces/default/configmaps").json()
    ahead = int(listed["metadata"]["resourceVersion"]) + 1000
    reply = api.call("GET", f"/api/v1/namespaces/default/configmaps?resourceVersion={ahead}")
    assert reply.status == 504
    body = reply.json()
    assert body["message"].startswith(f"Timeout: Too large resource version: {ahead}, current: ")
    assert body["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}]
    assert reply.headers.get("Retry-After") == "1"
