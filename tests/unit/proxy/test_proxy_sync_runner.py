"""SyncRunner.sync_changes, the part of syncProxyRules both proxiers share: the first sync
writes everything, a good one lets the next be partial, a refused one (RestoreError) makes
the next full again with the changes kept, and conntrack is cleaned only after a write."""

from __future__ import annotations

from typing import Any

from pykubelet.proxy.iptables_restore import RestoreError
from pykubelet.proxy.sync_runner import SyncRunner


class _Runner(SyncRunner):
    def __init__(self) -> None:
        super().__init__("node1")
        self.metrics = None
        self.cleaned = 0
        self.conntrack = self  # type: ignore[assignment]
        self.writes: list[Any] = []
        self.refuse = False

    def clean(self, services: Any, endpoints: Any) -> None:
        self.cleaned += 1

    def _write(self, services: Any, endpoints: Any, changed: Any) -> object:
        self.writes.append(changed)
        if self.refuse:
            raise RestoreError("refused")
        self.sync_succeeded()
        return None


def test_full_then_partial_and_full_again_after_a_refusal() -> None:
    r = _Runner()
    r.set_services([])
    r.set_endpoint_slices([])
    assert r.sync_changes() is True
    assert r.writes == [None]  # the first sync: everything
    assert r.cleaned == 1
    assert r.sync_changes() is True
    assert r.writes[-1] == set()  # partial: nothing changed
    r.refuse = True
    assert r.sync_changes() is False
    assert r.cleaned == 2  # not after a refused write
    r.refuse = False
    assert r.sync_changes() is True
    assert r.writes[-1] is None  # full again after the refusal
