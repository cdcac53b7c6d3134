"""Service environment variables: envvars.FromServices against upstream's own test
(TestFromServices), getServiceEnvVarMap's choice of services (enableServiceLinks, the
default namespace's kubernetes Service always), and how make_environment adds them (after
the container's own, which win, and usable in $(VAR) references)."""

from __future__ import annotations

from typing import Any

import pytest

from pykubelet.api.manifest import parse_pod
from pykubelet.kubelet.cluster.object_refs import RefError
from pykubelet.kubelet.kuberuntime.container_config import make_environment
from pykubelet.kubelet.kuberuntime.envvars import from_services, service_env_var_map


def svc(name: str, ip: str, ports: list[dict[str, Any]], ns: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"bar": "baz"}, "clusterIP": ip, "ports": ports}}


def test_from_services_as_upstream() -> None:
    services = [
        svc("foo-bar", "1.2.3.4", [{"port": 8080, "protocol": "TCP"}]),
        svc("abc-123", "5.6.7.8", [{"name": "u-d-p", "port": 8081, "protocol": "UDP"},
                                   {"name": "t-c-p", "port": 8081, "protocol": "TCP"}]),
        svc("q-u-u-x", "9.8.7.6", [{"port": 8082, "protocol": "TCP"},
                                   {"name": "8083", "port": 8083, "protocol": "TCP"}]),
        svc("svrc-clusterip-none", "None", [{"port": 8082, "protocol": "TCP"}]),
        svc("svrc-clusterip-empty", "", [{"port": 8082, "protocol": "TCP"}]),
    ]
    assert from_services(services) == [
        ("FOO_BAR_SERVICE_HOST", "1.2.3.4"),
        ("FOO_BAR_SERVICE_PORT", "8080"),
        ("FOO_BAR_PORT", "tcp://1.2.3.4:8080"),
        ("FOO_BAR_PORT_8080_TCP", "tcp://1.2.3.4:8080"),
        ("FOO_BAR_PORT_8080_TCP_PROTO", "tcp"),
        ("FOO_BAR_PORT_8080_TCP_PORT", "8080"),
        ("FOO_BAR_PORT_8080_TCP_ADDR", "1.2.3.4"),
        ("ABC_123_SERVICE_HOST", "5.6.7.8"),
        ("ABC_123_SERVICE_PORT", "8081"),
        ("ABC_123_SERVICE_PORT_U_D_P", "8081"),
        ("ABC_123_SERVICE_PORT_T_C_P", "8081"),
        ("ABC_123_PORT", "udp://5.6.7.8:8081"),
        ("ABC_123_PORT_8081_UDP", "udp://5.6.7.8:8081"),
        ("ABC_123_PORT_8081_UDP_PROTO", "udp"),
        ("ABC_123_PORT_8081_UDP_PORT", "8081"),
        ("ABC_123_PORT_8081_UDP_ADDR", "5.6.7.8"),
        ("ABC_123_PORT_8081_TCP", "tcp://5.6.7.8:8081"),
        ("ABC_123_PORT_8081_TCP_PROTO", "tcp"),
        ("ABC_123_PORT_8081_TCP_PORT", "8081"),
        ("ABC_123_PORT_8081_TCP_ADDR", "5.6.7.8"),
        ("Q_U_U_X_SERVICE_HOST", "9.8.7.6"),
        ("Q_U_U_X_SERVICE_PORT", "8082"),
        ("Q_U_U_X_SERVICE_PORT_8083", "8083"),
        ("Q_U_U_X_PORT", "tcp://9.8.7.6:8082"),
        ("Q_U_U_X_PORT_8082_TCP", "tcp://9.8.7.6:8082"),
        ("Q_U_U_X_PORT_8082_TCP_PROTO", "tcp"),
        ("Q_U_U_X_PORT_8082_TCP_PORT", "8082"),
        ("Q_U_U_X_PORT_8082_TCP_ADDR", "9.8.7.6"),
        ("Q_U_U_X_PORT_8083_TCP", "tcp://9.8.7.6:8083"),
        ("Q_U_U_X_PORT_8083_TCP_PROTO", "tcp"),
        ("Q_U_U_X_PORT_8083_TCP_PORT", "8083"),
        ("Q_U_U_X_PORT_8083_TCP_ADDR", "9.8.7.6"),
    ]


KUBERNETES = svc("kubernetes", "10.96.0.1", [{"name": "https", "port": 443}], "default")
SERVICES = [
    KUBERNETES,
    svc("web", "10.96.0.20", [{"port": 80}], "test"),
    svc("other", "10.96.0.30", [{"port": 81}], "elsewhere"),
]
#: a Service named kubernetes in the pod's own namespace
SHADOW = svc("kubernetes", "10.96.0.99", [{"port": 1}], "test")


def test_service_links_choose_the_namespace_and_always_the_master_service() -> None:
    """TestMakeEnvironmentVariables' cases: the pod's namespace's services with links on,
    the default namespace's kubernetes Service always; a same-named Service of the pod's
    namespace replaces it (the map assignment in getServiceEnvVarMap), in either order."""
    env = service_env_var_map(SERVICES, "test", True)
    assert env["WEB_SERVICE_HOST"] == "10.96.0.20"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "443"
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["KUBERNETES_PORT"] == "tcp://10.96.0.1:443"
    assert not any(k.startswith("OTHER_") for k in env)
    off = service_env_var_map(SERVICES, "test", False)
    assert {k.split("_")[0] for k in off} == {"KUBERNETES"}
    for services in ([*SERVICES, SHADOW], [SHADOW, *SERVICES]):
        assert service_env_var_map(services, "test", True)[
            "KUBERNETES_SERVICE_HOST"] == "10.96.0.99"
        assert service_env_var_map(services, "test", False)[
            "KUBERNETES_SERVICE_HOST"] == "10.96.0.1"


class Refs:
    def __init__(self, services: list[dict[str, Any]] | None = None,
                 error: str = "") -> None:
        self._services = services or []
        self.error = error

    def configmap(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return None

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        return None

    def services(self, namespace: str) -> list[dict[str, Any]]:
        if self.error:
            raise RefError(self.error)
        return [s for s in self._services
                if s["metadata"]["namespace"] in (namespace, "default")]


def pod(env: list[dict[str, Any]], links: bool | None = None) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "env": env}]}
    if links is not None:
        spec["enableServiceLinks"] = links
    return parse_pod({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "p", "namespace": "test"}, "spec": spec})


def test_a_container_gets_the_service_variables_after_its_own() -> None:
    p = pod([{"name": "WEB_SERVICE_HOST", "value": "mine"},
             {"name": "URL", "value": "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/"}])
    env = make_environment(p, p.spec.containers[0], "10.244.1.5", refs=Refs(SERVICES))
    d = dict(env)
    assert env[:2] == [("WEB_SERVICE_HOST", "mine"), ("URL", "http://mine:80/")]
    assert [k for k, _ in env].count("WEB_SERVICE_HOST") == 1  # the container's wins
    assert d["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert d["KUBERNETES_SERVICE_PORT"] == "443"
    assert d["WEB_PORT_80_TCP_ADDR"] == "10.96.0.20"
    # enableServiceLinks: false keeps only the kubernetes Service's
    p = pod([], links=False)
    env = make_environment(p, p.spec.containers[0], "", refs=Refs(SERVICES))
    assert {k.split("_")[0] for k, _ in env} == {"KUBERNETES"}
    # no control plane: no service variables (and no error)
    assert make_environment(p, p.spec.containers[0], "", refs=None) == []


def test_services_that_cannot_be_read_leave_the_container_without_them(
        caplog: pytest.LogCaptureFixture) -> None:
    """The control plane away and no list read yet: the container still starts (without
    service variables, logged), so an outage never keeps containers down."""
    p = pod([{"name": "A", "value": "1"}])
    env = make_environment(p, p.spec.containers[0], "", refs=Refs(
        error="failed to list services when setting up env vars: connection refused"))
    assert env == [("A", "1")]
    assert "no service environment variables" in caplog.text
