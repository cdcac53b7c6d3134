"""The node config decoder: DESIGN.md's fields and defaults, strict errors naming the field."""

from __future__ import annotations

import pytest

from pykubelet.config import (
    API_VERSION,
    ConfigError,
    ControlPlaneConfig,
    decode_config,
    load_config,
    single_node_default,
)

FULL = f"""
apiVersion: {API_VERSION}
kind: KubeletConfiguration
nodeName: node1
rootDir: /var/lib/pykubelet
runDir: /run/pykubelet
containerRuntimeEndpoint: ""
staticPodPath: /etc/pykubelet/manifests
cniConfDir: /etc/cni/net.d
cniBinDir: /opt/cni/bin
podCIDR: 10.244.1.0/24
podLogsDir: /var/log/pods
healthzBindAddress: 127.0.0.1
healthzPort: 10248
nodeLabels: {{zone: a}}
registerWithTaints: [{{key: k, value: v, effect: NoSchedule}}]
allocatable: {{cpu: "2", memory: 4Gi, pods: 50}}
controlPlane:
  listen: 0.0.0.0:6443
  storePath: /var/lib/pykubelet/store.db
server: ""
"""


def test_design_example_decodes(tmp_path):
    p = tmp_path / "config.yaml"
    p.write_text(FULL)
    cfg = load_config(p)
    assert cfg.node_name == "node1"
    assert cfg.controlPlane == ControlPlaneConfig("0.0.0.0:6443", "/var/lib/pykubelet/store.db")
    assert cfg.allocatable == {"cpu": "2", "memory": "4Gi", "pods": "50"}
    assert cfg.nodeLabels == {"zone": "a"}
    assert cfg.uses_embedded_runtime
    assert cfg.runtime_endpoint == "unix:///run/pykubelet/cri.sock"


def test_defaults():
    cfg = decode_config({})
    assert cfg.rootDir == "/var/lib/pykubelet"
    assert cfg.healthzPort == 10248
    assert cfg.controlPlane is None
    assert cfg.node_name  # the host name
    assert single_node_default().controlPlane is not None


def test_endpoint_given():
    cfg = decode_config({"containerRuntimeEndpoint": "unix:///run/x.sock"})
    assert not cfg.uses_embedded_runtime
    assert cfg.runtime_endpoint == "unix:///run/x.sock"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nodeNmae": "x"}, "nodeNmae: unknown field"),
        ({"healthzPort": "80"}, "healthzPort: expected an integer"),
        ({"healthzPort": 70000}, "healthzPort: expected an integer"),
        ({"rootDir": 5}, "rootDir: expected a string"),
        ({"rootDir": "relative/dir"}, "rootDir: must be an absolute path"),
        ({"podCIDR": "10.0.0.0/33"}, "podCIDR:"),
        ({"kind": "Pod"}, "kind: expected 'KubeletConfiguration'"),
        ({"apiVersion": "v1"}, "apiVersion: expected"),
        ({"controlPlane": {"listen": "x", "extra": 1}}, "controlPlane.extra: unknown field"),
        ({"nodeLabels": {"a": [1]}}, "nodeLabels.a: expected a string"),
        ({"registerWithTaints": [{"key": "k", "effect": "Bad"}]},
         "registerWithTaints[0].effect: must be"),
        ({"containerRuntimeEndpoint": "tcp://1.2.3.4:1"}, "containerRuntimeEndpoint:"),
        ({"healthzBindAddress": "localhost"}, "healthzBindAddress:"),
    ],
)
def test_errors_name_the_field(data, message):
    with pytest.raises(ConfigError) as err:
        decode_config(data)
    assert message in str(err.value)


def test_bad_yaml_and_missing_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("a: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="top level"):
        decode_config([1, 2])
