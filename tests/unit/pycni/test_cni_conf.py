"""Conf-dir loading, libcni's and kubelet's rules case by case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pycni.conf import (
    ConfError,
    NoConfigFiles,
    NoValidNetwork,
    conflist_from_bytes,
    load_conf_dir,
    loopback_network,
)

BRIDGE = {"type": "bridge", "bridge": "pccbr0", "ipam": {"type": "host-local"}}


def _write(d: Path, name: str, doc: object) -> Path:
    p = d / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _list(name: str, *plugins: dict, version: str = "1.0.0") -> dict:
    return {"cniVersion": version, "name": name, "plugins": list(plugins)}


def test_empty_dir_is_no_networks(tmp_path: Path) -> None:
    with pytest.raises(NoConfigFiles) as exc:
        load_conf_dir(str(tmp_path))
    assert str(exc.value) == f"no networks found in {tmp_path}"


def test_missing_dir_is_no_networks_too(tmp_path: Path) -> None:
    with pytest.raises(NoConfigFiles):
        load_conf_dir(str(tmp_path / "absent"))


def test_other_extensions_and_directories_do_not_count(tmp_path: Path) -> None:
    _write(tmp_path, "10-net.conflist.bak", _list("bak", BRIDGE))
    _write(tmp_path, "README", "hello")
    (tmp_path / "20-dir.conflist").mkdir()
    with pytest.raises(NoConfigFiles):
        load_conf_dir(str(tmp_path))


def test_first_file_by_name_wins(tmp_path: Path) -> None:
    _write(tmp_path, "20-b.conflist", _list("b", BRIDGE))
    _write(tmp_path, "10-a.conflist", _list("a", BRIDGE))
    _write(tmp_path, "05-c.json", {"cniVersion": "0.4.0", "name": "c", **BRIDGE})
    net, warnings = load_conf_dir(str(tmp_path))
    assert net.name == "c"
    assert net.file == str(tmp_path / "05-c.json")
    assert warnings == []


def test_sorting_is_by_byte_order_not_natural(tmp_path: Path) -> None:
    _write(tmp_path, "9-late.conflist", _list("nine", BRIDGE))
    _write(tmp_path, "10-early.conflist", _list("ten", BRIDGE))
    _write(tmp_path, "A-upper.conflist", _list("upper", BRIDGE))
    assert load_conf_dir(str(tmp_path))[0].name == "ten"


def test_conf_becomes_a_one_plugin_list(tmp_path: Path) -> None:
    conf = {"cniVersion": "0.3.1", "name": "single", **BRIDGE}
    _write(tmp_path, "10-single.conf", conf)
    net, _ = load_conf_dir(str(tmp_path))
    assert (net.name, net.cni_version) == ("single", "0.3.1")
    assert net.plugins == [conf]
    assert net.disable_check is False


def test_conf_without_type_is_skipped_with_a_warning(tmp_path: Path) -> None:
    _write(tmp_path, "10-list-in-conf.conf", _list("wrong", BRIDGE))
    _write(tmp_path, "20-good.conflist", _list("good", BRIDGE))
    net, warnings = load_conf_dir(str(tmp_path))
    assert net.name == "good"
    assert len(warnings) == 1
    assert "10-list-in-conf.conf" in warnings[0]
    assert "no 'type'; perhaps this is a .conflist?" in warnings[0]


def test_list_without_plugins_is_skipped(tmp_path: Path) -> None:
    _write(tmp_path, "10-noplugins.conflist", {"cniVersion": "1.0.0", "name": "none"})
    _write(tmp_path, "11-emptyplugins.conflist", _list("empty"))
    _write(tmp_path, "20-good.conflist", _list("good", BRIDGE))
    net, warnings = load_conf_dir(str(tmp_path))
    assert net.name == "good"
    assert "has no networks, skipping" in warnings[0]
    assert "10-noplugins.conflist" in warnings[0]
    assert "11-emptyplugins.conflist" in warnings[1]
    assert "no plugins in list" in warnings[1]


@pytest.mark.parametrize("name", ["10-bad.conf", "10-bad.conflist", "10-bad.json"])
def test_invalid_json_is_skipped_with_a_warning(tmp_path: Path, name: str) -> None:
    _write(tmp_path, name, '{"cniVersion": "1.0.0", "name": ')
    _write(tmp_path, "20-good.conflist", _list("good", BRIDGE))
    net, warnings = load_conf_dir(str(tmp_path))
    assert net.name == "good"
    assert len(warnings) == 1
    assert name in warnings[0]


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"cniVersion": "1.0.0", "plugins": [BRIDGE]}, "no name"),
        ({"name": 5, "plugins": [BRIDGE]}, "invalid name type"),
        ({"name": "n", "cniVersion": 1, "plugins": [BRIDGE]}, "invalid cniVersion type"),
        ({"name": "n", "plugins": {"type": "bridge"}}, "invalid 'plugins' type"),
        ({"name": "n", "plugins": [{"bridge": "x"}]}, "failed to parse plugin config 0"),
        ({"name": "n", "plugins": ["bridge"]}, "failed to parse plugin config 0"),
        ({"name": "n", "disableCheck": "maybe", "plugins": [BRIDGE]}, "disableCheck"),
        ({"name": "n", "plugins": [{"type": "b", "capabilities": {"x": "yes"}}]},
         "capabilities"),
        ([1, 2], "JSON object"),
    ],
)
def test_invalid_lists_are_skipped_naming_the_problem(
    tmp_path: Path, doc: object, words: str
) -> None:
    _write(tmp_path, "10-bad.conflist", doc)
    with pytest.raises(NoValidNetwork) as exc:
        load_conf_dir(str(tmp_path))
    assert str(exc.value) == f"no valid networks found in {tmp_path}"
    assert words in exc.value.warnings[0]


def test_nothing_valid_is_the_second_error(tmp_path: Path) -> None:
    _write(tmp_path, "10-a.conf", "{")
    _write(tmp_path, "20-b.conflist", {"name": "x"})
    with pytest.raises(NoValidNetwork) as exc:
        load_conf_dir(str(tmp_path))
    assert len(exc.value.warnings) == 2


def test_disable_check_accepts_strings_as_libcni_does() -> None:
    assert conflist_from_bytes(
        json.dumps({"name": "n", "disableCheck": "TRUE", "plugins": [BRIDGE]}).encode()
    ).disable_check is True
    assert conflist_from_bytes(
        json.dumps({"name": "n", "disableCheck": False, "plugins": [BRIDGE]}).encode()
    ).disable_check is False


def test_list_keeps_its_source_bytes_for_the_cache() -> None:
    data = json.dumps(_list("n", BRIDGE)).encode()
    assert conflist_from_bytes(data).source == data


def test_loopback_network_is_kubelets_get_lo_network() -> None:
    lo = loopback_network()
    assert (lo.name, lo.cni_version) == ("cni-loopback", "0.2.0")
    assert lo.plugins == [{"type": "loopback"}]
    assert loopback_network("pycni-loopback").plugins == [{"type": "pycni-loopback"}]


def test_unreadable_file_is_skipped(tmp_path: Path) -> None:
    link = tmp_path / "10-dangling.conflist"
    link.symlink_to(tmp_path / "nowhere")
    _write(tmp_path, "20-good.conflist", _list("good", BRIDGE))
    net, warnings = load_conf_dir(str(tmp_path))
    assert net.name == "good"
    assert "10-dangling.conflist" in warnings[0]


def test_conf_error_is_the_base(tmp_path: Path) -> None:
    with pytest.raises(ConfError):
        load_conf_dir(str(tmp_path))


def test_cni_versions_picks_the_highest_we_speak() -> None:
    doc = {"name": "n", "cniVersion": "0.4.0", "cniVersions": ["1.0.0", "9.0.0", "0.3.1"],
           "plugins": [BRIDGE]}
    assert conflist_from_bytes(json.dumps(doc).encode()).cni_version == "1.0.0"
    with pytest.raises(ConfError, match="cniVersions"):
        conflist_from_bytes(json.dumps({**doc, "cniVersions": "1.0.0"}).encode())
    with pytest.raises(ConfError, match="cniVersions entry"):
        conflist_from_bytes(json.dumps({**doc, "cniVersions": ["one"]}).encode())


def test_load_conf_list_by_name_prefers_lists_then_single_confs(tmp_path: Path) -> None:
    from pycni.conf import NetworkNotFound, load_conf_list

    with pytest.raises(ConfError, match=f"no net configurations found in {tmp_path}"):
        load_conf_list(str(tmp_path), "x")
    _write(tmp_path, "10-a.conflist", _list("alpha", BRIDGE))
    _write(tmp_path, "20-b.conf", {"cniVersion": "0.4.0", "name": "beta", **BRIDGE})
    _write(tmp_path, "05-alpha.conf", {"cniVersion": "0.4.0", "name": "alpha", **BRIDGE})
    assert load_conf_list(str(tmp_path), "alpha").file == str(tmp_path / "10-a.conflist")
    beta = load_conf_list(str(tmp_path), "beta")
    assert (beta.name, beta.cni_version, len(beta.plugins)) == ("beta", "0.4.0", 1)
    with pytest.raises(NetworkNotFound) as exc:
        load_conf_list(str(tmp_path), "gamma")
    assert str(exc.value) == f'no net configuration with name "gamma" in {tmp_path}'
