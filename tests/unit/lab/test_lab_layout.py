"""The lab's pure parts: names, addresses, routes, node configs, join commands, durations."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml

from pykubelet.config import decode_config
from pykubelet.lab.layout import (
    IFNAMSIZ,
    LabLayout,
    LayoutError,
    free_subnet_index,
    ifname,
    parse_duration,
    validate_control_planes,
    validate_name,
    validate_nodes,
)
from pykubelet.lab.nodeconfig import (
    JoinError,
    JoinInfo,
    cni_conflist,
    node_config,
    parse_join_command,
)


def test_a_three_node_lab_follows_design_addressing() -> None:
    lab = LabLayout("lab", 3)
    assert str(lab.subnet) == "10.250.0.0/24"
    assert lab.gateway == "10.250.0.1"
    assert [n.name for n in lab.node_layouts()] == ["node1", "node2", "node3"]
    assert [n.address for n in lab.node_layouts()] == ["10.250.0.11", "10.250.0.12",
                                                       "10.250.0.13"]
    assert [n.pod_cidr for n in lab.node_layouts()] == ["10.244.1.0/24", "10.244.2.0/24",
                                                        "10.244.3.0/24"]
    assert lab.pod_routes(2) == [("10.244.1.0/24", "10.250.0.11"),
                                 ("10.244.3.0/24", "10.250.0.13")]
    assert lab.context == "pykube-lab"
    assert lab.control_node.api_server == "https://10.250.0.11:6443"


def test_every_address_stays_inside_10_slash_8() -> None:
    ten = ipaddress.ip_network("10.0.0.0/8")
    lab = LabLayout("x", 50, subnet_index=255)
    for n in lab.node_layouts():
        assert ipaddress.ip_address(n.address) in ten
        assert ipaddress.ip_network(n.pod_cidr).subnet_of(ten)
        assert ipaddress.ip_address(n.address) in lab.subnet


def test_nodes_keep_their_own_directories() -> None:
    lab = LabLayout("lab", 2, state_root=Path("/s"), run_root=Path("/r"))
    a, b = lab.node_layouts()
    for attr in ("root_dir", "node_run_dir", "pod_logs_dir", "cni_conf_dir", "cni_data_dir",
                 "manifests_dir", "netns", "host_veth", "network_name"):
        assert getattr(a, attr) != getattr(b, attr), attr
    assert str(a.root_dir).startswith("/s/lab/")
    assert a.cri_socket == Path("/r/lab/node1/cri.sock")
    assert not str(a.root_dir).startswith("/var/lib/pykubelet")


@pytest.mark.parametrize("name", ["lab", "a", "tlab-crash", "x" * 32])
def test_interface_names_fit_ifnamsiz(name: str) -> None:
    lab = LabLayout(name, 50)
    names = [lab.bridge] + [n.host_veth for n in lab.node_layouts()]
    assert all(len(n) <= IFNAMSIZ for n in names)
    assert len(set(names)) == len(names)


def test_short_names_stay_readable_and_long_ones_hash() -> None:
    assert ifname("pkl-", "lab", "-1") == "pkl-lab-1"
    long = ifname("pkl-", "a-rather-long-lab", "-12")
    assert long.startswith("pkl-")
    assert long.endswith("-12")
    assert len(long) == IFNAMSIZ
    assert ifname("pkl-", "a-rather-long-lab", "-12") != ifname("pkl-", "a-rather-long-lbb", "-12")


@pytest.mark.parametrize("bad", ["", "Lab", "lab_1", "-lab", "lab-", "a" * 33, "la b"])
def test_bad_names_are_one_line_errors(bad: str) -> None:
    with pytest.raises(LayoutError, match=r"^--name: "):
        validate_name(bad)


@pytest.mark.parametrize("bad", [0, -1, 51])
def test_bad_node_counts_are_one_line_errors(bad: int) -> None:
    with pytest.raises(LayoutError, match=r"^--nodes: must be between 1 and 50, got"):
        validate_nodes(bad)


def test_durations() -> None:
    assert parse_duration("0") == 0
    assert parse_duration("90") == 90
    assert parse_duration("90s") == 90
    assert parse_duration("2m") == 120
    assert parse_duration("500ms") == 0.5
    with pytest.raises(LayoutError, match="--wait: 'soon' is not a duration"):
        parse_duration("soon")


def test_a_second_lab_gets_the_next_free_subnet() -> None:
    assert free_subnet_index(set(), []) == 0
    assert free_subnet_index({0}, []) == 1
    host = [ipaddress.ip_network("10.250.1.0/24"), ipaddress.ip_network("192.168.1.0/24")]
    assert free_subnet_index({0}, host) == 2
    with pytest.raises(LayoutError, match="no free lab subnet"):
        free_subnet_index(set(range(256)), [])


def test_an_ha_lab_has_three_members_a_front_and_spread_api_servers() -> None:
    lab = LabLayout("ha", 5, control_planes=3)
    assert [n.name for n in lab.control_nodes()] == ["node1", "node2", "node3"]
    assert lab.etcd_initial_cluster == ("node1=http://10.250.0.11:2380,"
                                        "node2=http://10.250.0.12:2380,"
                                        "node3=http://10.250.0.13:2380")
    assert lab.front_server == "https://10.250.0.1:6443"
    cps = [f"https://10.250.0.1{i}:6443" for i in (1, 2, 3)]
    assert lab.api_servers_for(1) == cps
    assert lab.api_servers_for(2) == cps[1:] + cps[:1]
    assert lab.api_servers_for(4) == cps  # workers spread over the control nodes in turn
    assert lab.api_servers_for(5) == cps[1:] + cps[:1]
    assert lab.etcd_endpoints_for(3)[0] == "http://10.250.0.13:2379"
    assert lab.node(3).etcd_data_dir == lab.node(3).dir / "etcd"


@pytest.mark.parametrize(("planes", "nodes", "store", "msg"), [
    (0, 3, "etcd", "--control-planes: must be between 1 and --nodes"),
    (4, 3, "etcd", "--control-planes: must be between 1 and --nodes"),
    (3, 3, "sqlite", "--control-planes 3: several control planes need --store etcd"),
    (1, 3, "mysql", "--store: must be one of sqlite, etcd"),
])
def test_bad_control_plane_counts_are_one_line_errors(planes: int, nodes: int, store: str,
                                                      msg: str) -> None:
    with pytest.raises(LayoutError, match=msg):
        validate_control_planes(planes, nodes, store)
    assert validate_control_planes(3, 3, "etcd") == 3


def test_node1_config_carries_the_control_plane_and_decodes() -> None:
    node = LabLayout("lab", 3).node(1)
    cfg = node_config(node, None)
    assert cfg["controlPlane"] == {"listen": "10.250.0.11:6443",
                                   "storePath": str(node.control_plane_root / "store.db")}
    assert "server" not in cfg
    decoded = decode_config(cfg)
    assert decoded.nodeName == "node1"
    assert decoded.podCIDR == "10.244.1.0/24"
    assert decoded.rootDir == str(node.root_dir)
    assert decoded.runDir == str(node.node_run_dir)
    assert decoded.healthzBindAddress == "10.250.0.11"
    # every lab node proxies Services, inside its own network namespace
    assert decoded.serviceProxy.enabled
    assert decoded.serviceProxy.clusterCIDR == "10.244.0.0/16"
    # its control plane serves the cluster DNS (on its lab address) and pods ask kube-dns
    assert decoded.controlPlane is not None
    assert decoded.controlPlane.dnsServer
    assert decoded.clusterDNS == ["10.96.0.10"]
    assert decoded.clusterDomain == "cluster.local"


def test_joining_nodes_carry_server_token_and_hash() -> None:
    join = JoinInfo("https://10.250.0.11:6443", "abcdef.0123456789abcdef", "sha256:00ff")
    cfg = node_config(LabLayout("lab", 3).node(2), join)
    assert decode_config(cfg).clusterDNS == ["10.96.0.10"]  # ClusterFirst pods: kube-dns
    assert (cfg["server"], cfg["token"], cfg["caCertHash"]) == (join.server, join.token,
                                                                 join.ca_cert_hash)
    assert "controlPlane" not in cfg
    with pytest.raises(JoinError, match="node2: a joining node needs"):
        node_config(LabLayout("lab", 3).node(2), None)


def test_join_command_as_control_plane_prints_it() -> None:
    got = parse_join_command("--server https://10.250.0.11:6443 --token abc.def "
                             "--ca-cert-hash sha256:1234\n")
    assert got == JoinInfo("https://10.250.0.11:6443", "abc.def", "sha256:1234")
    assert parse_join_command("--server=https://a:1 --token=t --ca-cert-hash=h").token == "t"
    with pytest.raises(JoinError, match="missing --token, --ca-cert-hash"):
        parse_join_command("--server https://a:1")


def test_cni_network_is_the_nodes_pod_cidr_without_masquerade() -> None:
    node = LabLayout("lab", 2).node(2)
    conf = cni_conflist(node)
    bridge = conf["plugins"][0]
    assert conf["name"] == "pykube-lab-node2"
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.2.0/24"}]]
    assert bridge["ipam"]["dataDir"] == str(node.cni_data_dir)
    assert bridge["ipMasq"] is False
    assert bridge["isGateway"] is True


def test_scheduler_config_reaches_the_embedded_control_plane() -> None:
    node = LabLayout("lab", 2).node(1)
    path = str(LabLayout("lab", 2).scheduler_config_file)
    cfg = node_config(node, None, scheduler_config=path)
    assert cfg["controlPlane"]["schedulerConfig"] == path
    decoded = decode_config(cfg)
    assert decoded.controlPlane is not None
    assert decoded.controlPlane.schedulerConfig == path
    assert "schedulerConfig" not in node_config(node, None)["controlPlane"]


def test_lab_up_refuses_a_bad_scheduler_config_before_making_anything(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "sched.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                   "kind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: ''}, {}]\n")
    p = subprocess.run([sys.executable, "-m", "pykubelet.cli.main", "lab", "--state-dir",
                        str(tmp_path / "state"), "--run-dir", str(tmp_path / "run"), "up",
                        "--name", "schedcfg", "--scheduler-config", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr.strip().endswith(
        f"Error: --scheduler-config {bad}: profiles[0].schedulerName: Required value")
    assert not (tmp_path / "state").exists()


def test_audit_reaches_the_embedded_control_plane_only_when_asked(tmp_path: Path) -> None:
    """``lab up --audit``: node 1's config names the lab's policy and a log beside the
    store; the policy is a valid audit.k8s.io/v1 Policy; without --audit nothing."""
    from pykubelet.controlplane.apiserver.audit.policy import decode_policy
    from pykubelet.controlplane.apiserver.requestinfo import parse_request_info
    from pykubelet.controlplane.registry.store import User
    from pykubelet.lab.auditpolicy import POLICY

    layout = LabLayout("lab", 2)
    node = layout.node(1)
    cfg = node_config(node, None, audit_policy=str(layout.audit_policy_file))
    decoded = decode_config(cfg)
    assert decoded.controlPlane is not None
    assert decoded.controlPlane.auditPolicyFile == str(layout.audit_policy_file)
    assert decoded.controlPlane.auditLogPath == str(node.control_plane_root / "audit.log")
    plain = node_config(node, None)["controlPlane"]
    assert "auditPolicyFile" not in plain
    assert "auditLogPath" not in plain
    policy = decode_policy(yaml.safe_load(POLICY))
    admin = User("kubernetes-admin", ("system:masters", "system:authenticated"))
    node1 = User("system:node:node1", ("system:nodes", "system:authenticated"))
    for user, method, path, level in [
        (admin, "POST", "/api/v1/namespaces/a/pods", "Request"),
        (admin, "PUT", "/api/v1/namespaces/a/secrets/s", "Metadata"),
        (admin, "GET", "/api/v1/namespaces/a/pods", "Metadata"),
        (admin, "GET", "/readyz", "None"),
        (node1, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node1",
         "None"),
        (admin, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x",
         "Request"),
    ]:
        assert policy.level_and_stages(user, parse_request_info(method, path))[0] == level, (
            method, path)
