"""policy_chains: where a service port's internal and external traffic go, as both
proxiers (iptables and nftables) decide it from the traffic policies and the endpoints."""

from __future__ import annotations

import pytest

from pykubelet.proxy.serviceport import (
    EndpointInfo,
    ServicePortInfo,
    ServicePortName,
    categorize_endpoints,
    policy_chains,
)


def _svc(internal_local: bool = False, external_local: bool = False) -> ServicePortInfo:
    return ServicePortInfo(ServicePortName("ns", "web", "http", "TCP"), "10.96.0.9", 80,
                           node_port=30080, internal_policy_local=internal_local,
                           external_policy_local=external_local)


@pytest.mark.parametrize(("internal_local", "external_local", "endpoints", "expected"), [
    (False, False, [EndpointInfo("10.0.0.1", 80)], ("SVC", True, "SVC", True)),
    (True, False, [EndpointInfo("10.0.0.1", 80)], ("SVL", False, "SVC", True)),
    (False, True, [EndpointInfo("10.0.0.1", 80, is_local=True)], ("SVC", True, "SVL", True)),
    (False, True, [EndpointInfo("10.0.0.1", 80)], ("SVC", True, "SVL", False)),
    (False, False, [], ("SVC", False, "SVC", False)),
])
def test_policy_chains(internal_local: bool, external_local: bool,
                       endpoints: list[EndpointInfo],
                       expected: tuple[str, bool, str, bool]) -> None:
    svc = _svc(internal_local, external_local)
    cat = categorize_endpoints(endpoints, svc)
    assert policy_chains(svc, cat, "SVC", "SVL") == expected
