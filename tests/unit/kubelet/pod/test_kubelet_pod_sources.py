"""The agent's entry points for pod sources: each source's full set (config SET) touches
only that source's pods, so a static-pod directory and an API server can feed one agent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubelet_builders import make_pod
from unit_agent_harness import new_kubelet, wait_for

from pykubelet.api.types import Pod
from pykubelet.kubelet.agent import Kubelet
from pykubelet.kubelet.pod.pod_manager import API_SOURCE, FILE_SOURCE, pod_source
from pykubelet.kubelet.status.generate import CONFIG_SOURCE_ANNOTATION
from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[Kubelet]:
    runtime = FakeRuntimeService()
    runtime.add_image("busybox:1.36")
    k = new_kubelet(tmp_path, runtime, logs_dir=tmp_path / "logs" / "pods")
    try:
        yield k
    finally:
        k.stop()


def pod(uid: str, source: str | None) -> Pod:
    p = make_pod(("app",))
    p.metadata.uid = uid
    p.metadata.name = f"p-{uid}"
    if source is not None:
        p.metadata.annotations[CONFIG_SOURCE_ANNOTATION] = source
    return p


def test_pod_source_is_the_config_source_annotation() -> None:
    assert pod_source(pod("a", FILE_SOURCE)) == FILE_SOURCE
    assert pod_source(pod("b", None)) == API_SOURCE


def test_a_source_set_leaves_other_sources_pods_alone(kubelet: Kubelet) -> None:
    kubelet.set_source_pods([pod("f1", FILE_SOURCE), pod("f2", FILE_SOURCE)])
    kubelet.handle_pod_additions([pod("a1", None)])  # from the API server
    assert kubelet.pod_manager.uids() == {"f1", "f2", "a1"}
    kubelet.set_source_pods([pod("f2", FILE_SOURCE)])  # f1's manifest went away
    assert kubelet.pod_manager.uids() == {"f2", "a1"}
    kubelet.set_source_pods([], source=API_SOURCE)
    assert kubelet.pod_manager.uids() == {"f2"}
    # the removed pods are killed and forgotten by their workers
    wait_for(lambda: not ({"f1", "a1"} & kubelet.workers.known_uids()))
    listed = {p["metadata"]["uid"] for p in kubelet.pod_list()["items"]}
    assert listed == {"f2"}


def test_a_pod_admission_refuses_is_listed_failed_and_never_run(kubelet: Kubelet) -> None:
    big = pod("big", FILE_SOURCE)
    big.spec.node_selector = {"disk": "ssd"}  # this node has no such label
    kubelet.set_source_pods([big])
    status = kubelet.status_manager.get_pod_status("big")
    assert status is not None
    assert status.phase == "Failed"
    assert not kubelet.pod_manager.has_pod("big")
    assert kubelet.workers.known_uids() == set()
    kubelet.set_source_pods([])
    assert kubelet.status_manager.get_pod_status("big") is None


def test_a_source_set_with_a_changed_pod_updates_it(kubelet: Kubelet) -> None:
    kubelet.set_source_pods([pod("a1", None)], source=API_SOURCE)
    same = pod("a1", None)
    kubelet.set_source_pods([same], source=API_SOURCE)  # equal: nothing to do
    assert kubelet.pod_manager.get_pod("a1") is not same
    deleted = pod("a1", None)
    deleted.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    deleted.metadata.deletion_grace_period_seconds = 0
    kubelet.set_source_pods([deleted], source=API_SOURCE)
    assert kubelet.pod_manager.get_pod("a1") is deleted  # handed to handle_pod_updates
    # a deleted pod stays listed until its source drops it
    wait_for(lambda: "a1" not in kubelet.workers.known_uids())
    assert kubelet.pod_manager.has_pod("a1")
    kubelet.set_source_pods([], source=API_SOURCE)
    assert not kubelet.pod_manager.has_pod("a1")


def test_admission_reads_the_nodes_labels_again_before_refusing(kubelet: Kubelet) -> None:
    """A user labels the Node in the API, then a pod selecting that label is bound here
    before this agent saw the label: admission looks at the Node again (as kubelet's node
    lister would have it) instead of refusing the pod."""
    api_labels = {"kubernetes.io/hostname": "n1"}
    asked: list[bool] = []

    def node_labels(fresh: bool) -> dict[str, str]:
        asked.append(fresh)
        return dict(api_labels, disk="ssd") if fresh else dict(api_labels)

    kubelet.node_labels = node_labels
    ssd = pod("ssd", None)
    ssd.spec.node_selector = {"disk": "ssd"}
    kubelet.handle_pod_additions([ssd])
    assert asked == [False, True]
    assert kubelet.pod_manager.has_pod("ssd")
    gpu = pod("gpu", None)
    gpu.spec.node_selector = {"gpu": "yes"}  # on no version of the Node: refused
    kubelet.handle_pod_additions([gpu])
    assert not kubelet.pod_manager.has_pod("gpu")
    status = kubelet.status_manager.get_pod_status("gpu")
    assert status is not None
    assert status.reason == "NodeAffinity"


def test_before_the_api_answers_the_node_has_its_registration_labels(kubelet: Kubelet) -> None:
    """An agent restarting with pods bound to it admits them before it has read its Node:
    the well-known labels it registers with (kubelet's initialNode) count, so a pod pinned
    by kubernetes.io/hostname is not refused."""
    kubelet.node_labels = lambda fresh: None  # registered nowhere yet
    pinned = pod("pinned", None)
    pinned.spec.node_selector = {"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux"}
    kubelet.handle_pod_additions([pinned])
    assert kubelet.pod_manager.has_pod("pinned")


def test_a_status_only_update_reconciles_without_a_sync(kubelet: Kubelet) -> None:
    """kubelet's checkAndUpdatePod: an update whose spec, labels, annotations and deletion
    fields equal the known pod's (the API's echo of the agent's own status patch, a
    condition another writer set) replaces the pod's copy but starts no SyncPod; a changed
    label does (issue 23: every status patch of a burst's pods came back as a second and
    third SyncPod, each reading the runtime again)."""
    kubelet.start()
    a = pod("a1", None)
    kubelet.handle_pod_additions([a])
    wait_for(lambda: kubelet.workers.sync_count("a1") >= 1 and kubelet.workers.idle())
    synced = kubelet.workers.sync_count("a1")
    echo = pod("a1", None)
    echo.status.phase = "Running"
    echo.metadata.resource_version = "42"
    kubelet.handle_pod_updates([echo])
    assert kubelet.pod_manager.get_pod("a1") is echo
    time.sleep(0.3)
    assert kubelet.workers.sync_count("a1") == synced
    labelled = pod("a1", None)
    labelled.metadata.labels = {"tier": "web"}
    kubelet.handle_pod_updates([labelled])
    wait_for(lambda: kubelet.workers.sync_count("a1") > synced)


def test_a_reconcile_keeps_one_decoded_spec_per_pod(kubelet: Kubelet) -> None:
    """Every status patch of the agent comes back from the API as a freshly decoded pod;
    a reconcile keeps the pod's new copy (its status, resourceVersion) over the spec
    already decoded, so a pod's spec is held once, not once per echo beside the pod
    worker's copy (issue 23 item 3: a lean node)."""
    a = pod("a1", None)
    kubelet.handle_pod_additions([a])
    echo = pod("a1", None)
    echo.status.phase = "Running"
    echo.metadata.resource_version = "42"
    assert echo.spec == a.spec
    assert echo.spec is not a.spec
    kubelet.handle_pod_updates([echo])
    kept = kubelet.pod_manager.get_pod("a1")
    assert kept is echo
    assert kept.status.phase == "Running"
    assert kept.metadata.resource_version == "42"
    assert kept.spec is a.spec
    changed = pod("a1", None)
    changed.spec.containers[0].image = "busybox:1.37"
    kubelet.handle_pod_updates([changed])
    assert kubelet.pod_manager.get_pod("a1").spec is changed.spec  # a new spec is its own
