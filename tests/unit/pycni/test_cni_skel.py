"""The plugin side of the protocol: env + stdin -> result or error JSON + exit status."""

from __future__ import annotations

import ipaddress
import json

import pytest

from pycni.errors import InvalidEnvironment, InvalidNetNS
from pycni.skel import CmdArgs, Plugin, args_from_env, dispatch, run
from pycni.spec import IPConfig, Result

ENV = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "pcc-ctr",
    "CNI_NETNS": "/run/netns/pcc",
    "CNI_IFNAME": "eth0",
    "CNI_ARGS": "K8S_POD_NAME=p;IgnoreUnknown=1",
    "CNI_PATH": "/opt/cni/bin:/usr/lib/cni",
}
CONF = {"cniVersion": "1.0.0", "name": "pccnet", "type": "pcc-test"}


class Recorder:
    """A plugin whose calls are recorded; its ADD returns one address."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, CmdArgs]] = []
        self.fail: Exception | None = None

    def _record(self, verb: str, args: CmdArgs) -> None:
        self.calls.append((verb, args))
        if self.fail is not None:
            raise self.fail

    def add(self, args: CmdArgs) -> Result:
        self._record("add", args)
        return Result(cni_version="1.0.0",
                      ips=[IPConfig(ipaddress.ip_interface("10.91.5.2/24"))])

    def plugin(self) -> Plugin:
        return Plugin(
            name="pcc-test",
            add=self.add,
            delete=lambda a: self._record("del", a),
            check=lambda a: self._record("check", a),
            status=lambda a: self._record("status", a),
            about="pcc test plugin",
        )


def _run(rec: Recorder, conf: dict | bytes = CONF, **env: str) -> tuple[int, dict | None, str]:
    data = conf if isinstance(conf, bytes) else json.dumps(conf).encode()
    status, out, err = run(rec.plugin(), {**ENV, **env}, data)
    return status, (json.loads(out) if out else None), err


def test_args_from_env_reads_every_variable() -> None:
    args = args_from_env(ENV, b"{}")
    assert args.command == "ADD"
    assert args.container_id == "pcc-ctr"
    assert args.netns == "/run/netns/pcc"
    assert args.ifname == "eth0"
    assert args.path == ["/opt/cni/bin", "/usr/lib/cni"]
    assert args.args_dict() == {"K8S_POD_NAME": "p", "IgnoreUnknown": "1"}
    assert args.stdin_data == b"{}"


@pytest.mark.parametrize(
    ("command", "missing", "required"),
    [
        ("ADD", "CNI_NETNS", True),
        ("CHECK", "CNI_NETNS", True),
        ("DEL", "CNI_NETNS", False),
        ("ADD", "CNI_CONTAINERID", True),
        ("DEL", "CNI_CONTAINERID", True),
        ("ADD", "CNI_IFNAME", True),
        ("DEL", "CNI_PATH", True),
        ("STATUS", "CNI_CONTAINERID", False),
        ("VERSION", "CNI_PATH", False),
    ],
)
def test_required_variables_per_command(command: str, missing: str, required: bool) -> None:
    env = {k: v for k, v in {**ENV, "CNI_COMMAND": command}.items() if k != missing}
    if required:
        with pytest.raises(InvalidEnvironment) as exc:
            args_from_env(env, b"")
        assert missing in exc.value.msg
    else:
        assert args_from_env(env, b"").command == command


def test_add_prints_the_result_in_the_configs_version() -> None:
    rec = Recorder()
    status, out, _ = _run(rec, {**CONF, "cniVersion": "0.3.1"})
    assert status == 0
    assert out == {"cniVersion": "0.3.1",
                   "ips": [{"version": "4", "address": "10.91.5.2/24"}], "dns": {}}
    assert [v for v, _ in rec.calls] == ["add"]


def test_del_without_netns_reaches_the_plugin() -> None:
    rec = Recorder()
    env = {k: v for k, v in ENV.items() if k != "CNI_NETNS"}
    status, out, _ = run(rec.plugin(), {**env, "CNI_COMMAND": "DEL"}, json.dumps(CONF).encode())
    assert (status, out) == (0, "")
    assert rec.calls[0][1].netns == ""


def test_version_answers_supported_versions_without_a_config() -> None:
    status, out, _ = _run(Recorder(), b"", CNI_COMMAND="VERSION")
    assert status == 0
    assert out is not None
    assert out["cniVersion"] == "1.1.0"
    assert "0.4.0" in out["supportedVersions"]
    assert "1.1.0" in out["supportedVersions"]


def test_no_command_prints_about_on_stderr_and_succeeds() -> None:
    status, out, err = run(Recorder().plugin(), {}, b"")
    assert status == 0
    assert out == ""
    assert "pcc test plugin" in err
    assert "CNI protocol versions supported" in err


@pytest.mark.parametrize(
    ("conf", "env", "code", "words"),
    [
        (b"{bad json", {}, 6, "error parsing"),
        ({**CONF, "cniVersion": "9.9.9"}, {}, 1, "incompatible CNI versions"),
        ({k: v for k, v in CONF.items() if k != "type"}, {}, 7, "type"),
        ({k: v for k, v in CONF.items() if k != "name"}, {}, 7, '"name"'),
        ({**CONF, "name": ["x"]}, {}, 7, '"name" must be a string'),
        ({**CONF, "ipam": 5}, {}, 7, '"ipam"'),
        (CONF, {"CNI_NETNS": ""}, 4, "CNI_NETNS"),
        (CONF, {"CNI_COMMAND": "FROB"}, 4, "FROB"),
        ({**CONF, "cniVersion": "0.3.1"}, {"CNI_COMMAND": "CHECK"}, 1, "CHECK"),
        ({**CONF, "cniVersion": "1.0.0"}, {"CNI_COMMAND": "STATUS"}, 1, "STATUS"),
    ],
)
def test_malformed_input_gives_error_json_and_exit_1(
    conf: dict | bytes, env: dict[str, str], code: int, words: str
) -> None:
    rec = Recorder()
    status, out, _ = _run(rec, conf, **env)
    assert status == 1
    assert out is not None
    assert out["code"] == code
    assert words in out["msg"] + out.get("details", "")
    assert "cniVersion" in out
    assert rec.calls == []  # never reached the plugin: no state changed


def test_plugin_cni_error_is_printed_as_is() -> None:
    rec = Recorder()
    rec.fail = InvalidNetNS("netns gone", "/run/netns/pcc")
    status, out, _ = _run(rec)
    assert status == 1
    assert out == {"cniVersion": "1.0.0", "code": 8, "msg": "netns gone",
                   "details": "/run/netns/pcc"}


def test_unexpected_exception_becomes_internal_error() -> None:
    rec = Recorder()
    rec.fail = RuntimeError("boom")
    status, out, _ = _run(rec, CNI_COMMAND="DEL")
    assert status == 1
    assert out is not None
    assert (out["code"], out["msg"]) == (999, "boom")


def test_dispatch_returns_objects_for_in_process_callers() -> None:
    rec = Recorder()
    args = args_from_env(ENV, json.dumps(CONF).encode())
    result = dispatch(rec.plugin(), args)
    assert isinstance(result, Result)
    assert args.netconf().name == "pccnet"
    check = args_from_env({**ENV, "CNI_COMMAND": "CHECK"}, json.dumps(CONF).encode())
    assert dispatch(rec.plugin(), check) is None
    assert [v for v, _ in rec.calls] == ["add", "check"]


def test_status_and_gc_need_1_1_0() -> None:
    rec = Recorder()
    conf = {**CONF, "cniVersion": "1.1.0"}
    status, _, _ = _run(rec, conf, CNI_COMMAND="STATUS")
    assert status == 0
    status, _, _ = _run(rec, conf, CNI_COMMAND="GC")  # no gc hook: nothing to collect
    assert status == 0
    assert [v for v, _ in rec.calls] == ["status"]


def test_plugin_versions_restrict_what_it_accepts() -> None:
    rec = Recorder()
    plugin = rec.plugin()
    plugin.versions = ("0.4.0", "1.0.0")
    status, out, _ = run(plugin, ENV, json.dumps({**CONF, "cniVersion": "0.3.1"}).encode())
    assert status == 1
    assert json.loads(out)["code"] == 1
