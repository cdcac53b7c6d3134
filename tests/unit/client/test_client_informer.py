"""The informer's reconnects as client-go's reflector makes them: a watch that was
established and then broke (the API server went away) is watched again at once; only a
list or watch that cannot start backs off, 0.8 s doubling to 30 s; and the back-off starts
again from 0.8 s once none was needed for 2 minutes (the reflector's
ExponentialBackoffManager), instead of only after a watch that ended cleanly, which left
an agent 25.6 s behind an API server that had restarted a second time (issue 29)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pykubelet.client import informer as informer_mod
from pykubelet.client.informer import Backoff, Informer
from pykubelet.client.rest import PODS, ClientError

REFUSED = ClientError("https://10.0.0.1:6443: Connection refused")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_to_its_cap_and_resets_after_two_quiet_minutes() -> None:
    clock = Clock()
    b = Backoff(clock=clock, jitter=0.0)
    steps = []
    for _ in range(8):
        steps.append(b.next())
        clock.now += 1
    assert steps == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    clock.now += 119  # 2 min since the last back-off began: not yet
    assert b.next() == 30.0
    clock.now += 120.5
    assert b.next() == 0.8


def test_backoff_jitter_adds_up_to_its_fraction() -> None:
    b = Backoff(clock=Clock(), jitter=0.5, rand=lambda: 1.0)
    assert b.next() == 0.8 * 1.5


class Stop:
    """The informer's stop event, recording what it waited for and moving the clock."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.waits: list[float] = []
        self.stopped = False

    def is_set(self) -> bool:
        return self.stopped

    def set(self) -> None:
        self.stopped = True

    def wait(self, seconds: float | None = None) -> bool:
        self.waits.append(round(seconds or 0.0, 3))
        self.clock.now += seconds or 0.0
        return self.stopped


class Script:
    """A client whose list answers and whose watches follow a script: each item is an
    exception to raise at once (cannot start), or (seconds, error) for a watch that ran
    that long (one event when it ran a second or more) and then broke with ``error``."""

    closed = False

    def __init__(self, clock: Clock, stop: Stop, watches: list[Any]) -> None:
        self.clock, self.stop, self.watches = clock, stop, list(watches)

    def list(self, resource: Any, namespace: str, **params: Any) -> dict[str, Any]:
        return {"items": [], "metadata": {"resourceVersion": "10"}}

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        if not self.watches:
            self.stop.set()
            return
        step = self.watches.pop(0)
        if isinstance(step, Exception):
            raise step
        seconds, error = step
        self.clock.now += seconds
        if seconds >= 1.0:
            yield {"type": "ADDED", "object": {"metadata": {"name": "p", "namespace": "d",
                                                             "resourceVersion": "11"}}}
        raise error


def run(watches: list[Any]) -> list[float]:
    clock = Clock()
    stop = Stop(clock)
    inf = Informer(Script(clock, stop, watches), PODS, clock=clock)  # type: ignore[arg-type]
    inf._stop = stop  # type: ignore[assignment]
    inf._backoff = Backoff(clock=clock, jitter=0.0)
    inf._run()
    return stop.waits


def test_a_watch_that_ran_and_broke_is_watched_again_at_once() -> None:
    broke = ClientError("stream broken: Response ended prematurely")
    assert run([(60.0, broke), REFUSED, REFUSED, (60.0, broke)]) == [0.8, 1.6]


def test_a_second_outage_after_two_quiet_minutes_backs_off_from_the_start() -> None:
    broke = ClientError("stream broken: Response ended prematurely")
    waits = run([REFUSED, REFUSED, REFUSED, REFUSED, (180.0, broke), REFUSED, REFUSED])
    assert waits == [0.8, 1.6, 3.2, 6.4, 0.8, 1.6]


def test_a_watch_that_breaks_at_once_with_nothing_backs_off_as_a_failed_start() -> None:
    early = ClientError("stream broken")
    assert run([(0.1, early), (0.1, early)]) == [0.8, 1.6]


def test_module_keeps_the_reflectors_figures() -> None:
    assert (informer_mod.INITIAL_BACKOFF_S, informer_mod.MAX_BACKOFF_S,
            informer_mod.BACKOFF_RESET_S) == (0.8, 30.0, 120.0)


class Listed:
    """A client listing one pod with managedFields, then watching a MODIFIED of it."""

    closed = False

    def __init__(self, stop: Stop) -> None:
        self.stop = stop
        self.watched = False

    @staticmethod
    def pod(rv: str) -> dict[str, Any]:
        return {"metadata": {"name": "p", "namespace": "d", "resourceVersion": rv,
                             "managedFields": [{"manager": "kubelet", "operation": "Update",
                                                "fieldsV1": {"f:status": {}}}]},
                "spec": {"nodeName": "n1"}}

    def list(self, resource: Any, namespace: str, **params: Any) -> dict[str, Any]:
        return {"items": [self.pod("10")], "metadata": {"resourceVersion": "10"}}

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        if self.watched:
            self.stop.set()
            return
        self.watched = True
        yield {"type": "MODIFIED", "object": self.pod("11")}


def test_a_transform_shapes_what_is_stored_and_handed_to_handlers() -> None:
    """client-go's SetTransform with TransformStripManagedFields, as kubelet's pod source
    uses it: neither the cache nor a handler sees managedFields (issue 23 item 3: a node
    keeps no server side apply bookkeeping for its pods)."""
    clock = Clock()
    stop = Stop(clock)
    seen: list[dict[str, Any]] = []
    inf = Informer(Listed(stop), PODS, clock=clock,  # type: ignore[arg-type]
                   on_sync=seen.extend, on_update=lambda old, new: seen.append(new),
                   transform=informer_mod.strip_managed_fields)
    inf._stop = stop  # type: ignore[assignment]
    inf._run()
    assert [o["metadata"]["resourceVersion"] for o in seen] == ["10", "11"]
    stored = inf.get("d/p")
    assert stored is not None
    assert stored["metadata"]["resourceVersion"] == "11"
    assert stored["spec"] == {"nodeName": "n1"}
    assert all("managedFields" not in o["metadata"] for o in [*seen, stored])
    plain = Informer(Listed(stop), PODS)  # type: ignore[arg-type]
    assert plain.transform is None  # other informers keep what they are sent
