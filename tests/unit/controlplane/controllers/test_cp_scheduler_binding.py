"""The scheduler runner's binding: the pod's ``spec.nodeName`` write is the binding; the
``Scheduled`` event follows on its own, as kube-scheduler's recorder sends events through
its broadcaster after ``bind`` returned (issue 23 item 2: each binding of a burst waited
for a second store write)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykubelet.client.rest import EVENTS, PODS, RESTClient
from pykubelet.controlplane.controllers import recorder
from pykubelet.controlplane.controllers.scheduler import run_scheduler
from pykubelet.controlplane.server import ControlPlaneThread, Options


@pytest.fixture
def cpt(tmp_path: Path) -> Iterator[ControlPlaneThread]:
    t = ControlPlaneThread(Options(root=tmp_path / "cp", listen="127.0.0.1:0",
                                   controllers=False))
    t.cp.controllers = [run_scheduler]
    t.start()
    try:
        yield t
    finally:
        t.stop()


def test_a_binding_does_not_wait_for_its_scheduled_event(
        cpt: ControlPlaneThread, monkeypatch: pytest.MonkeyPatch) -> None:
    from pysched.decode import from_dict

    admin = RESTClient.from_kubeconfig(cpt.cp.kubeconfig_path)
    deadline = time.monotonic() + 10
    while cpt.cp.scheduler is None and time.monotonic() < deadline:
        time.sleep(0.02)
    runner = cpt.cp.scheduler
    assert runner is not None
    # a scheduler name nobody serves: the runner leaves the pod to this test
    obj = admin.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                              "spec": {"schedulerName": "nobody", "containers": [
                                  {"name": "c", "image": "busybox"}]}}, "default")
    release = asyncio.Event()
    real_event = recorder.EventRecorder.event

    async def slow_event(self: Any, *args: Any, **kwargs: Any) -> Any:
        await release.wait()  # an event write stuck behind a busy store
        return await real_event(self, *args, **kwargs)

    monkeypatch.setattr(recorder.EventRecorder, "event", slow_event)
    done = threading.Event()

    def bind() -> None:
        runner.bind(from_dict(obj), "n1")
        done.set()

    threading.Thread(target=bind, daemon=True).start()
    try:
        assert done.wait(5), "the binding waited for its event"
        assert admin.get(PODS, "web", "default")["spec"]["nodeName"] == "n1"
    finally:
        cpt.loop.call_soon_threadsafe(release.set)
    deadline = time.monotonic() + 10
    reasons: list[str] = []
    while time.monotonic() < deadline and "Scheduled" not in reasons:
        reasons = [e.get("reason") for e in admin.list(EVENTS, "default")["items"]]
        time.sleep(0.05)
    assert "Scheduled" in reasons
