"""The committed CRI stubs match what scripts/gen_proto.py makes from proto/ today."""

from __future__ import annotations

from pathlib import Path

import module_by_path
import pytest

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "pykubelet" / "_proto"


def _load_gen_proto():
    return module_by_path.load("gen_proto", REPO / "scripts" / "gen_proto.py", register=True)


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_committed_stubs_are_fresh(tmp_path: Path) -> None:
    gen_proto = _load_gen_proto()
    out = tmp_path / "_proto"
    written = gen_proto.generate(out)
    assert written, "protoc wrote nothing"
    fresh, committed = _tree(out), _tree(COMMITTED)
    missing = sorted(set(fresh) - set(committed))
    extra = sorted(set(committed) - set(fresh))
    stale = sorted(k for k in fresh.keys() & committed.keys() if fresh[k] != committed[k])
    hint = "stubs out of date: run `python scripts/gen_proto.py`"
    assert not missing, f"{hint}; missing {missing}"
    assert not extra, f"{hint}; extra {extra}"
    assert not stale, f"{hint}; stale {stale}"


def test_imports_point_into_our_package() -> None:
    grpc_stub = (COMMITTED / "runtime" / "v1" / "api_pb2_grpc.py").read_text()
    assert "from pykubelet._proto.runtime.v1 import api_pb2" in grpc_stub
    assert "\nfrom runtime.v1 import" not in grpc_stub


@pytest.mark.parametrize(
    ("message", "field", "number"),
    [
        ("PodSandboxConfig", "linux", 8),
        ("PodSandboxStatusResponse", "containers_statuses", 3),
        ("ContainerConfig", "log_path", 11),
        ("ContainerConfig", "linux", 15),
        ("LinuxContainerSecurityContext", "seccomp", 15),
        ("LinuxContainerSecurityContext", "run_as_group", 12),
        ("ContainerStatus", "reason", 10),
        ("ContainerStatus", "image_id", 17),
        ("ImageSpec", "user_specified_image", 18),
        ("LinuxContainerResources", "memory_swap_limit_in_bytes", 10),
        ("StatusResponse", "runtime_handlers", 3),
    ],
)
def test_official_field_numbers(message: str, field: str, number: int) -> None:
    from pykubelet._proto.runtime.v1 import api_pb2

    descriptor = api_pb2.DESCRIPTOR.message_types_by_name[message]
    assert descriptor.fields_by_name[field].number == number


def test_services_and_methods() -> None:
    from pykubelet._proto.runtime.v1 import api_pb2

    services = api_pb2.DESCRIPTOR.services_by_name
    assert services["RuntimeService"].full_name == "runtime.v1.RuntimeService"
    runtime_methods = {m.name for m in services["RuntimeService"].methods}
    assert {
        "Version", "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus",
        "ListPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer",
        "ListContainers", "ContainerStatus", "UpdateContainerResources", "ReopenContainerLog",
        "ExecSync", "Exec", "Attach", "PortForward", "ContainerStats", "ListContainerStats",
        "PodSandboxStats", "ListPodSandboxStats", "UpdateRuntimeConfig", "Status",
        "RuntimeConfig", "GetContainerEvents",
    } <= runtime_methods
    image_methods = {m.name for m in services["ImageService"].methods}
    assert image_methods == {"ListImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo"}


def _peer_proto() -> Path | None:
    for base in (REPO.parent / "shared", Path("/work/shared")):
        p = base / "peers" / "containerd" / "cri.proto"
        if p.is_file():
            return p
    return None


@pytest.mark.skipif(_peer_proto() is None, reason="the containerd peer's cri.proto is absent")
def test_wire_compatible_with_the_peer_client_proto(tmp_path: Path) -> None:
    """Every message, field (number, type, label) and RPC of the peer's hand-written CRI
    subset (what its client and bench send) exists identically in ours."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    from pykubelet._proto.runtime.v1 import api_pb2

    peer = _peer_proto()
    assert peer is not None
    out = tmp_path / "peer.pb"
    assert protoc.main(["protoc", f"-I{peer.parent}", f"--descriptor_set_out={out}",
                        str(peer)]) == 0
    fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    theirs = fds.file[0]
    ours = descriptor_pb2.FileDescriptorProto()
    api_pb2.DESCRIPTOR.CopyToProto(ours)
    assert theirs.package == ours.package == "runtime.v1"

    def messages(fd) -> dict[str, descriptor_pb2.DescriptorProto]:
        found = {}

        def walk(prefix: str, msgs) -> None:
            for m in msgs:
                found[prefix + m.name] = m
                walk(prefix + m.name + ".", m.nested_type)
        walk("", fd.message_type)
        return found

    our_msgs = messages(ours)
    for name, msg in messages(theirs).items():
        assert name in our_msgs, f"message {name} missing"
        our_fields = {f.name: f for f in our_msgs[name].field}
        for f in msg.field:
            o = our_fields.get(f.name)
            assert o is not None, f"{name}.{f.name} missing"
            assert (o.number, o.type, o.label) == (f.number, f.type, f.label), f"{name}.{f.name}"
            assert o.type_name.rsplit(".", 1)[-1] == f.type_name.rsplit(".", 1)[-1]
    our_enums = {e.name: {v.name: v.number for v in e.value} for e in ours.enum_type}
    for e in theirs.enum_type:
        for v in e.value:
            assert our_enums[e.name].get(v.name) == v.number, f"{e.name}.{v.name}"
    our_services = {s.name: {m.name: (m.input_type, m.output_type) for m in s.method}
                    for s in ours.service}
    for s in theirs.service:
        for m in s.method:
            assert our_services[s.name][m.name] == (m.input_type, m.output_type), m.name
