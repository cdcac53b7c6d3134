"""The lab's local registry, its pure parts: where it listens and keeps its data, the
config docker-registry reads, what it is pre-loaded with, how every node trusts it, and
how `lab status` shows it."""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path

import pytest

from pykubelet.config import decode_config
from pykubelet.lab import image_server, state
from pykubelet.lab.layout import LabLayout
from pykubelet.lab.nodeconfig import JoinInfo, node_config
from pykubelet.lab.report import LabReport, NodeReport, render_table
from pykubelet.lab.state import LabState, ProcessRef

JOIN = JoinInfo("https://10.250.0.11:6443", "abcdef.0123456789abcdef", "sha256:00ff")


def test_the_registry_listens_on_the_bridges_host_address_only() -> None:
    ten = ipaddress.ip_network("10.0.0.0/8")
    for k in (0, 7, 255):
        lab = LabLayout("lab", 2, subnet_index=k)
        host, _, port = lab.registry_address.rpartition(":")
        assert host == lab.gateway  # the host's end of the lab bridge, as the front address
        assert ipaddress.ip_address(host) in ten
        assert ipaddress.ip_address(host) in lab.subnet
        assert port == "5000"  # kind's and k3d's registry port
        cfg = image_server.registry_config(lab)
        assert cfg["http"] == {"addr": lab.registry_address}  # no debug or metrics listener
        assert not cfg["http"]["addr"].startswith(("0.0.0.0", ":", "[::]"))
    assert LabLayout("lab", 1).registry_address == "10.250.0.1:5000"


def test_the_registry_keeps_its_data_in_the_labs_directory() -> None:
    lab = LabLayout("lab", 1, state_root=Path("/s"))
    cfg = image_server.registry_config(lab)
    data = Path(cfg["storage"]["filesystem"]["rootdirectory"])
    assert data == lab.registry_data_dir
    for path in (lab.registry_data_dir, lab.registry_config_file, lab.registry_log):
        assert path.is_relative_to(lab.state_dir)  # `down` removes the state directory
    assert cfg["storage"]["delete"] == {"enabled": True}  # users may delete what they push
    assert cfg["version"] == 0.1


def test_the_registry_is_pre_loaded_with_busybox_latest_and_its_release() -> None:
    assert image_server.preloaded_tags("1.35") == ["library/busybox:latest",
                                                     "library/busybox:1.35"]
    assert image_server.preloaded_tags("") == ["library/busybox:latest"]
    lab = LabLayout("lab", 1, subnet_index=3)
    assert image_server.image_ref(lab, "library/busybox:latest") == \
        "10.250.3.1:5000/library/busybox:latest"


def test_every_node_trusts_the_lab_registry_as_insecure() -> None:
    lab = LabLayout("lab", 3, subnet_index=2)
    for node in lab.node_layouts():
        cfg = node_config(node, None if node.index == 1 else JOIN)
        assert cfg["insecureRegistries"] == ["10.250.2.1:5000"]
        assert decode_config(cfg).insecureRegistries == ["10.250.2.1:5000"]


def test_an_etcd_labs_nodes_trust_it_too() -> None:
    lab = LabLayout("ha", 4, control_planes=3)
    cfg = node_config(lab.node(2), JOIN, api_servers=lab.api_servers_for(2))
    assert cfg["insecureRegistries"] == [lab.registry_address]


def _config(**extra: object) -> dict[str, object]:
    return {"apiVersion": "pykubelet.io/v1alpha1", "kind": "KubeletConfiguration", **extra}


def test_insecure_registries_decode_as_host_or_host_port() -> None:
    assert decode_config(_config()).insecureRegistries == []
    got = decode_config(_config(insecureRegistries=["10.250.0.1:5000", "registry.local"]))
    assert got.insecureRegistries == ["10.250.0.1:5000", "registry.local"]


@pytest.mark.parametrize(("value", "error"), [
    ("10.250.0.1:5000", "insecureRegistries: expected a list of HOST[:PORT], got str"),
    ([5000], "insecureRegistries[0]: expected a string, got int"),
    (["http://10.250.0.1:5000"], "insecureRegistries[0]: expected HOST[:PORT] (no scheme or "
                                 "path), got 'http://10.250.0.1:5000'"),
    (["a:b"], "insecureRegistries[0]: expected HOST[:PORT] (no scheme or path), got 'a:b'"),
    ([""], "insecureRegistries[0]: expected HOST[:PORT] (no scheme or path), got ''"),
])
def test_bad_insecure_registries_name_the_field(value: object, error: str) -> None:
    with pytest.raises(ValueError) as exc:  # the node config's error (a ValueError)
        decode_config(_config(insecureRegistries=value))
    assert str(exc.value) == error


def test_the_embedded_runtime_is_told_the_nodes_insecure_registries() -> None:
    from pykubelet.cli.run_cmd import runtime_argv

    cfg = decode_config(_config(insecureRegistries=["10.250.0.1:5000", "r.local"]))
    argv = runtime_argv(cfg, "/run/x/cri.sock", "warning")
    assert argv[argv.index("--insecure-registry") + 1] == "10.250.0.1:5000"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--insecure-registry"] == [
        "10.250.0.1:5000", "r.local"]
    assert "--insecure-registry" not in runtime_argv(decode_config(_config()), "/s", "info")


def test_the_registry_process_round_trips_in_the_state(tmp_path: Path) -> None:
    st = LabState("r", 1, 0, str(tmp_path), str(tmp_path / "run"),
                  registry=ProcessRef(4321, 9.5))
    state.save(st)
    back = state.load(tmp_path / "r" / "lab.json")
    assert back == st
    old = json.loads((tmp_path / "r" / "lab.json").read_text())
    del old["registry"]  # a lab made before the registry: none recorded
    (tmp_path / "r" / "lab.json").write_text(json.dumps(old))
    back = state.load(tmp_path / "r" / "lab.json")
    assert back is not None
    assert back.registry is None


def test_status_shows_the_registry_and_json_has_its_address() -> None:
    node = NodeReport("node1", "10.250.0.11", True, 10, 10)
    r = LabReport("lab", [node], "node1", registry="10.250.0.1:5000", registry_pid=77)
    doc = r.to_json()
    assert list(doc) == ["name", "nodes", "leader", "registry", "registryPid"]
    assert (doc["registry"], doc["registryPid"]) == ("10.250.0.1:5000", 77)
    assert "registry: 10.250.0.1:5000 (pid 77)" in render_table(r)


def test_status_says_when_the_registry_process_is_gone() -> None:
    node = NodeReport("node1", "10.250.0.11", True, 10, 10)
    r = LabReport("lab", [node], "node1", registry="10.250.0.1:5000", registry_pid=None,
                  registry_error="not running (pid 77 exited)")
    doc = r.to_json()
    assert (doc["registry"], doc["registryPid"]) == ("10.250.0.1:5000", None)
    assert ("registry: 10.250.0.1:5000 not running (pid 77 exited); start it again with: "
            "pykubelet lab restart-node node1 --name lab") in render_table(r)


def test_a_registry_that_died_is_reported_with_its_pid(tmp_path: Path) -> None:
    from pykubelet.lab.report import registry_status

    lab_state = LabState("r", 1, 0, str(tmp_path), str(tmp_path / "run"),
                         registry=ProcessRef(os.getpid(), 1.0))  # our pid, another start
    pid, error = registry_status(lab_state)
    assert pid is None
    assert error == f"not running (pid {os.getpid()} exited)"
    assert registry_status(LabState("r", 1, 0, str(tmp_path), str(tmp_path / "run"))) == (
        None, "not started")


def test_the_registry_is_documented_in_the_cluster_as_kep_1755_says() -> None:
    lab = LabLayout("lab", 2, subnet_index=1)
    cm = image_server.hosting_configmap(lab)
    assert cm["metadata"] == {"name": "local-registry-hosting", "namespace": "kube-public"}
    assert (cm["apiVersion"], cm["kind"]) == ("v1", "ConfigMap")
    import yaml

    hosting = yaml.safe_load(cm["data"]["localRegistryHosting.v1"])
    assert hosting == {"host": "10.250.1.1:5000", "hostFromContainerRuntime": "10.250.1.1:5000"}
