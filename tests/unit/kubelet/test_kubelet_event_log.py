"""Each new pod event is one key=value log line with the pod's and container's identifiers;
repeats only at debug level."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from pykubelet.kubelet.events import EventRecorder, event_log_line


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
    with caplog.at_level(logging.DEBUG, logger="pykubelet.kubelet.events"):
        rec.event(pod, "Warning", "BackOff", "Back-off restarting failed container c",
                  container="c")
        rec.event(pod, "Warning", "BackOff", "Back-off restarting failed container c",
                  container="c")
    levels = [r.levelno for r in caplog.records]
    assert levels == [logging.WARNING, logging.DEBUG]
    assert "pod=ns/p podUID=u-2 container=c" in caplog.records[0].getMessage()
