"""The result cache: libcni's file name and JSON shape."""

from __future__ import annotations

import base64
import ipaddress
import json
import os
from pathlib import Path

import pytest

from pycni import cache
from pycni.errors import InvalidEnvironment
from pycni.spec import Interface, IPConfig, Result


def _result() -> Result:
    return Result(
        cni_version="1.0.0",
        interfaces=[Interface("eth0", sandbox="/run/netns/pcc")],
        ips=[IPConfig(ipaddress.ip_interface("10.91.6.2/24"), ipaddress.ip_address("10.91.6.1"),
                      0)],
    )


def _att(config: bytes = b'{"name":"pccnet"}') -> cache.CachedAttachment:
    return cache.CachedAttachment(
        container_id="ctr1",
        network_name="pccnet",
        ifname="eth0",
        config=config,
        netns="/run/netns/pcc",
        cni_args=[("K8S_POD_NAME", "web")],
        capability_args={"portMappings": [{"hostPort": 8080}]},
    )


def test_file_name_and_json_shape_are_libcnis(tmp_path: Path) -> None:
    path = cache.write_result(str(tmp_path), "pccnet", _att(), _result(), "1.0.0")
    assert path == str(tmp_path / "results" / "pccnet-ctr1-eth0")
    doc = json.loads(Path(path).read_text())
    assert list(doc) == ["kind", "containerId", "config", "ifName", "networkName", "netns",
                         "cniArgs", "capabilityArgs", "result"]
    assert doc["kind"] == "cniCacheV1"
    assert base64.b64decode(doc["config"]) == b'{"name":"pccnet"}'
    assert doc["cniArgs"] == [["K8S_POD_NAME", "web"]]
    assert doc["result"]["ips"][0]["address"] == "10.91.6.2/24"
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "results").st_mode & 0o777 == 0o700


def test_read_back_converts_to_the_lists_version(tmp_path: Path) -> None:
    cache.write_result(str(tmp_path), "pccnet", _att(), _result(), "1.0.0")
    same = cache.read_result(str(tmp_path), "pccnet", "ctr1", "eth0", "1.0.0")
    assert same == _result()
    older = cache.read_result(str(tmp_path), "pccnet", "ctr1", "eth0", "0.4.0")
    assert older is not None
    assert older.cni_version == "0.4.0"
    att = cache.read_attachment(str(tmp_path), "pccnet", "ctr1", "eth0")
    assert att is not None
    assert att.cni_args == [("K8S_POD_NAME", "web")]
    assert att.capability_args == {"portMappings": [{"hostPort": 8080}]}
    assert att.netns == "/run/netns/pcc"


def test_missing_entry_is_none_and_delete_is_idempotent(tmp_path: Path) -> None:
    assert cache.read_result(str(tmp_path), "pccnet", "ctr1", "eth0", "1.0.0") is None
    cache.write_result(str(tmp_path), "pccnet", _att(), _result(), "1.0.0")
    cache.delete_result(str(tmp_path), "pccnet", "ctr1", "eth0")
    cache.delete_result(str(tmp_path), "pccnet", "ctr1", "eth0")
    assert not (tmp_path / "results" / "pccnet-ctr1-eth0").exists()


def test_legacy_bare_result_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "pccnet-ctr1-eth0").write_text(json.dumps(_result().to_dict("0.3.1")))
    got = cache.read_result(str(tmp_path), "pccnet", "ctr1", "eth0", "0.3.1")
    assert got is not None
    assert str(got.ips[0].address) == "10.91.6.2/24"


def test_corrupt_entry_raises(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "pccnet-ctr1-eth0").write_text("{nope")
    with pytest.raises(ValueError, match="pccnet"):
        cache.read_result(str(tmp_path), "pccnet", "ctr1", "eth0", "1.0.0")


def test_path_needs_all_three_parts(tmp_path: Path) -> None:
    with pytest.raises(InvalidEnvironment):
        cache.cache_path(str(tmp_path), "pccnet", "", "eth0")


def test_list_attachments_filters_by_container(tmp_path: Path) -> None:
    cache.write_result(str(tmp_path), "pccnet", _att(), _result(), "1.0.0")
    other = _att()
    other.container_id = "ctr1-b"
    cache.write_result(str(tmp_path), "pccnet", other, _result(), "1.0.0")
    assert {a.container_id for a in cache.list_attachments(str(tmp_path))} == {"ctr1", "ctr1-b"}
    assert [a.container_id for a in cache.list_attachments(str(tmp_path), "ctr1")] == ["ctr1"]
