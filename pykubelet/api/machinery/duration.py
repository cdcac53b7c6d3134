"""Durations, read and printed in one place. Read: Go's time.ParseDuration, the wire form of
metav1.Duration and of every duration flag, which the node's config, the scheduler's extenders,
the lab's and kubectl's flags take. Printed: how long ago, for people, as apimachinery's
util/duration, which kubectl's AGE column, the API server's Tables and ``kubectl describe``
all print through. Standard library only: pykubectl imports it on its start-up path
(tests/unit/cli/kubectl/test_kubectl_imports.py)."""

from __future__ import annotations

import datetime as dt

# time.unitMap, in nanoseconds: U+00B5 (micro sign) and U+03BC (Greek mu) are both accepted
_UNIT_NANOS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
               "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _leading_digits(s: str) -> tuple[str, str]:
    i = 0
    while i < len(s) and s[i].isascii() and s[i].isdigit():
        i += 1
    return s[:i], s[i:]


def parse_duration(text: str, *, bare_seconds: bool = False) -> float:
    """time.ParseDuration in seconds: a signed sequence of decimal numbers, each with a unit
    ("300ms", "-1.5h", "2h45m"); "0" alone needs none. The errors are Go's words, since users
    see them beside kubectl's and kube-scheduler's. ``bare_seconds``: a plain number is seconds
    too, as kubectl's --request-timeout and the lab's --wait take one."""
    if bare_seconds:
        try:
            return float(text)
        except ValueError:
            pass
    s, neg = text, False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"time: invalid duration {_quote(text)}")
    nanos = 0
    while s:
        if not (s[0] == "." or (s[0].isascii() and s[0].isdigit())):
            raise ValueError(f"time: invalid duration {_quote(text)}")
        whole, s = _leading_digits(s)
        frac = ""
        if s[:1] == ".":
            frac, s = _leading_digits(s[1:])
            if not whole and not frac:
                raise ValueError(f"time: invalid duration {_quote(text)}")
        i = 0
        while i < len(s) and not (s[i] == "." or (s[i].isascii() and s[i].isdigit())):
            i += 1
        if i == 0:
            raise ValueError(f"time: missing unit in duration {_quote(text)}")
        unit, s = s[:i], s[i:]
        if unit not in _UNIT_NANOS:
            raise ValueError(f"time: unknown unit {_quote(unit)} in duration {_quote(text)}")
        scale = _UNIT_NANOS[unit]
        nanos += int(whole or "0") * scale
        if frac:
            nanos += int(int(frac) * (scale / 10 ** len(frac)))
    return (-nanos if neg else nanos) / 1e9


def human_duration(d: dt.timedelta) -> str:
    """duration.HumanDuration: two units at most, coarser the older; up to a second in the
    future (clock skew between machines) is "0s", further is ``<invalid>``."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        m = minutes % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d{h}h" if h else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y{dy}d" if dy else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"
