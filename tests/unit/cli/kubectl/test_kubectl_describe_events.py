"""describe's Events list: in the order the events happened, even within one second."""

from __future__ import annotations

from pykubelet.cli.kubectl.describe import Writer, describe_events


def _ev(name: str, reason: str, first: str, last: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "type": "Normal", "reason": reason,
            "message": reason.lower(), "firstTimestamp": first, "lastTimestamp": last,
            "count": 1, "source": {"component": "kubelet"}}


def test_events_of_one_second_are_listed_in_the_order_they_happened() -> None:
    t = "2026-12-03T10:00:05Z"
    base = 0x187D0A1B2C3D4E00
    happened = [_ev(f"web.{base + i:x}", r, t, t)
                for i, r in enumerate(("Scheduled", "Pulled", "Created", "Started"))]
    older = _ev("web.0f", "Killing", "2026-12-03T09:59:00Z", "2026-12-03T10:00:04Z")
    listed = [happened[2], happened[0], older, happened[3], happened[1]]  # e.g. a random order
    w = Writer()
    describe_events(w, listed)
    lines = w.text().splitlines()[3:]
    assert [ln.split()[1] for ln in lines] == ["Killing", "Scheduled", "Pulled", "Created",
                                               "Started"]
