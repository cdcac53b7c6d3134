"""Durations as kubectl's flags take them: ``30s``, ``1m30s``, ``2h``, ``500ms`` or a bare
number of seconds."""

from __future__ import annotations

import re

from pykubelet.cli.kubectl.errors import CommandError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str, flag: str) -> float:
    """Seconds in ``text``; a bad value is an error naming the flag."""
    t = text.strip()
    try:
        return float(t)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _PART.finditer(t):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(t) or not t:
        raise CommandError(f'error: invalid argument "{text}" for "{flag}" flag: time: '
                           f'invalid duration "{text}"')
    return total
