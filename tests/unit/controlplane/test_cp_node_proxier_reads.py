"""A node may read what its service proxy watches (the system:node-proxier role: services,
endpoints, endpointslices, list and watch), and still not write them."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize("path", [
    "/api/v1/services", "/api/v1/endpoints", "/apis/discovery.k8s.io/v1/endpointslices",
    "/api/v1/services?watch=true&timeoutSeconds=1",
    "/apis/discovery.k8s.io/v1/endpointslices?watch=true&timeoutSeconds=1",
])
def test_a_node_lists_and_watches_what_the_proxy_needs(cluster: Any, path: str) -> None:
    code, body = cluster.node("px1")("GET", path)
    assert code == 200, body


def test_a_node_may_not_write_services(cluster: Any) -> None:
    code, body = cluster.node("px2")("POST", "/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]}})
    assert code == 403, body
    assert 'cannot create resource "services"' in body["message"]
