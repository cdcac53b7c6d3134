"""Each new pod event is one key=value log line with the pod's and container's identifiers;
repeats only at debug level."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from pykubelet.kubelet.events.recorder import EventRecorder, event_log_line


def test_an_event_line_names_pod_and_container_and_quotes_free_text() -> None:
    line = event_log_line("default", "web", "u-1", "httpd", "Normal", "Started",
                          'Started container httpd')
    assert line == ('event type=Normal reason=Started pod=default/web podUID=u-1 '
                    'container=httpd message="Started container httpd"')
    assert "container=" not in event_log_line("default", "web", "u-1", "", "Normal",
                                              "Scheduled", "x")


def test_new_events_log_at_their_level_and_repeats_only_at_debug(
        caplog: pytest.LogCaptureFixture) -> None:
    pod = SimpleNamespace(namespace="ns", name="p", uid="u-2", spec=None)
    rec = EventRecorder("n1", clock=lambda: 0.0)
    with caplog.at_level(logging.DEBUG, logger="pykubelet.kubelet.events.recorder"):
        rec.event(pod, "Warning", "BackOff", "Back-off restarting failed container c",
                  container="c")
        rec.event(pod, "Warning", "BackOff", "Back-off restarting failed container c",
                  container="c")
    levels = [r.levelno for r in caplog.records]
    assert levels == [logging.WARNING, logging.DEBUG]
    assert "pod=ns/p podUID=u-2 container=c" in caplog.records[0].getMessage()


def test_events_are_named_by_their_time_in_nanoseconds_as_client_go() -> None:
    """makeEvent: ``<object>.<UnixNano in hex>``, so names sort in the order events
    happened; a repeat keeps its name; a second event at the same instant still gets its
    own (later) name."""
    pod = SimpleNamespace(namespace="ns", name="web", uid="u-1", spec=None)
    t = [1764763200.25]
    sent: list[dict[str, object]] = []
    rec = EventRecorder("n1", sink=sent.append, clock=lambda: t[0])
    rec.event(pod, "Normal", "Scheduled", "assigned")
    rec.event(pod, "Normal", "Pulled", "image present")  # same instant
    t[0] += 1.5
    rec.event(pod, "Normal", "Scheduled", "assigned")  # a repeat
    rec.event(pod, "Normal", "Started", "started")
    names = [e["metadata"]["name"] for e in sent]  # type: ignore[index]
    ns = int(1764763200.25 * 1e9)
    assert names[0] == f"web.{ns:x}"
    assert names[1] == f"web.{ns + 1:x}"
    assert names[2] == names[0]
    assert names[3] == f"web.{int((1764763200.25 + 1.5) * 1e9):x}"
    assert sorted(set(names)) == [names[0], names[1], names[3]]
