"""The schedule grammar of scheduled jobs: parse an expression, compute its next run instants.

Three forms, exactly one per schedule: `every N minute(s)|hour(s)|day(s)`, a 5-field cron evaluated on
the wall clock of the job's IANA zone, and a one-off ISO-8601 instant with an explicit offset. Everything
here is pure: callers pass the current time in, and every instant handed back is an aware UTC datetime.
"""

from __future__ import annotations

import calendar
import re
from bisect import bisect_left
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from fermix_cli.core.errors import ToolError

from ..core.records import Record

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

GRAMMAR = (
    "A schedule is exactly one of: an interval `every N minutes|hours|days` (N >= 1, e.g. `every 15 minutes`, "
    "`every 1 day`); a 5-field cron `minute hour day-of-month month day-of-week` with numbers only "
    "(minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-7 where 0 and 7 are Sunday; "
    "terms `*`, `*/s`, `v`, `a-b`, `a-b/s`, `v/s` in comma lists; when day-of-month and day-of-week are both "
    "restricted both must match; e.g. `0 8 * * 1-5`, `*/30 9-17 * * *`), evaluated in the job's timezone; or "
    "a one-off ISO-8601 instant with an offset (e.g. `2026-03-29T08:00:00+02:00`, `2026-03-29T06:00:00Z`)."
)

ScheduleKind = Literal["interval", "cron", "once"]

_INTERVAL = re.compile(r"every\s+([1-9][0-9]*)\s+(minute|hour|day)(s?)", re.IGNORECASE | re.ASCII)
_INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
_NAIVE_INSTANT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt ][0-9:.]+)?", re.ASCII)
_CRON_CHARS = re.compile(r"[0-9*/,\-]+", re.ASCII)
_CRON_TERM = re.compile(r"(?:(\*)|([0-9]{1,2})(?:-([0-9]{1,2}))?)(?:/([0-9]{1,2}))?", re.ASCII)
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*", re.ASCII)
# Files under the zoneinfo path that load as zones but are not IANA names (`localtime` is the host's zone).
_NOT_IANA = frozenset({"localtime", "posixrules"})
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
# Longer intervals could never fire within the year a cron is searched, and `after + N` must not overflow.
_MAX_INTERVAL = timedelta(days=366)
# (name, low, high, open end) of each cron field. `*` and `v/s` run to the open end; for day-of-week that
# is Saturday, so `1/2` means Mon, Wed, Fri rather than also Sunday through its alias 7.
_CRON_FIELDS = (
    ("minute", 0, 59, 59),
    ("hour", 0, 23, 23),
    ("day-of-month", 1, 31, 31),
    ("month", 1, 12, 12),
    ("day-of-week", 0, 7, 6),
)
# Days each month can have in some year; the static check that refuses `0 0 30 2 *` at parse time.
_MAX_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# Every date recurs with the same weekday within the 400-year Gregorian cycle, so a cron that passed the
# static check always matches inside it; the bound only guards the loop.
_SEARCH_YEARS = 401


class CronFields(Record, frozen=True):
    """The expanded value sets of a cron expression; day-of-week uses 0 = Sunday (7 already folded in)."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]


class Schedule(Record, frozen=True):
    """A parsed schedule: its kind, normalised expression, IANA zone and parsed form.

    `parsed` is a `timedelta` for an interval, `CronFields` for a cron, and the aware UTC instant for a
    one-off.
    """

    kind: ScheduleKind
    expression: str
    timezone: str
    parsed: timedelta | CronFields | datetime


# Instants fermix schedules or expires at: far enough from the calendar's ends that adding a day
# or a retry backoff to one never leaves what `datetime` can hold.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC)


def aware_instant(text: str) -> datetime | None:
    """An ISO-8601 date-time with an offset as aware UTC, or None when it is no real instant in range.

    `text` must already match the instant syntax; 9999-12-31T23:59:59-14:00 is past what UTC can hold.
    """
    try:
        instant = datetime.fromisoformat(text.upper().replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return instant if EARLIEST <= instant <= LATEST else None


def _refuse(expr: str, reason: str) -> ToolError:
    return ToolError(
        "invalid_schedule",
        f"{reason} {GRAMMAR}",
        {"schedule": expr, "reason": reason},
    )


def _zone(name: str) -> ZoneInfo:
    """The ZoneInfo for an IANA zone name, or `invalid_timezone`."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # 10 ms to set up: only when a zone is read

    if isinstance(name, str) and _ZONE_NAME.fullmatch(name) and name not in _NOT_IANA:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass  # reported below, with the same message as a malformed name
    raise ToolError(
        "invalid_timezone",
        f"`{name}` is not an IANA timezone name; use one such as `UTC`, `Europe/Berlin` or `America/New_York`.",
        {"timezone": name},
    )


def parse_schedule(expr: str, timezone: str = "UTC") -> Schedule:
    """Parse a schedule expression in an IANA zone, or raise `invalid_schedule` / `invalid_timezone`.

    A cron whose month and day-of-month never meet (`0 0 30 2 *`) is refused here; whether it matches
    within a year of now is checked by `first_run`.
    """
    _zone(timezone)
    if not isinstance(expr, str):
        raise _refuse(repr(expr), "The schedule must be a string.")
    text = " ".join(expr.split())
    if not text:
        raise _refuse(expr, "The schedule is empty.")
    if match := _INTERVAL.fullmatch(text):
        count, unit = int(match[1]), match[2].lower()
        seconds = count * _UNIT_SECONDS[unit]
        if seconds > _MAX_INTERVAL.total_seconds():
            raise _refuse(expr, f"`{text}`: an interval may be at most 366 days.")
        return Schedule(
            "interval",
            f"every {count} {unit}{'s' if count != 1 else ''}",
            timezone,
            timedelta(seconds=seconds),
        )
    if _INSTANT.fullmatch(text):
        instant = aware_instant(text)
        if instant is None:
            raise _refuse(
                expr, f"`{text}` is not a real calendar date and time between years 0001 and 9998 (UTC)."
            )
        written = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
        return Schedule("once", written.isoformat(), timezone, instant)
    if text.lower().startswith("every"):
        raise _refuse(
            expr, f"`{text}`: an interval is `every N minutes|hours|days` with N >= 1, no leading zero."
        )
    if _NAIVE_INSTANT.fullmatch(text):
        raise _refuse(expr, f"`{text}` has no UTC offset; add `Z` or `±hh:mm`.")
    fields = text.split(" ")
    if all(_CRON_CHARS.fullmatch(field) for field in fields):
        if len(fields) != 5:
            raise _refuse(expr, f"`{text}` has {len(fields)} fields; a cron has exactly 5.")
        return Schedule("cron", text, timezone, _parse_cron(expr, fields))
    raise _refuse(expr, f"`{text}` is not a recognised schedule.")


def _parse_cron(expr: str, fields: list[str]) -> CronFields:
    sets = [_expand(expr, field, *spec) for field, spec in zip(fields, _CRON_FIELDS, strict=True)]
    minutes, hours, days, months, weekdays = sets
    weekdays = {0 if d == 7 else d for d in weekdays}
    if not any(d <= _MAX_MONTH_DAYS[m - 1] for m in months for d in days):
        raise _refuse(
            expr, f"`{' '.join(fields)}` is unsatisfiable: that day-of-month never occurs in that month."
        )
    return CronFields(
        tuple(sorted(minutes)), tuple(sorted(hours)), frozenset(days), frozenset(months), frozenset(weekdays)
    )


def _expand(expr: str, field: str, name: str, low: int, high: int, open_end: int) -> set[int]:
    """The values one comma-separated cron field selects, or `invalid_schedule` naming the bad term."""
    values: set[int] = set()
    for term in field.split(","):
        match = _CRON_TERM.fullmatch(term)
        if match is None:
            raise _refuse(expr, f"{name} term `{term}` is malformed.")
        star, first, last, step_text = match.groups()
        step = int(step_text) if step_text is not None else 1
        start = low if star else int(first)
        runs_open = star or (last is None and step_text is not None)
        # max(): `7/s` on day-of-week, past the open end, is just Sunday.
        end = max(start, open_end) if runs_open else int(last or first)
        if not low <= start <= high or not low <= end <= high:
            raise _refuse(expr, f"{name} term `{term}` is outside {low}-{high}.")
        if start > end:
            raise _refuse(expr, f"{name} term `{term}` is a reversed range.")
        if not 1 <= step <= high:
            raise _refuse(expr, f"{name} term `{term}` has a step outside 1-{high}.")
        values.update(range(start, end + 1, step))
    return values


def _local_candidates(fields: CronFields, start: datetime, years: int) -> Iterator[datetime]:
    """Naive local wall-clock times matching the fields, ascending from `start`'s minute, for `years` years."""
    day_one = start.date()
    first_hour = bisect_left(fields.hours, start.hour)
    first_minute = bisect_left(fields.minutes, start.minute)
    for month_index in range(day_one.year * 12 + day_one.month - 1, (day_one.year + years) * 12):
        year, month = divmod(month_index, 12)
        month += 1
        if month not in fields.months:
            continue
        last_day = calendar.monthrange(year, month)[1]
        for day in range(1, last_day + 1):
            current = date(year, month, day)
            if current < day_one or day not in fields.days or current.isoweekday() % 7 not in fields.weekdays:
                continue
            today = current == day_one
            for hour in fields.hours[first_hour if today else 0 :]:
                this_hour = today and hour == start.hour
                for minute in fields.minutes[first_minute if this_hour else 0 :]:
                    yield datetime(year, month, day, hour, minute)


def _next_cron(fields: CronFields, zone: ZoneInfo, after: datetime, years: int) -> datetime | None:
    # Scanning naive local times in order and mapping each with fold=0 gives instants in increasing order,
    # so the first one past `after` is the answer. A time in a spring-forward gap does not survive the round
    # trip through UTC and is skipped; the second pass of a fall-back hour is fold=1 and never produced.
    for naive in _local_candidates(fields, after.astimezone(zone).replace(tzinfo=None), years):
        instant = naive.replace(tzinfo=zone).astimezone(UTC)
        if instant > after and instant.astimezone(zone).replace(tzinfo=None) == naive:
            return instant
    return None


def _require_aware(name: str, value: datetime) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, got naive {value.isoformat()}")


def next_run(schedule: Schedule, after: datetime, *, previous: datetime | None = None) -> datetime | None:
    """The next run instant (aware UTC) strictly after `after`, or None when a one-off has passed.

    Interval: `after + N` when `previous` (the last *scheduled* time) is None, otherwise the first
    `previous + k*N` past `after`, so missed intervals never fire in a burst. Intervals are exact durations,
    so `every 1 day` is 24 h even across a DST change. Cron: the first matching wall-clock minute in the
    job's zone; a time inside a spring-forward gap never matches (that day is skipped) and a repeated
    fall-back time matches only its first occurrence. The search runs until the next match (a leap-day cron
    keeps firing every leap year); the one-year rule for new jobs lives in `first_run`. One-off: its instant
    if that is after `after`; a past one-off's due time comes from `first_run`.
    Raises ValueError for a naive `after` or `previous`.
    """
    _require_aware("after", after)
    after = after.astimezone(UTC)
    if isinstance(schedule.parsed, timedelta):
        if previous is None:
            return after + schedule.parsed
        _require_aware("previous", previous)
        behind = after - previous
        steps = 1 if behind < timedelta(0) else behind // schedule.parsed + 1
        return previous.astimezone(UTC) + steps * schedule.parsed
    if isinstance(schedule.parsed, CronFields):
        found = _next_cron(schedule.parsed, _zone(schedule.timezone), after, _SEARCH_YEARS)
        if found is None:
            raise _refuse(schedule.expression, f"`{schedule.expression}` never matches.")
        return found
    return schedule.parsed if schedule.parsed > after else None


def first_run(schedule: Schedule, now: datetime) -> datetime:
    """When a new (or resumed) job is first due, enforcing the one-year rule for crons.

    Interval: `now + N`. One-off: its instant, even when that is already past: the next tick runs it (the
    caller refuses a passed one-off on resume). Cron: `next_run`, refused with `invalid_schedule` when the
    first match lies more than one year ahead on the zone's wall clock (`0 0 29 2 *` when the next leap day
    is over a year away). Raises ValueError for a naive `now`.
    """
    _require_aware("now", now)
    if isinstance(schedule.parsed, datetime):
        return schedule.parsed
    if isinstance(schedule.parsed, timedelta):
        return now.astimezone(UTC) + schedule.parsed
    zone = _zone(schedule.timezone)
    local_now = now.astimezone(zone).replace(tzinfo=None)
    # One calendar year on the wall clock; Feb 29 has no anniversary, so it counts from Mar 1.
    if local_now.month == 2 and local_now.day == 29:
        horizon = local_now.replace(year=local_now.year + 1, month=3, day=1)
    else:
        horizon = local_now.replace(year=local_now.year + 1)
    found = _next_cron(schedule.parsed, zone, now.astimezone(UTC), 2)
    if found is None or found.astimezone(zone).replace(tzinfo=None) > horizon:
        when = f"; the next is {found.isoformat()}" if found else ""
        raise _refuse(
            schedule.expression,
            f"`{schedule.expression}` is unsatisfiable: no run within one year of {now.isoformat()}{when}."
            + _gap_hint(schedule, local_now, horizon),
        )
    return found


def _gap_hint(schedule: Schedule, local_now: datetime, horizon: datetime) -> str:
    """Why a cron with wall-clock matches within the year still never runs: they all fall in DST gaps."""
    assert isinstance(schedule.parsed, CronFields)
    for naive in _local_candidates(schedule.parsed, local_now, 2):
        if naive > horizon:
            return ""
        if naive > local_now:
            return (
                f" Its wall-clock matches in that year (the first {naive.isoformat(timespec='minutes')}) all "
                f"fall in a daylight-saving gap of {schedule.timezone}, a local time the clocks skip, so it "
                "never runs there; choose a time outside the skipped hour."
            )
    return ""


def is_stale(scheduled_for: datetime, now: datetime, window_seconds: int = 3600) -> bool:
    """Whether a recurring slot is more than `window_seconds` overdue and must be skipped, not run.

    One-offs still run late; the caller does not ask this for them.
    """
    _require_aware("scheduled_for", scheduled_for)
    _require_aware("now", now)
    return now - scheduled_for > timedelta(seconds=window_seconds)
