"""The node config's ``serviceProxy`` field: off unless asked for (an agent in a test must not
program its host's nat table), kube-proxy's defaults, strict errors naming the field."""

from __future__ import annotations

import pytest

from pykubelet.config import API_VERSION, KIND, KubeletConfigError, decode_config


def cfg(**extra: object) -> dict[str, object]:
    return {"apiVersion": API_VERSION, "kind": KIND, **extra}


def test_off_by_default_and_kube_proxy_defaults_when_on() -> None:
    assert not decode_config(cfg()).serviceProxy.enabled
    sp = decode_config(cfg(serviceProxy={"enabled": True})).serviceProxy
    assert sp.enabled
    assert (sp.mode, sp.clusterCIDR, sp.minSyncPeriod, sp.syncPeriod, sp.masqueradeAll) == (
        "iptables", "", "1s", "30s", False)
    assert sp.sync_periods() == (1.0, 30.0)


def test_all_fields() -> None:
    sp = decode_config(cfg(serviceProxy={
        "enabled": True, "clusterCIDR": "10.244.0.0/16", "minSyncPeriod": "250ms",
        "syncPeriod": "1m", "masqueradeAll": True, "mode": "nftables"})).serviceProxy
    assert sp.mode == "nftables"
    assert sp.clusterCIDR == "10.244.0.0/16"
    assert sp.masqueradeAll
    assert sp.sync_periods() == (0.25, 60.0)


@pytest.mark.parametrize(("value", "message"), [
    ({"enable": True}, "serviceProxy.enable: unknown field"),
    ({"enabled": "yes"}, "serviceProxy.enabled: expected true or false"),
    ({"clusterCIDR": "10.244.0.0/33"}, "serviceProxy.clusterCIDR:"),
    ({"minSyncPeriod": "soon"}, "serviceProxy.minSyncPeriod:"),
    ({"syncPeriod": "0s"}, "serviceProxy.syncPeriod:"),
    ({"minSyncPeriod": "1m", "syncPeriod": "30s"},
     "serviceProxy.minSyncPeriod: 1m must not be above syncPeriod (30s)"),
    ("on", "serviceProxy: expected a mapping"),
    ({"mode": "ipvs"}, "serviceProxy.mode: unsupported value 'ipvs': supported values: "
                       "iptables, nftables"),
])
def test_errors_name_the_field(value: object, message: str) -> None:
    with pytest.raises(KubeletConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        decode_config(cfg(serviceProxy=value))
