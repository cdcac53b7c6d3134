"""``POST /bootstrap/node``: every join gets new credentials (never a running node's
token), and only a node name that is a DNS subdomain (as a Node's name must be) joins."""

from __future__ import annotations

import logging
from typing import Any

import pytest


def test_every_join_gets_new_credentials_and_the_old_ones_stop(cluster: Any) -> None:
    code, first = cluster.join("join-n1")
    assert code == 200, first
    code, second = cluster.join("join-n1")
    assert code == 200, second
    assert second["token"] != first["token"]
    # the node joined again (a new install of it, or someone with the join token): the
    # credentials handed out before stop, so nobody shares a running node's identity
    code, body = cluster.raw(first["token"])("GET", "/api/v1/nodes/join-n1")
    assert code == 401, body
    code, body = cluster.raw(second["token"])("GET", "/api/v1/nodes/join-n1")
    assert code == 404, body  # authenticated as the node; its Node is not registered yet


@pytest.mark.parametrize("name", ["../../etc/passwd", "n1\nI1203 forged log line", "Upper",
                                  "a" * 254, "-dash", "dot."])
def test_a_node_name_must_be_a_dns_subdomain(cluster: Any, name: str) -> None:
    code, body = cluster.join(name)
    assert code == 422, body
    assert body["reason"] == "Invalid"
    assert "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric " \
           "characters, '-' or '.', and must start and end with an alphanumeric character" \
           in body["message"] or "must be no more than 253 characters" in body["message"]
    assert body["message"].startswith("nodeName: Invalid value: ")
    assert name not in cluster.tokens.nodes


def test_join_logs_quote_the_node_name(cluster: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pykubelet.controlplane.server"):
        assert cluster.join("join-n2")[0] == 200
    assert "node 'join-n2' joined" in [r.getMessage() for r in caplog.records]
