"""TerminationOrdering: app containers stop first, sidecars after them in reverse order."""

from __future__ import annotations

import threading
import time

from pykubelet.api.decode import decode_pod
from pykubelet.api.defaults import set_defaults_pod
from pykubelet.api.types import Pod
from pykubelet.kubelet.kuberuntime.termination_ordering import TerminationOrdering


def _pod() -> Pod:
    return set_defaults_pod(
        decode_pod(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "uid": "u"},
                "spec": {
                    "initContainers": [
                        {"name": "s1", "image": "b", "restartPolicy": "Always"},
                        {"name": "init", "image": "b"},
                        {"name": "s2", "image": "b", "restartPolicy": "Always"},
                    ],
                    "containers": [{"name": "a1", "image": "b"}, {"name": "a2", "image": "b"}],
                },
            }
        )
    )


def test_dependencies_follow_reverse_sidecar_order() -> None:
    o = TerminationOrdering(_pod(), ["s1", "s2", "a1", "a2"])
    assert o.dependencies("a1") == []
    assert o.dependencies("s2") == ["a1", "a2"]
    assert o.dependencies("s1") == ["a1", "a2", "s2"]


def test_containers_not_running_are_not_waited_for() -> None:
    o = TerminationOrdering(_pod(), ["s1", "a2"])
    assert o.dependencies("s1") == ["a2"]
    assert o.wait_for_turn("a2", 5) < 0.5


def test_threads_stop_in_order_and_waiting_is_bounded_by_grace() -> None:
    o = TerminationOrdering(_pod(), ["s1", "s2", "a1", "a2"])
    stopped: list[str] = []
    lock = threading.Lock()

    def kill(name: str, delay: float) -> None:
        time.sleep(delay)
        o.wait_for_turn(name, 10)
        with lock:
            stopped.append(name)
        o.container_terminated(name)

    threads = [
        threading.Thread(target=kill, args=(n, d))
        for n, d in (("s1", 0.0), ("s2", 0.0), ("a1", 0.1), ("a2", 0.2))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert stopped[2:] == ["s2", "s1"]
    assert set(stopped[:2]) == {"a1", "a2"}

    # an app container that never stops holds a sidecar back only for its grace period
    o = TerminationOrdering(_pod(), ["s2", "a1"])
    waited = o.wait_for_turn("s2", 0.3)
    assert 0.25 <= waited < 2
