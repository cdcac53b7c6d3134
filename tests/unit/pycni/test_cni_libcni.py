"""The runtime side's protocol logic, against real exec'd recorder plugins (no root).

Each recorder is a small shell script that logs its stdin and CNI_* env and
answers ADD with an interface named after itself; a marker file makes it fail.
The kernel-facing behaviour (bridges, namespaces) is in tests/integration/pycni.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pycni import invoke
from pycni.conf import conflist_from_bytes
from pycni.errors import (
    CNIError,
    IncompatibleVersion,
    InvalidEnvironment,
    InvalidNetworkConfig,
    PluginNotAvailable,
    UnknownContainer,
)
from pycni.libcni import CNIConfig, RuntimeConf
from pycni.spec import NetConfList

RECORDER = r"""#!/bin/sh
name=$(basename "$0")
log="$PCC_LOG"
n=$(ls "$log" | wc -l)
tag=$(printf '%03d' "$n")-$name-$CNI_COMMAND
cat > "$log/$tag.stdin"
env | grep '^CNI_' | sort > "$log/$tag.env"
if [ -e "$log/../fail-$name-$CNI_COMMAND" ]; then
  printf '{"cniVersion":"1.0.0","code":7,"msg":"%s refuses","details":"d"}' "$name"
  exit 1
fi
case "$CNI_COMMAND" in
  ADD) printf '{"cniVersion":"1.0.0","interfaces":[{"name":"%s"}],"dns":{}}' "$name" ;;
  VERSION) printf '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}' ;;
esac
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("pcc-a", "pcc-b", "pcc-c"):
        p = bin_dir / name
        p.write_text(RECORDER)
        p.chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("PCC_LOG", str(log))
    return {"bin": bin_dir, "log": log, "root": tmp_path, "cache": tmp_path / "cache"}


def _net(*types: str, version: str = "1.0.0", **extra: object) -> NetConfList:
    plugins = [{"type": t, "mark": t} for t in types]
    return conflist_from_bytes(
        json.dumps({"cniVersion": version, "name": "pccnet", "plugins": plugins, **extra}).encode()
    )


def _calls(log: Path) -> list[tuple[str, dict, dict]]:
    out = []
    for stdin in sorted(log.glob("*.stdin")):
        tag = stdin.name[: -len(".stdin")]  # "<seq>-<plugin name>-<command>"
        name, command = tag.split("-", 1)[1].rsplit("-", 1)
        env = dict(line.split("=", 1) for line in (log / f"{tag}.env").read_text().splitlines())
        text = stdin.read_text()
        out.append((f"{name}:{command}", json.loads(text) if text else {}, env))
    return out


def _cni(env: dict[str, Path]) -> CNIConfig:
    return CNIConfig([str(env["bin"])], cache_dir=str(env["cache"]))


RT = RuntimeConf("pcc-ctr1", "/run/netns/pcc-x", "eth0", args=[("K8S_POD_NAME", "web")])


def test_add_chains_prev_result_and_caches_the_last(env: dict[str, Path]) -> None:
    result = _cni(env).add_network_list(_net("pcc-a", "pcc-b", "pcc-c"), RT)
    assert [i.name for i in result.interfaces] == ["pcc-c"]
    calls = _calls(env["log"])
    assert [c[0] for c in calls] == ["pcc-a:ADD", "pcc-b:ADD", "pcc-c:ADD"]
    first, second = calls[0][1], calls[1][1]
    assert "prevResult" not in first
    assert second["prevResult"]["interfaces"] == [{"name": "pcc-a"}]
    assert calls[2][1]["prevResult"]["interfaces"] == [{"name": "pcc-b"}]
    for _, conf, cni_env in calls:
        assert (conf["name"], conf["cniVersion"]) == ("pccnet", "1.0.0")
        assert cni_env["CNI_CONTAINERID"] == "pcc-ctr1"
        assert cni_env["CNI_NETNS"] == "/run/netns/pcc-x"
        assert cni_env["CNI_IFNAME"] == "eth0"
        assert cni_env["CNI_ARGS"] == "K8S_POD_NAME=web"
        assert cni_env["CNI_PATH"] == str(env["bin"])
    cached = json.loads((env["cache"] / "results" / "pccnet-pcc-ctr1-eth0").read_text())
    assert cached["result"]["interfaces"] == [{"name": "pcc-c"}]


def test_del_runs_in_reverse_with_the_cached_result(env: dict[str, Path]) -> None:
    cni = _cni(env)
    net = _net("pcc-a", "pcc-b")
    cni.add_network_list(net, RT)
    cni.del_network_list(net, RT)
    calls = _calls(env["log"])[2:]
    assert [c[0] for c in calls] == ["pcc-b:DEL", "pcc-a:DEL"]
    for _, conf, _ in calls:
        assert conf["prevResult"]["interfaces"] == [{"name": "pcc-b"}]
    assert cni.get_cached_result(net, RT) is None
    cni.del_network_list(net, RT)  # twice: no cache left, plugins still called, no error
    assert [c[0] for c in _calls(env["log"])[4:]] == ["pcc-b:DEL", "pcc-a:DEL"]
    assert "prevResult" not in _calls(env["log"])[4][1]


def test_del_without_netns_passes_an_empty_cni_netns(env: dict[str, Path]) -> None:
    _cni(env).del_network_list(_net("pcc-a"), RuntimeConf("pcc-ctr1", "", "eth0"))
    assert _calls(env["log"])[0][2]["CNI_NETNS"] == ""


def test_del_before_0_4_0_gets_no_prev_result(env: dict[str, Path]) -> None:
    cni = _cni(env)
    net = _net("pcc-a", version="0.3.1")
    cni.add_network_list(net, RT)
    cni.del_network_list(net, RT)
    assert "prevResult" not in _calls(env["log"])[1][1]


def test_failed_add_rolls_back_in_reverse_and_caches_nothing(env: dict[str, Path]) -> None:
    (env["root"] / "fail-pcc-c-ADD").touch()
    with pytest.raises(InvalidNetworkConfig) as exc:
        _cni(env).add_network_list(_net("pcc-a", "pcc-b", "pcc-c"), RT)
    assert exc.value.code == 7
    assert exc.value.msg == 'plugin type="pcc-c" failed (add): pcc-c refuses'
    calls = _calls(env["log"])
    assert [c[0] for c in calls] == [
        "pcc-a:ADD", "pcc-b:ADD", "pcc-c:ADD", "pcc-c:DEL", "pcc-b:DEL", "pcc-a:DEL"]
    assert calls[3][1]["prevResult"]["interfaces"] == [{"name": "pcc-b"}]
    assert not (env["cache"] / "results" / "pccnet-pcc-ctr1-eth0").exists()


def test_failed_del_still_deletes_the_rest_and_keeps_the_cache(env: dict[str, Path]) -> None:
    cni = _cni(env)
    net = _net("pcc-a", "pcc-b")
    cni.add_network_list(net, RT)
    (env["root"] / "fail-pcc-b-DEL").touch()
    with pytest.raises(CNIError, match=r'plugin type="pcc-b" failed \(delete\)'):
        cni.del_network_list(net, RT)
    assert [c[0] for c in _calls(env["log"])[2:]] == ["pcc-b:DEL", "pcc-a:DEL"]
    assert cni.get_cached_result(net, RT) is not None  # a retry still gets prevResult
    (env["root"] / "fail-pcc-b-DEL").unlink()
    cni.del_network_list(net, RT)
    assert cni.get_cached_result(net, RT) is None


def test_check_uses_the_cached_result_and_needs_0_4_0(env: dict[str, Path]) -> None:
    cni = _cni(env)
    net = _net("pcc-a", "pcc-b")
    with pytest.raises(UnknownContainer, match="was ADD run"):
        cni.check_network_list(net, RT)
    cni.add_network_list(net, RT)
    cni.check_network_list(net, RT)
    checks = _calls(env["log"])[2:]
    assert [c[0] for c in checks] == ["pcc-a:CHECK", "pcc-b:CHECK"]
    assert checks[0][1]["prevResult"]["interfaces"] == [{"name": "pcc-b"}]
    old = _net("pcc-a", version="0.3.1")
    with pytest.raises(IncompatibleVersion, match="does not support the CHECK command"):
        cni.check_network_list(old, RT)


def test_disable_check_skips_the_plugins(env: dict[str, Path]) -> None:
    _cni(env).check_network_list(_net("pcc-a", disableCheck=True), RT)
    assert _calls(env["log"]) == []


def test_capability_args_reach_only_plugins_that_declare_them(env: dict[str, Path]) -> None:
    net = conflist_from_bytes(json.dumps({
        "cniVersion": "1.0.0", "name": "pccnet", "plugins": [
            {"type": "pcc-a", "capabilities": {"portMappings": True, "bandwidth": False}},
            {"type": "pcc-b"},
        ]}).encode())
    rt = RuntimeConf("pcc-ctr1", "/run/netns/pcc-x",
                     capability_args={"portMappings": [{"hostPort": 80}], "bandwidth": {"x": 1}})
    _cni(env).add_network_list(net, rt)
    calls = _calls(env["log"])
    assert calls[0][1]["runtimeConfig"] == {"portMappings": [{"hostPort": 80}]}
    assert "runtimeConfig" not in calls[1][1]


def test_a_plugin_that_is_missing_is_not_rolled_back(
    env: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """A plugin that cannot be found never ran: only the ones before it are undone, and no
    "rollback ... failed" repeats the error (the error is said once)."""
    with caplog.at_level("WARNING", logger="pycni.libcni"), pytest.raises(PluginNotAvailable):
        _cni(env).add_network_list(_net("pcc-a", "pcc-nope", "pcc-b"), RT)
    assert [c[0] for c in _calls(env["log"])] == ["pcc-a:ADD", "pcc-a:DEL"]
    assert caplog.records == []
    with caplog.at_level("WARNING", logger="pycni.libcni"), pytest.raises(PluginNotAvailable):
        _cni(env).add_network_list(_net("pcc-nope"), RT)
    assert caplog.records == []
    # its DEL (a runtime undoing the failed sandbox) runs the rest and reports it once
    with caplog.at_level("WARNING", logger="pycni.libcni"), pytest.raises(PluginNotAvailable):
        _cni(env).del_network_list(_net("pcc-a", "pcc-nope"), RT)
    assert caplog.records == []
    assert [c[0] for c in _calls(env["log"])][-1] == "pcc-a:DEL"
    assert not (env["cache"] / "results").exists()


def test_missing_plugin_names_type_and_dirs(env: dict[str, Path]) -> None:
    with pytest.raises(PluginNotAvailable) as exc:
        _cni(env).add_network_list(_net("pcc-nope"), RT)
    assert exc.value.code == 50
    assert "pcc-nope" in exc.value.msg
    assert str(env["bin"]) in exc.value.msg


@pytest.mark.parametrize(
    ("rt", "exc_type"),
    [
        (RuntimeConf("", "/x"), UnknownContainer),
        (RuntimeConf("bad id!", "/x"), InvalidEnvironment),
        (RuntimeConf("ok", "/x", ifname="a" * 16), InvalidEnvironment),
        (RuntimeConf("ok", "/x", ifname="et/h0"), InvalidEnvironment),
        (RuntimeConf("ok", "/x", ifname=""), InvalidEnvironment),
    ],
)
def test_bad_runtime_conf_is_refused_before_any_plugin_runs(
    env: dict[str, Path], rt: RuntimeConf, exc_type: type
) -> None:
    with pytest.raises(exc_type):
        _cni(env).add_network_list(_net("pcc-a"), rt)
    assert _calls(env["log"]) == []


def test_plugin_without_stdout_on_failure(env: dict[str, Path]) -> None:
    silent = env["bin"] / "pcc-silent"
    silent.write_text("#!/bin/sh\necho 'it hurts' >&2\nexit 3\n")
    silent.chmod(0o755)
    with pytest.raises(CNIError, match="netplugin failed: 'it hurts"):
        _cni(env).add_network_list(_net("pcc-silent"), RT)


def test_result_without_cni_version_gets_the_configs(env: dict[str, Path]) -> None:
    bare = env["bin"] / "pcc-bare"
    bare.write_text('#!/bin/sh\ncat >/dev/null\nprintf \'{"ips":[{"version":"4",'
                    '"address":"10.91.7.2/24"}]}\'\n')
    bare.chmod(0o755)
    result = _cni(env).add_network_list(_net("pcc-bare", version="0.4.0"), RT)
    assert result.cni_version == "0.4.0"
    assert str(result.ips[0].address) == "10.91.7.2/24"


def test_version_info_and_find_plugin(env: dict[str, Path]) -> None:
    assert _cni(env).version_info("pcc-a")["supportedVersions"] == ["0.4.0", "1.0.0"]
    assert invoke.find_plugin("pcc-a", ["/nonexistent", str(env["bin"])]) == str(
        env["bin"] / "pcc-a")
    with pytest.raises(PluginNotAvailable):
        invoke.find_plugin("../pcc-a", [str(env["bin"])])
    os.mkdir(env["bin"] / "pcc-dir")
    with pytest.raises(PluginNotAvailable):
        invoke.find_plugin("pcc-dir", [str(env["bin"])])


def test_status_runs_every_plugin_from_1_1_0_only(env: dict[str, Path]) -> None:
    cni = _cni(env)
    cni.get_status_network_list(_net("pcc-a", "pcc-b", version="1.0.0"))
    assert _calls(env["log"]) == []
    cni.get_status_network_list(_net("pcc-a", "pcc-b", version="1.1.0"))
    calls = _calls(env["log"])
    assert [c[0] for c in calls] == ["pcc-a:STATUS", "pcc-b:STATUS"]
    assert calls[0][1]["name"] == "pccnet"
    assert calls[0][2]["CNI_CONTAINERID"] == ""
    (env["root"] / "fail-pcc-b-STATUS").touch()
    with pytest.raises(CNIError, match="pcc-b refuses"):
        cni.get_status_network_list(_net("pcc-a", "pcc-b", version="1.1.0"))


def test_gc_deletes_stale_attachments_then_sends_the_valid_ones(env: dict[str, Path]) -> None:
    cni = _cni(env)
    net = _net("pcc-a", version="1.1.0")
    keep = RuntimeConf("pcc-keep", "/run/netns/k", "eth0")
    stale = RuntimeConf("pcc-stale", "/run/netns/s", "eth0", args=[("K", "V")])
    cni.add_network_list(net, keep)
    cni.add_network_list(net, stale)
    cni.gc_network_list(net, [("pcc-keep", "eth0")])
    calls = _calls(env["log"])[2:]
    assert [c[0] for c in calls] == ["pcc-a:DEL", "pcc-a:GC"]
    assert calls[0][2]["CNI_CONTAINERID"] == "pcc-stale"
    assert calls[0][2]["CNI_NETNS"] == "/run/netns/s"  # from the cache entry
    assert calls[0][2]["CNI_ARGS"] == "K=V"
    assert calls[1][1]["cni.dev/valid-attachments"] == [
        {"containerID": "pcc-keep", "ifname": "eth0"}]
    assert cni.get_cached_result(net, stale) is None
    assert cni.get_cached_result(net, keep) is not None


def test_cached_config_gives_back_the_list_and_args(env: dict[str, Path]) -> None:
    cni = _cni(env)
    net = _net("pcc-a")
    assert cni.get_cached_config(net, RT) is None
    rt = RuntimeConf("pcc-ctr1", "/run/netns/pcc-x", capability_args={"portMappings": []},
                     args=[("A", "1")])
    cni.add_network_list(net, rt)
    cached = cni.get_cached_config(net, RuntimeConf("pcc-ctr1", "/run/netns/pcc-x"))
    assert cached is not None
    data, cached_rt = cached
    assert data == net.source
    assert cached_rt.args == [("A", "1")]
    assert cached_rt.capability_args == {"portMappings": []}


def test_validate_network_list_asks_each_plugin_for_its_versions(env: dict[str, Path]) -> None:
    cni = _cni(env)
    net = conflist_from_bytes(json.dumps({"cniVersion": "1.0.0", "name": "pccnet", "plugins": [
        {"type": "pcc-a", "capabilities": {"portMappings": True, "ips": False}},
        {"type": "pcc-b", "capabilities": {"bandwidth": True}}]}).encode())
    assert cni.validate_network_list(net) == ["bandwidth", "portMappings"]
    assert [c[0] for c in _calls(env["log"])] == ["pcc-a:VERSION", "pcc-b:VERSION"]
    with pytest.raises(InvalidNetworkConfig, match=r'does not support config version "0\.3\.1"'):
        cni.validate_network_list(_net("pcc-a", version="0.3.1"))
    with pytest.raises(InvalidNetworkConfig, match="pcc-missing"):
        cni.validate_network_list(_net("pcc-a", "pcc-missing"))
