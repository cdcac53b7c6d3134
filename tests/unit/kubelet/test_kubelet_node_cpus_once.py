"""The node's CPU count is read once, when the agent starts, not per admission and per
SyncPod (issue 23 item 2): os.cpu_count() reads sysfs with the GIL held, so on a loaded
2-core machine each call stalled every thread of the agent; in a 100-pod burst's profile
of a lab agent it was half of the GIL's busy time. Admission and the downward API's
default limits still see the count."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
from kubelet_builders import make_pod
from unit_agent_harness import new_kubelet, wait_for

from pykubelet.kubelet.testing.fake_runtime_service import FakeRuntimeService


def test_admitting_and_syncing_pods_reads_no_cpu_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = FakeRuntimeService()
    runtime.add_image("busybox:1.36")
    k = new_kubelet(tmp_path, runtime)
    calls: list[str] = []
    real_os, real_psutil = os.cpu_count, psutil.cpu_count
    monkeypatch.setattr(os, "cpu_count", lambda: calls.append("os") or real_os())
    monkeypatch.setattr(psutil, "cpu_count",
                        lambda *a, **kw: calls.append("psutil") or real_psutil(*a, **kw))
    k.start()
    try:
        for i in range(5):
            p = make_pod(("app",))
            p.metadata.uid, p.metadata.name = f"u{i}", f"p{i}"
            k.handle_pod_additions([p])
        wait_for(lambda: len(runtime.list_containers()) == 5)
    finally:
        k.stop()
    assert calls == []
