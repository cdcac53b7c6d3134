"""Cron schedules as the CronJob API reads them (robfig/cron's ParseStandard): five fields
or a descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly,
@every DURATION), with robfig's error texts, which the API server returns as the detail
of ``spec.schedule: Invalid value``. Times come from croniter, imported where a schedule is
read: the API types import this module, and a node's agent (which never reads one) would
otherwise carry croniter and dateutil, ~1.5 MiB (issue 23 item 3)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
               "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
               "@hourly": "0 * * * *"}
# minute, hour, day of month, month, day of week: robfig's bounds and names
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}),
    (1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    (0, 6, {d: i for i, d in enumerate(_DAYS)}))


def _croniter() -> Any:
    from croniter import croniter  # type: ignore[import-untyped]

    return croniter


class ScheduleError(ValueError):
    """A schedule robfig/cron would not parse; the text is its error's."""


def _number(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing '
                            f'"{text}": invalid syntax')
    return int(text)


def _check_field(expr: str, lo: int, hi: int, names: dict[str, int]) -> None:
    for part in expr.split(","):
        rng, _, step = part.partition("/")
        if rng in ("*", "?"):
            start, end = lo, hi
        else:
            a, dash, b = rng.partition("-")
            start = _number(a, names)
            end = _number(b, names) if dash else start
        if step and _number(step, {}) <= 0:
            raise ScheduleError(f"step of range should be a positive number: {part}")
        if start < lo:
            raise ScheduleError(f"beginning of range ({start}) below minimum ({lo}): {part}")
        if end > hi:
            raise ScheduleError(f"end of range ({end}) above maximum ({hi}): {part}")
        if start > end:
            raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): "
                                f"{part}")


def standard(schedule: str) -> str:
    """The five-field form of ``schedule`` (descriptors expanded); ScheduleError else."""
    spec = schedule.strip()
    if not spec:
        raise ScheduleError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        _, _, spec = spec.partition(" ")
    if spec.startswith("@"):
        if spec in DESCRIPTORS:
            return DESCRIPTORS[spec]
        raise ScheduleError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: "
                            f"[{' '.join(fields)}]")
    for expr, (lo, hi, names) in zip(fields, _BOUNDS, strict=True):
        _check_field(expr, lo, hi, names)
    if not _croniter().is_valid(spec):
        raise ScheduleError(f"unparseable schedule: {spec}")
    return spec


def times_between(schedule: str, after: dt.datetime, until: dt.datetime,
                  limit: int) -> list[dt.datetime]:
    """The schedule's times t with after < t <= until (at most ``limit``+1 of them, so a
    caller can tell "too many"); ``after`` carries the time zone the schedule runs in."""
    it = _croniter()(standard(schedule), after)
    out: list[dt.datetime] = []
    while len(out) <= limit:
        t: dt.datetime = it.get_next(dt.datetime)
        if t > until:
            break
        out.append(t)
    return out


def next_time(schedule: str, after: dt.datetime) -> dt.datetime:
    t: dt.datetime = _croniter()(standard(schedule), after).get_next(dt.datetime)
    return t
