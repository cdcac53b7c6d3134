"""Coverage-guided fuzzing (atheris, libFuzzer) of every decoder and parser that takes input
from outside (issue 29 item 3): the API's JSON and YAML bodies, quantities, selectors,
patches, CNI configs and the plugin protocol, SPDY frames, the exec resize and error
channels, the KubeSchedulerConfiguration decoder, and CRI requests.

Each target feeds the fuzzer's bytes to one entry point and lets only that module's
declared errors through; anything else escapes, and libFuzzer reports it as a crash with
the input saved. Targets start from a small corpus of valid inputs, so mutations reach the
deep code. Opt-in (atheris comes with ``pip install -e .[fuzz]``):

    scripts/fuzz.sh [SECONDS]                            # every target, SECONDS each (60)
    .venv/bin/python bench/fuzz_bench.py --all --seconds 30 [--out DIR]
    .venv/bin/python bench/fuzz_bench.py --target spdy --seconds 300

The report is one line per target: executions, executions per second, new coverage
features, crashes (and where the crashing input was written).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                 "finalizers": ["a/b"]},
    "spec": {"containers": [{
        "name": "app", "image": "busybox", "command": ["sh"], "ports": [{"containerPort": 80}],
        "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
        "securityContext": {"capabilities": {"drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}}}],
        "tolerations": [{"key": "k", "operator": "Exists"}]}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                       "template": {"metadata": {"labels": {"app": "d"}},
                                    "spec": POD["spec"]}}}
CNI_CONF = {"cniVersion": "1.0.0", "name": "net", "type": "pycni-bridge", "bridge": "cni0",
            "isGateway": True, "ipMasq": True,
            "ipam": {"type": "pycni-host-local", "ranges": [[{"subnet": "10.1.0.0/24"}]],
                     "routes": [{"dst": "0.0.0.0/0"}]},
            "prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0"}],
                           "ips": [{"address": "10.1.0.5/24", "interface": 0}]}}
SCHED = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
         "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n"
         "      enabled: [{name: NodeResourcesFit, weight: 2}]\n  pluginConfig:\n"
         "  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated}}\n")


def _j(obj: Any) -> bytes:
    return json.dumps(obj).encode()


# --------------------------------------------------------------------------- targets
def t_api_json(data: bytes) -> None:
    import orjson

    from pykubelet.api.kinds import decode_any
    from pykubelet.api.machinery.errors import DecodeError

    try:
        decode_any(orjson.loads(data))
    except (orjson.JSONDecodeError, DecodeError):
        pass


def t_api_yaml(data: bytes) -> None:
    import yaml

    from pykubelet.api.kinds import decode_any
    from pykubelet.api.machinery import yamlalias
    from pykubelet.api.machinery.errors import DecodeError
    from pykubelet.controlplane.apiserver.handlers.rest import YAML_LOADER

    try:
        decode_any(yamlalias.load(data, YAML_LOADER))
    except (yaml.YAMLError, DecodeError, RecursionError):  # RecursionError: rest.py's 400
        pass


def t_quantity(data: bytes) -> None:
    from pykubelet.api.machinery.quantity import QuantityError, parse_quantity

    try:
        parse_quantity(data.decode("utf-8", "replace"))
    except QuantityError:
        pass


def t_selectors(data: bytes) -> None:
    from pykubelet.controlplane.registry.selectors import (
        SelectorError,
        parse_field_selector,
        parse_label_selector,
    )

    text = data.decode("utf-8", "replace")
    for parse in (parse_label_selector, parse_field_selector):
        try:
            parse(text)
        except SelectorError:
            pass


def t_patches(data: bytes) -> None:
    import copy

    import orjson

    from pykubelet.api.kinds import by_resource
    from pykubelet.controlplane.registry.patch import (
        JSON_PATCH,
        MERGE_PATCH,
        STRATEGIC_MERGE_PATCH,
        PatchError,
        apply_patch,
    )

    kind = by_resource("", "pods")

    def meta(path: tuple[str, ...]) -> Any:
        try:
            return kind.patch_meta(*path)
        except (KeyError, TypeError):
            return None

    try:
        patch = orjson.loads(data)
    except orjson.JSONDecodeError:
        return
    for patch_type in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        try:
            apply_patch(patch_type, copy.deepcopy(POD), patch, meta)
        except PatchError:
            pass


def t_cni_conf(data: bytes) -> None:
    from pycni.conf import ConfError, conflist_from_bytes
    from pycni.errors import CNIError
    from pycni.ipam.hostlocal.config import load_ipam_config
    from pycni.plugins.bridge import load_conf
    from pycni.spec import parse_netconf

    try:
        conf = parse_netconf(data)
        load_conf(conf, "")
        if conf.ipam:
            load_ipam_config(conf.raw)
    except CNIError as exc:
        if exc.code == 999:
            raise
    try:
        conflist_from_bytes(data, "fuzz.conflist")
    except (ConfError, CNIError):
        pass


def t_cni_skel(data: bytes) -> None:
    from pycni import skel
    from pycni.ipam.hostlocal.config import load_ipam_config
    from pycni.plugins.bridge import load_conf
    from pycni.spec import Result

    env_part, _, stdin = data.partition(b"\n")
    keys = ("CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS",
            "CNI_PATH")
    values = env_part.decode("utf-8", "replace").split(";")
    env = {k: v for k, v in zip(keys, values, strict=False)}

    def add(args: skel.CmdArgs) -> Result:
        conf = load_conf(args.netconf(), args.args)
        if conf.netconf.ipam:
            load_ipam_config(args.netconf().raw, args.args)
        return Result(cni_version=args.netconf().cni_version)

    def other(args: skel.CmdArgs) -> None:
        add(args)

    plugin = skel.Plugin("pycni-fuzz", add=add, delete=other, check=other, status=other,
                         gc=other)
    code, out, _ = skel.run(plugin, env, stdin)
    if code == 1 and json.loads(out)["code"] == 999:
        raise AssertionError(f"internal error for bad input: {out}")


def t_spdy(data: bytes) -> None:
    from pykubelet.streaming import spdy

    framer = spdy.Framer()
    try:
        for i in range(0, len(data), 97):  # in pieces, as a socket delivers them
            framer.feed(data[i:i + 97])
    except spdy.SpdyError:
        pass


def t_exec_channels(data: bytes) -> None:
    from pykubelet.streaming.protocols import (
        RemoteCommandError,
        ResizeDecoder,
        exit_code_from_status,
    )

    decoder = ResizeDecoder()
    for i in range(0, len(data), 13):
        decoder.feed(data[i:i + 13])
    try:
        exit_code_from_status(data)
    except RemoteCommandError:
        pass


def t_sched_config(data: bytes) -> None:
    import yaml

    from pykubelet.api.machinery.manifest import SyntaxProblem, parse_document
    from pysched.config import ConfigError, load_config

    try:
        doc = parse_document(data.decode("utf-8", "replace"))
    except (SyntaxProblem, yaml.YAMLError, RecursionError):
        return
    if not isinstance(doc, dict):
        return
    try:
        load_config(doc)
    except ConfigError:
        pass


def t_cri_container(data: bytes) -> None:
    from dataclasses import dataclass

    from google.protobuf.message import DecodeError

    from pykubelet._proto.runtime.v1 import api_pb2 as pb
    from pykubelet.runtime.cri.container_rpc import config_from_pb
    from pykubelet.runtime.errors import CRIError
    from pykubelet.runtime.images import ImageConfig
    from pykubelet.runtime.oci_spec import ResolvedUser, build_spec

    @dataclass
    class Sandbox:
        id: str = "sb"
        name: str = "p"
        namespace: str = "default"
        uid: str = "u"
        hostname: str = "p"
        netns_path: str = "/run/netns/x"
        ipc_ns_path: str = ""
        uts_ns_path: str = ""
        hosts_path: str = ""
        resolv_path: str = ""
        hostname_path: str = ""
        log_directory: str = "/var/log/pods/x"
        cgroup_parent: str = "/kubepods"

    try:
        config = pb.ContainerConfig.FromString(data)
    except DecodeError:
        return
    try:
        spec = config_from_pb(config)
        build_spec(spec, ImageConfig(entrypoint=["sh"]), Sandbox(), ResolvedUser(0, 0),
                   "/kubepods/x", pid_ns_path="/proc/1/ns/pid")
    except CRIError:
        pass


def t_cri_sandbox(data: bytes) -> None:
    from google.protobuf.message import DecodeError

    from pykubelet._proto.runtime.v1 import api_pb2 as pb
    from pykubelet.runtime.cri.sandbox_rpc import spec_from_config
    from pykubelet.runtime.errors import CRIError

    try:
        config = pb.PodSandboxConfig.FromString(data)
    except DecodeError:
        return
    try:
        spec_from_config(config)
    except CRIError:
        pass


def _cri_seeds() -> list[bytes]:
    from pykubelet._proto.runtime.v1 import api_pb2 as pb

    c = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="app"),
                           image=pb.ImageSpec(image="busybox"), command=["sh"],
                           envs=[pb.KeyValue(key="A", value="1")],
                           mounts=[pb.Mount(container_path="/data", host_path="/tmp")])
    c.linux.security_context.capabilities.add_capabilities.append("NET_ADMIN")
    c.linux.security_context.seccomp.profile_type = pb.SecurityProfile.RuntimeDefault
    c.linux.resources.memory_limit_in_bytes = 1 << 26
    s = pb.PodSandboxConfig(metadata=pb.PodSandboxMetadata(name="p", uid="u", namespace="n"),
                            hostname="p", port_mappings=[pb.PortMapping(container_port=80,
                                                                        host_port=8080)])
    s.linux.security_context.namespace_options.network = pb.NODE
    return [c.SerializeToString(), s.SerializeToString()]


def _spdy_seeds() -> list[bytes]:
    from pykubelet.streaming import spdy

    f = spdy.Framer()
    return [f.encode(spdy.SynStream(1, {"streamtype": ["error"]})) +
            f.encode(spdy.DataFrame(1, b"hello", True)) + f.encode(spdy.Ping(1)) +
            f.encode(spdy.Settings([(0, 7, 65536)])) + f.encode(spdy.WindowUpdate(1, 100))]


TARGETS: dict[str, tuple[Callable[[bytes], None], Callable[[], list[bytes]]]] = {
    "api-json": (t_api_json, lambda: [_j(POD), _j(DEPLOYMENT)]),
    "api-yaml": (t_api_yaml, lambda: [b"a: &a [1, 2]\nb: [*a, *a]\n",
                                      json.dumps(POD, indent=1).encode()]),
    "quantity": (t_quantity, lambda: [b"500m", b"1.5Gi", b"1e3", b"-0.1Ki"]),
    "selectors": (t_selectors, lambda: [b"a in (b,c),!d,e!=f", b"metadata.name=x\\,y"]),
    "patches": (t_patches, lambda: [
        _j([{"op": "replace", "path": "/spec/containers/0/image", "value": "x"},
            {"op": "copy", "from": "/metadata", "path": "/spec/x"}]),
        _j({"spec": {"$setElementOrder/containers": [{"name": "app"}],
                     "containers": [{"name": "app", "$patch": "delete"}]}})]),
    "cni-conf": (t_cni_conf, lambda: [_j(CNI_CONF), _j({"cniVersion": "1.0.0", "name": "n",
                                                        "plugins": [CNI_CONF]})]),
    "cni-skel": (t_cni_skel, lambda: [b"ADD;c1;/run/netns/x;eth0;IP=10.1.0.7;/opt/cni/bin\n" +
                                      _j(CNI_CONF)]),
    "spdy": (t_spdy, _spdy_seeds),
    "exec-channels": (t_exec_channels, lambda: [
        b'{"Width":80,"Height":24}{"Width":1,"Height":2}',
        b'{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":'
        b'[{"reason":"ExitCode","message":"3"}]}}']),
    "sched-config": (t_sched_config, lambda: [SCHED.encode()]),
    "cri-container": (t_cri_container, lambda: _cri_seeds()[:1]),
    "cri-sandbox": (t_cri_sandbox, lambda: _cri_seeds()[1:]),
}


# --------------------------------------------------------------------------- running
def fuzz_one(name: str, libfuzzer_args: list[str]) -> None:
    """Run one target under atheris in this process (libFuzzer exits when it is done)."""
    import atheris

    target, _ = TARGETS[name]
    target(b"")  # import everything it uses, so instrument_all sees it
    atheris.instrument_all()
    atheris.Setup([sys.argv[0], *libfuzzer_args], target)
    atheris.Fuzz()


_DONE = re.compile(r"Done (\d+) runs in (\d+) second")
_UNITS = re.compile(r"stat::number_of_executed_units: (\d+)")
_FEATURES = re.compile(r"#\d+\s+\w+\s+cov: (\d+) ft: (\d+)")


def run_all(names: list[str], seconds: int, out: Path) -> int:
    """Each target in a child process; prints the report, returns the number of crashes."""
    crashes = 0
    print(f"{'target':<15} {'execs':>9} {'execs/s':>8} {'cov':>6} {'ft':>6}  result")
    for name in names:
        corpus = out / "corpus" / name
        corpus.mkdir(parents=True, exist_ok=True)
        for i, seed in enumerate(TARGETS[name][1]()):
            (corpus / f"seed-{i}").write_bytes(seed)
        artifacts = out / "crashes"
        artifacts.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, __file__, "--target", name, "--",
             f"-max_total_time={seconds}", f"-artifact_prefix={artifacts}/{name}-",
             "-rss_limit_mb=1024", "-timeout=10", "-print_final_stats=1", str(corpus)],
            capture_output=True, text=True, check=False, timeout=seconds + 120)
        log = proc.stdout + proc.stderr
        (out / f"{name}.log").write_text(log)
        done = _DONE.search(log)
        units = _UNITS.search(log)  # also printed when a crash ends the run early
        execs = int(done.group(1)) if done else int(units.group(1)) if units else 0
        secs = max(int(done.group(2)) if done else seconds, 1)
        feats = _FEATURES.findall(log)
        cov, ft = feats[-1] if feats else ("-", "-")
        if proc.returncode == 0:
            result = "ok, no crash"
        else:
            crashes += 1
            found = sorted(artifacts.glob(f"{name}-*"))
            where = found[-1] if found else out / f"{name}.log"
            result = f"CRASH (exit {proc.returncode}): {where}"
        print(f"{name:<15} {execs:>9} {execs // secs:>8} {cov:>6} {ft:>6}  {result}",
              flush=True)
    print(f"{len(names)} targets, {seconds} s each, {crashes} crashing; logs and corpora "
          f"in {out}")
    return crashes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=sorted(TARGETS))
    parser.add_argument("--all", action="store_true", help="every target, one after another")
    parser.add_argument("--seconds", type=int, default=60, help="per target (with --all)")
    parser.add_argument("--out", type=Path, help="corpora, logs and crashes (default: a "
                        "new temporary directory)")
    parser.add_argument("libfuzzer", nargs="*", help="after --: libFuzzer's own flags")
    args = parser.parse_args()
    if args.all:
        out = args.out or Path(tempfile.mkdtemp(prefix="pykube-fuzz-"))
        return 1 if run_all(sorted(TARGETS), args.seconds, out) else 0
    if args.target:
        fuzz_one(args.target, args.libfuzzer or [f"-max_total_time={args.seconds}"])
        return 0
    parser.error("give --target NAME or --all")
    return 2


if __name__ == "__main__":
    sys.exit(main())
