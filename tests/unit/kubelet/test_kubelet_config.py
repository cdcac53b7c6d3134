"""The node config decoder: DESIGN.md's fields and defaults, strict errors naming the field."""

from __future__ import annotations

import pytest

from pykubelet.config import (
    API_VERSION,
    ControlPlaneConfig,
    KubeletConfigError,
    decode_config,
    load_config,
    single_node_default,
)

HEAD = {"apiVersion": API_VERSION, "kind": "KubeletConfiguration"}

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
    cfg = decode_config(dict(HEAD))
    assert cfg.rootDir == "/var/lib/pykubelet"
    assert cfg.healthzPort == 10248
    assert cfg.controlPlane is None
    assert cfg.node_name  # the host name
    assert single_node_default().controlPlane is not None


def test_port_defaults_to_kubelets_and_can_be_moved():
    assert decode_config(dict(HEAD)).port == 10250
    assert decode_config({**HEAD, "port": 10260}).port == 10260


def test_endpoint_given():
    cfg = decode_config({**HEAD, "containerRuntimeEndpoint": "unix:///run/x.sock"})
    assert not cfg.uses_embedded_runtime
    assert cfg.runtime_endpoint == "unix:///run/x.sock"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nodeNmae": "x"}, "nodeNmae: unknown field"),
        ({"healthzPort": "80"}, "healthzPort: expected an integer"),
        ({"healthzPort": 70000}, "healthzPort: expected an integer"),
        ({"port": 0}, "port: expected an integer 1..65535, got 0"),
        ({"port": "10250"}, "port: expected an integer 1..65535"),
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
        ({"controlPlane": {"serviceClusterIPRange": "10.96.0.0/33"}},
         "controlPlane.serviceClusterIPRange: expected an IPv4 CIDR"),
        ({"controlPlane": {"serviceClusterIPRange": "fd00::/108"}},
         "controlPlane.serviceClusterIPRange: expected an IPv4 CIDR"),
        ({"controlPlane": {"serviceNodePortRange": "30000"}},
         "controlPlane.serviceNodePortRange: expected LOW-HIGH"),
        ({"controlPlane": {"serviceNodePortRange": "32767-30000"}},
         "controlPlane.serviceNodePortRange: expected LOW-HIGH"),
    ],
)
def test_errors_name_the_field(data, message):
    with pytest.raises(KubeletConfigError) as err:
        decode_config({**HEAD, **data})
    assert message in str(err.value)


def test_bad_yaml_and_missing_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("a: [")
    with pytest.raises(KubeletConfigError, match="not valid YAML"):
        load_config(p)
    with pytest.raises(KubeletConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")
    with pytest.raises(KubeletConfigError, match="top level"):
        decode_config([1, 2])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty; a node config starts with apiVersion: pykubelet.io/v1alpha1"),
        ("# only a comment\n", "empty"),
        ("kind: KubeletConfiguration\nnodeName: n\n", "apiVersion: required"),
        (f"apiVersion: {API_VERSION}\nnodeName: n\n", "kind: required"),
    ],
)
def test_a_config_that_does_not_say_what_it_is_is_refused(tmp_path, text, message):
    """Strict like every decoder here: an empty file, or one without apiVersion/kind, is
    an error naming the file and the field, never a silent set of defaults."""
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(KubeletConfigError) as err:
        load_config(p)
    assert str(err.value).startswith(f"{p}: ")
    assert message in str(err.value)


def test_cni_bin_dir_is_a_search_path():
    """Our plugins in /opt/cni/bin first, then Debian's reference plugins in /usr/lib/cni:
    what scripts/install.sh installs, found without a config saying so."""
    assert decode_config(dict(HEAD)).cniBinDir == "/opt/cni/bin:/usr/lib/cni"
    cfg = decode_config({**HEAD, "cniBinDir": "/a:/b/c"})
    assert cfg.cniBinDir == "/a:/b/c"
    with pytest.raises(KubeletConfigError, match="cniBinDir: 'rel' is not an absolute path"):
        decode_config({**HEAD, "cniBinDir": "/a:rel"})
    with pytest.raises(KubeletConfigError, match="cniBinDir: must name at least one directory"):
        decode_config({**HEAD, "cniBinDir": ":"})


def test_api_servers_list_and_order():
    cfg = decode_config({**HEAD, "server": "https://10.250.0.1:6443",
                         "apiServers": ["https://10.250.0.2:6443", "https://10.250.0.3:6443/"]})
    assert cfg.apiServers == ["https://10.250.0.2:6443", "https://10.250.0.3:6443/"]
    # the join server first when the list does not place it; no slashes, no duplicates
    assert cfg.api_servers() == ["https://10.250.0.1:6443", "https://10.250.0.2:6443",
                                 "https://10.250.0.3:6443"]
    placed = decode_config({**HEAD, "server": "https://10.250.0.1:6443/",
                            "apiServers": ["https://10.250.0.2:6443", "https://10.250.0.1:6443"]})
    assert placed.api_servers() == ["https://10.250.0.2:6443", "https://10.250.0.1:6443"]
    # a control node: its own API first, then the others (server plays no part)
    control = decode_config({**HEAD, "controlPlane": {"listen": "0.0.0.0:6443"},
                             "apiServers": ["https://10.250.0.2:6443"]})
    assert control.api_servers("https://127.0.0.1:6443") == ["https://127.0.0.1:6443",
                                                             "https://10.250.0.2:6443"]
    # one server: one entry (no load balancer)
    single = decode_config({**HEAD, "server": "https://10.250.0.1:6443"})
    assert single.apiServers == []
    assert single.api_servers() == ["https://10.250.0.1:6443"]
    assert decode_config({**HEAD, "controlPlane": {}}).api_servers("https://127.0.0.1:6443") \
        == ["https://127.0.0.1:6443"]


@pytest.mark.parametrize(("value", "message"), [
    (["https://10.0.0.1:6443", "http://10.0.0.2:6443"],
     "apiServers[1]: expected https://HOST:PORT, got 'http://10.0.0.2:6443'"),
    (["10.0.0.1:6443"], "apiServers[0]: expected https://HOST:PORT, got '10.0.0.1:6443'"),
    (["https://10.0.0.1"], "apiServers[0]: expected https://HOST:PORT, got 'https://10.0.0.1'"),
    ([6443], "apiServers[0]: expected a string, got int 6443"),
    ("https://10.0.0.1:6443", "apiServers: expected a list of https://HOST:PORT, got str"),
])
def test_bad_api_servers_name_the_entry(value, message):
    with pytest.raises(KubeletConfigError) as err:
        decode_config({**HEAD, "server": "https://10.0.0.1:6443", "apiServers": value})
    assert str(err.value) == message


def test_api_servers_need_a_join_server():
    with pytest.raises(KubeletConfigError, match=r"^apiServers: needs server"):
        decode_config({**HEAD, "apiServers": ["https://10.0.0.1:6443"]})


def test_cluster_dns_fields():
    """clusterDNS, clusterDomain and resolvConf as KubeletConfiguration names them."""
    cfg = decode_config(dict(HEAD))
    assert (cfg.clusterDNS, cfg.clusterDomain, cfg.resolvConf) == (
        [], "cluster.local", "/etc/resolv.conf")
    cfg = decode_config({**HEAD, "clusterDNS": ["10.96.0.10"], "clusterDomain": "k.example",
                         "resolvConf": ""})
    assert (cfg.clusterDNS, cfg.clusterDomain, cfg.resolvConf) == (
        ["10.96.0.10"], "k.example", "")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"clusterDNS": "10.96.0.10"}, "clusterDNS: expected a list of IP addresses"),
        ({"clusterDNS": ["dns.example"]}, "clusterDNS[0]: "),
        ({"clusterDomain": 5}, "clusterDomain: expected a string"),
        ({"resolvConf": "etc/resolv.conf"}, "resolvConf: must be an absolute path"),
    ],
)
def test_bad_cluster_dns_fields(data, message):
    with pytest.raises(KubeletConfigError) as err:
        decode_config({**HEAD, **data})
    assert message in str(err.value)


def test_runtime_in_agent():
    """runtimeInAgent serves the embedded runtime from the agent's process (issue 23
    item 3); off by default, a boolean only, and never beside another runtime's endpoint."""
    assert decode_config(HEAD).runtimeInAgent is False
    assert decode_config({**HEAD, "runtimeInAgent": True}).runtimeInAgent is True
    with pytest.raises(KubeletConfigError, match="runtimeInAgent: expected a boolean, got 'yes'"):
        decode_config({**HEAD, "runtimeInAgent": "yes"})
    with pytest.raises(KubeletConfigError, match="runtimeInAgent: serves the embedded runtime, "
                       "but containerRuntimeEndpoint names another"):
        decode_config({**HEAD, "runtimeInAgent": True,
                       "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock"})
