"""Durations as kubectl's flags take them: ``30s``, ``1m30s``, ``2h``, ``500ms`` or a bare
number of seconds, read by the ground floor's time.ParseDuration."""

from __future__ import annotations

from pykubelet.api.machinery.duration import parse_duration as _parse
from pykubelet.cli.kubectl.errors import CommandError


def parse_duration(text: str, flag: str) -> float:
    """Seconds in ``text``; a bad value is an error naming the flag."""
    try:
        return _parse(text.strip(), bare_seconds=True)
    except ValueError:
        raise CommandError(f'error: invalid argument "{text}" for "{flag}" flag: time: '
                           f'invalid duration "{text}"') from None
