"""metav1.Time and MicroTime: the one place times are read from and written to the wire.

Reading is Go's ``time.Parse(time.RFC3339, s)`` (what metav1.Time's UnmarshalJSON calls):
``2006-01-02T15:04:05`` then an optional fraction of any length, then ``Z`` or ``±hh:mm``;
nothing looser (no date alone, no missing offset, no space for ``T``). Writing is
metav1.Time's MarshalJSON: UTC, seconds precision, ``Z``; MicroTime writes exactly six
fractional digits. Standard library only: pykubectl imports it on its start-up path
(tests/unit/cli/kubectl/test_kubectl_imports.py).
"""

from __future__ import annotations

import datetime as dt
import re

# what Go's time.Parse(time.RFC3339, ...) reads
RFC3339_PATTERN = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})"
                             r"(?:\.([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})")
RFC3339_LAYOUT = "2006-01-02T15:04:05Z07:00"
# the last second metav1.Time can write (Go's Time.MarshalJSON refuses years past 9999)
MAX_TIME = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)


def now() -> dt.datetime:
    """The current time, UTC, as metav1.Now()."""
    return dt.datetime.now(dt.UTC)


def parse_time(text: str) -> dt.datetime:
    """An RFC 3339 time as Go's time.Parse reads it, with its offset; the fraction is kept to
    microseconds (Go keeps nanoseconds; no wire format of ours writes finer than micro).
    Raises ValueError with Go's wording."""
    m = RFC3339_PATTERN.fullmatch(text)
    try:
        if m is None:
            raise ValueError
        head, frac, zone = m.groups()
        micro = f".{frac[:6].ljust(6, '0')}" if frac else ""
        return dt.datetime.fromisoformat(head + micro + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        shown = text if len(text) <= 64 else text[:64] + "..."
        raise ValueError(f'parsing time "{shown}" as "{RFC3339_LAYOUT}": cannot parse it as '
                         "RFC 3339") from None


def parse_time_or_none(value: object) -> dt.datetime | None:
    """A time some reader shows or compares but need not refuse: None when missing or not
    RFC 3339 (kubectl's ``<unknown>`` age, a lease never renewed)."""
    if not value or not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def rfc3339(t: dt.datetime | float) -> str:
    """metav1.Time on the wire: UTC, seconds precision (the fraction dropped), ``Z``. A float
    is a Unix timestamp."""
    if not isinstance(t, dt.datetime):
        t = dt.datetime.fromtimestamp(int(t), dt.UTC)
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(t: dt.datetime) -> str:
    """metav1.MicroTime: exactly six fractional digits (Go's typed decoding insists)."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# lumberjack's backup-file stamp (Go's 2006-01-02T15-04-05.000): the audit log's rotation
_BACKUP_STAMP = "%Y-%m-%dT%H-%M-%S.%f"


def backup_stamp(t: dt.datetime) -> str:
    """A rotated log file's time, UTC to the millisecond, as lumberjack names backups."""
    return t.astimezone(dt.UTC).strftime(_BACKUP_STAMP)[:-3]


def parse_backup_stamp(text: str) -> dt.datetime:
    """The inverse of backup_stamp (ValueError for anything else)."""
    return dt.datetime.strptime(text + "000", _BACKUP_STAMP).replace(tzinfo=dt.UTC)


def later(t: dt.datetime, seconds: int | float) -> dt.datetime:
    """``t`` plus ``seconds``, at most MAX_TIME: a grace period may be any int64
    (``?gracePeriodSeconds=9223372036854775807``), which no datetime holds."""
    if seconds >= (MAX_TIME - t).total_seconds():
        return MAX_TIME
    return t + dt.timedelta(seconds=seconds)
