"""Fuzzed CNI inputs (issue 29 item 3): a plugin's stdin config and environment, the bridge
and host-local configs and conf files either decode or raise one of pycni's CNI errors
(each a spec code and a message naming the field); the plugin protocol answers exit 1 with
that error's JSON, never code 999 (Internal) for bad input."""

from __future__ import annotations

import json

from fuzz_strategies import FUZZ, JSON, check_message, mutated
from hypothesis import given
from hypothesis import strategies as st

from pycni import skel
from pycni.conf import ConfError, conflist_from_bytes
from pycni.errors import CNIError
from pycni.ipam.hostlocal.config import load_ipam_config
from pycni.plugins.bridge import load_conf
from pycni.spec import Result, parse_netconf

CONF = {"cniVersion": "1.0.0", "name": "net", "type": "pycni-bridge", "bridge": "cni0",
        "isGateway": True, "ipMasq": True, "mtu": 1500, "vlan": 0,
        "ipam": {"type": "pycni-host-local", "dataDir": "/tmp/x",
                 "ranges": [[{"subnet": "10.1.0.0/24", "rangeStart": "10.1.0.10",
                              "gateway": "10.1.0.1"}], [{"subnet": "fd00::/64"}]],
                 "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}]},
        "dns": {"nameservers": ["10.1.0.1"], "search": ["a"]},
        "runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 8080,
                                            "protocol": "tcp"}]},
        "prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0"}],
                       "ips": [{"address": "10.1.0.5/24", "gateway": "10.1.0.1",
                                "interface": 0}],
                       "routes": [{"dst": "0.0.0.0/0"}]}}
CONFLIST = {"cniVersion": "1.0.0", "name": "net",
            "plugins": [{k: v for k, v in CONF.items() if k not in ("cniVersion", "name")},
                        {"type": "portmap", "capabilities": {"portMappings": True}}]}
STDIN = st.one_of(mutated(CONF).map(lambda d: json.dumps(d).encode()),
                  JSON.map(lambda d: json.dumps(d).encode()), st.binary(max_size=64))
ENV = st.fixed_dictionaries(
    {"CNI_COMMAND": st.sampled_from(["ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC", "X"]),
     "CNI_CONTAINERID": st.sampled_from(["c1", "", "a/b", "x" * 300])},
    optional={"CNI_NETNS": st.sampled_from(["/run/netns/x", "", "rel"]),
              "CNI_IFNAME": st.sampled_from(["eth0", "", "x" * 20, "a/b", "."]),
              "CNI_ARGS": st.sampled_from(["", "IP=10.1.0.7", "K", "MAC=zz", "IP=bad;A=b"]),
              "CNI_PATH": st.sampled_from(["/opt/cni/bin", ""])})


@FUZZ
@given(STDIN)
def test_plugin_configs_decode_or_are_cni_errors(stdin: bytes) -> None:
    error: CNIError | None = None
    try:
        conf = parse_netconf(stdin)
        load_conf(conf, "")
        if conf.ipam:
            load_ipam_config(conf.raw)
    except CNIError as exc:
        error = exc
    if error is not None:
        check_message(error)
        assert error.code != 999, error


def _parsing_plugin() -> skel.Plugin:
    """A plugin whose every verb only reads its config as bridge and host-local do."""

    def add(args: skel.CmdArgs) -> Result:
        conf = load_conf(args.netconf(), args.args)
        if conf.netconf.ipam:
            load_ipam_config(args.netconf().raw, args.args)
        return Result(cni_version=args.netconf().cni_version)

    def other(args: skel.CmdArgs) -> None:
        add(args)

    return skel.Plugin("pycni-fuzz", add=add, delete=other, check=other, status=other,
                       gc=other)


@FUZZ
@given(ENV, STDIN)
def test_the_plugin_protocol_answers_a_spec_error(env: dict[str, str], stdin: bytes) -> None:
    code, out, _err = skel.run(_parsing_plugin(), env, stdin)
    assert code in (0, 1)
    if code == 1:
        error = json.loads(out)
        assert error["code"] != 999, error
        check_message(ValueError(error["msg"]))


@FUZZ
@given(st.one_of(mutated(CONFLIST).map(lambda d: json.dumps(d).encode()),
                 st.binary(max_size=64)))
def test_conf_files_decode_or_are_conf_errors(data: bytes) -> None:
    try:
        conflist_from_bytes(data, "10-net.conflist")
    except (ConfError, CNIError) as exc:
        check_message(exc)
