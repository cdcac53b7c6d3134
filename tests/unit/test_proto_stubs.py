"""The committed CRI stubs match what scripts/gen_proto.py makes from proto/ today."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "pykubelet" / "_proto"


def _load_gen_proto():
    spec = importlib.util.spec_from_file_location("gen_proto", REPO / "scripts" / "gen_proto.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_proto"] = module
    spec.loader.exec_module(module)
    return module


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
