"""Kubelet's events about pods (Pulling, Created, Started, Killing, BackOff, Unhealthy ...).

Like client-go's recorder with its correlator, a repeat of the same event (same object,
type, reason and message) bumps ``count`` and ``lastTimestamp`` instead of adding one.
Events are kept in a bounded ring and, when a sink is set (the control plane's API
client), handed to it as v1 Event objects; the agent also serves them at /events.

Each new event is also one log line a person can follow (``journalctl -u pykubelet``),
key=value with the pod's and the container's identifiers, as kubelet's structured
event logging prints them; repeats log only at debug level.

A new event is named as client-go's makeEvent names it, ``<pod>.<UnixNano in hex>``, so
the API lists a pod's events (by key) in the order they happened; two events of one
recorder never share a name (the nanoseconds move on by one when the clock did not).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykubelet.api.machinery.timeutil import rfc3339

NORMAL = "Normal"
WARNING = "Warning"
MAX_EVENTS = 1000

log = logging.getLogger(__name__)


def event_log_line(namespace: str, pod_name: str, pod_uid: str, container: str, type_: str,
                   reason: str, message: str) -> str:
    """One event as key=value (strings with spaces quoted), e.g.
    ``event type=Normal reason=Started pod=default/web podUID=... container=httpd ...``."""
    fields = {"type": type_, "reason": reason, "pod": f"{namespace}/{pod_name}",
              "podUID": pod_uid, "container": container, "message": message}
    return "event " + " ".join(f"{k}={_value(v)}" for k, v in fields.items() if v)


def _value(v: str) -> str:
    return v if v and not any(c in v for c in ' "=\n\t') else json.dumps(v)


@dataclass
class Event:
    namespace: str
    pod_name: str
    pod_uid: str
    field_path: str
    type: str
    reason: str
    message: str
    first: float
    last: float
    count: int = 1
    name: str = ""

    def to_v1(self, node_name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "involvedObject": {
                "kind": "Pod", "namespace": self.namespace, "name": self.pod_name,
                "uid": self.pod_uid, "apiVersion": "v1",
                **({"fieldPath": self.field_path} if self.field_path else {}),
            },
            "reason": self.reason,
            "message": self.message,
            "type": self.type,
            "count": self.count,
            "firstTimestamp": rfc3339(self.first),
            "lastTimestamp": rfc3339(self.last),
            "source": {"component": "kubelet", "host": node_name},
        }


def container_field_path(pod: Any, container: str) -> str:
    """fieldPath of a container reference: spec.containers{name} / spec.initContainers{name}."""
    spec = getattr(pod, "spec", None)
    if spec is not None and any(c.name == container for c in spec.init_containers):
        return f"spec.initContainers{{{container}}}"
    return f"spec.containers{{{container}}}"


class EventRecorder:
    """Records and aggregates events; thread-safe."""

    def __init__(
        self,
        node_name: str,
        sink: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = time.time,
        max_events: int = MAX_EVENTS,
    ) -> None:
        self.node_name = node_name
        self.sink = sink
        self._clock = clock
        self._max = max_events
        self._lock = threading.Lock()
        self._events: OrderedDict[tuple[str, ...], Event] = OrderedDict()
        self._last_ns = 0

    def _event_name(self, obj_name: str, now: float) -> str:
        """makeEvent's ``fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())`` (under the lock)."""
        self._last_ns = max(int(now * 1_000_000_000), self._last_ns + 1)
        return f"{obj_name}.{self._last_ns:x}"

    def event(
        self, pod: Any, type_: str, reason: str, message: str, container: str = ""
    ) -> None:
        now = self._clock()
        field_path = container_field_path(pod, container) if container else ""
        key = (pod.uid, field_path, type_, reason, message)
        with self._lock:
            ev = self._events.pop(key, None)
            if ev is None:
                ev = Event(
                    namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid,
                    field_path=field_path, type=type_, reason=reason, message=message,
                    first=now, last=now,
                    name=self._event_name(pod.name, now),
                )
            else:
                ev.count += 1
                ev.last = now
            self._events[key] = ev
            first = ev.count == 1
            while len(self._events) > self._max:
                self._events.popitem(last=False)
            obj = ev.to_v1(self.node_name)
        level = (logging.DEBUG if not first else
                 logging.WARNING if type_ == WARNING else logging.INFO)
        if log.isEnabledFor(level):
            log.log(level, "%s", event_log_line(pod.namespace, pod.name, pod.uid, container,
                                                type_, reason, message))
        if self.sink is not None:
            try:
                self.sink(obj)
            except Exception:  # a failing sink must never break a sync
                pass

    def list(self, pod_uid: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [e.to_v1(self.node_name) for e in self._events.values()
                    if pod_uid is None or e.pod_uid == pod_uid]
