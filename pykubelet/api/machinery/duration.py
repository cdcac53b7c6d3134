"""How long ago, for people: apimachinery's util/duration, which kubectl's AGE column, the
API server's Tables and ``kubectl describe`` all print through. Standard library only:
pykubectl imports it on its start-up path (tests/unit/kubectl/test_kubectl_imports.py)."""

from __future__ import annotations

import datetime as dt


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
