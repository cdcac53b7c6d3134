"""Pods' usage from the CRI: running containers only, grouped by kubelet's labels."""

from __future__ import annotations

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.stats.cri_stats import list_pods_usage, pods_usage
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService


def _labels(ns: str, pod: str, container: str) -> dict[str, str]:
    return {"io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.name": pod,
            "io.kubernetes.pod.uid": f"uid-{pod}", "io.kubernetes.container.name": container}


def _container(cid: str, ns: str, pod: str, name: str,
               state: int = pb.CONTAINER_RUNNING) -> pb.Container:
    return pb.Container(id=cid, state=state, created_at=1_700_000_000_000_000_000,  # type: ignore[arg-type]
                        labels=_labels(ns, pod, name),
                        metadata=pb.ContainerMetadata(name=name))


def _stats(cid: str, cpu: int, mem: int, ts: int) -> pb.ContainerStats:
    return pb.ContainerStats(
        attributes=pb.ContainerAttributes(id=cid),
        cpu=pb.CpuUsage(timestamp=ts, usage_core_nano_seconds=pb.UInt64Value(value=cpu)),
        memory=pb.MemoryUsage(timestamp=ts, working_set_bytes=pb.UInt64Value(value=mem)))


def test_containers_are_summed_into_their_pods_and_exited_ones_left_out() -> None:
    containers = [
        _container("a", "default", "web", "app"),
        _container("b", "default", "web", "sidecar"),
        _container("c", "default", "web", "old", state=pb.CONTAINER_EXITED),
        _container("d", "kube-system", "dns", "coredns"),
        _container("e", "default", "gone", "app"),  # no stats: left out
    ]
    stats = [_stats("a", 1000, 10, 5), _stats("b", 500, 20, 7), _stats("c", 9, 9, 9),
             _stats("d", 1, 2, 3)]
    pods = pods_usage(containers, stats)
    assert [(p.namespace, p.name, p.uid) for p in pods] == [
        ("default", "web", "uid-web"), ("kube-system", "dns", "uid-dns")]
    web = pods[0]
    assert [c.name for c in web.containers] == ["app", "sidecar"]
    assert web.usage.cpu_usage_core_nanoseconds == 1500
    assert web.usage.memory_working_set_bytes == 30
    assert web.usage.timestamp_ns == 7
    assert web.containers[0].start_time_ns == 1_700_000_000_000_000_000


def test_containers_without_kubelet_labels_are_not_pods() -> None:
    c = pb.Container(id="x", state=pb.CONTAINER_RUNNING, metadata=pb.ContainerMetadata(name="x"))
    assert pods_usage([c], [_stats("x", 1, 1, 1)]) == []


def test_through_a_runtime_service() -> None:
    rt = FakeRuntimeService(clock=lambda: 1000.0)
    rt.add_image("busybox")
    sb = rt.run_pod_sandbox(pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name="web", namespace="default", uid="u1"),
        labels=_labels("default", "web", "")))
    cid = rt.create_container(sb, pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name="app"), image=pb.ImageSpec(image="busybox"),
        labels=_labels("default", "web", "app")), pb.PodSandboxConfig())
    rt.start_container(cid)
    rt.containers[cid].cpu_usage_core_nanoseconds = 2_000_000_000
    rt.containers[cid].memory_working_set_bytes = 4096
    [pod] = list_pods_usage(rt)
    assert pod.name == "web"
    assert pod.usage.cpu_usage_core_nanoseconds == 2_000_000_000
    assert pod.usage.memory_working_set_bytes == 4096
    assert pod.usage.timestamp_ns == 1000 * 10**9
    assert "ListContainerStats" in rt.calls
