"""The control plane process tunes its garbage collector once it serves: startup's objects
frozen, the young generation's threshold raised (pykubelet.controlplane.collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pykubelet.controlplane import collector


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_tune_after_start_freezes_startup_objects_and_raises_the_young_threshold(
        restored_gc: None) -> None:
    kept = [object() for _ in range(10)]  # something alive to freeze
    before = gc.get_threshold()
    collector.tune_after_start()
    assert gc.get_freeze_count() > len(kept)
    assert gc.get_threshold() == (collector.GEN0_THRESHOLD, before[1], before[2])


def test_the_control_plane_command_tunes_the_collector_once_serving() -> None:
    """The command's main calls it after cp.start() (a process-wide setting: the command
    owns the process; in-process control planes in tests leave the collector alone)."""
    import inspect

    from pykubelet.cli import controlplane_cmd

    source = inspect.getsource(controlplane_cmd)
    start = source.index("await cp.start()")
    assert source.index("tune_after_start()", start) < source.index("await stop.wait()", start)
