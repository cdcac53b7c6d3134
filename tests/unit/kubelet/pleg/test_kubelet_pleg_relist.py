"""PLEG over the shared fake runtime service: a relist turns what changed in the runtime
into pod lifecycle events, and measures itself."""

from __future__ import annotations

from kubelet_builders import make_pod

from pykubelet._proto.runtime.v1 import api_pb2 as pb
from pykubelet.kubelet.kuberuntime.labels import POD_UID_LABEL
from pykubelet.kubelet.kuberuntime.sandbox_config import generate_pod_sandbox_config
from pykubelet.kubelet.metrics import KubeletMetrics
from pykubelet.kubelet.pleg.generic import (
    CONTAINER_DIED,
    CONTAINER_REMOVED,
    CONTAINER_STARTED,
    SANDBOX_CHANGED,
    GenericPLEG,
)
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService


def test_relist_reports_changes_by_pod_uid(tmp_path) -> None:
    rt = FakeRuntimeService()
    rt.add_image("busybox:1.36")
    metrics = KubeletMetrics()
    pleg = GenericPLEG(rt, lambda ev: None, metrics=metrics)
    assert pleg.relist() == []
    pod = make_pod()
    sb_config = generate_pod_sandbox_config(pod, 0, "n1", str(tmp_path))
    sid = rt.run_pod_sandbox(sb_config)
    cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="app"),
                             image=pb.ImageSpec(image="busybox:1.36"),
                             labels={POD_UID_LABEL: pod.uid})
    cid = rt.create_container(sid, cfg, sb_config)
    rt.start_container(cid)
    first = {(e.pod_uid, e.type) for e in pleg.relist()}
    assert first == {(pod.uid, CONTAINER_STARTED), (pod.uid, SANDBOX_CHANGED)}
    assert pleg.relist() == []
    rt.exit_container(cid, 1)
    assert [(e.type, e.data) for e in pleg.relist()] == [(CONTAINER_DIED, cid)]
    rt.remove_container(cid)
    assert [(e.type, e.data) for e in pleg.relist()] == [(CONTAINER_REMOVED, cid)]
    # unlabelled objects are not ours
    rt.create_container(sid, pb.ContainerConfig(metadata=pb.ContainerMetadata(name="x"),
                                                image=pb.ImageSpec(image="busybox:1.36")),
                        sb_config)
    assert pleg.relist() == []
    assert metrics.registry.get_sample_value("kubelet_pleg_relist_duration_seconds_count") == 6
    assert pleg.healthy()
