"""The time rules of events (reference 9.2): zones, the four tagged `when` forms, DST and leap days.

Pure functions over `datetime` and `zoneinfo`; nothing here reads the clock or the database. A local
time that does not exist (`dst_gap`) or exists twice (`ambiguous_local_time`, unless `utc_offset`
picks one) is refused, never silently moved: the owner decides which instant they meant.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from ..core.errors import ToolError
from ..core.records import Record

WHEN_FORMS = (
    '{"type":"date","date":"YYYY-MM-DD"}, '
    '{"type":"datetime","date":"YYYY-MM-DD","time":"HH:MM:SS","utc_offset"?:"+01:00"}, '
    '{"type":"relative","amount":2,"unit":"days"|"weeks","time"?:"HH:MM:SS","utc_offset"?:"+01:00"} or '
    '{"type":"annual","month":9,"day":14}'
)
LEAP_POLICIES = ("feb_28", "mar_1")
MAX_RELATIVE_DAYS = 3650
# The years a stored date may name: every instant fermix derives from one (a rule up to 3650 days
# before it, the end of its day, a zone's offset either way) stays inside datetime's range, and the
# UTC stamps keep their four-digit, string-sortable year.
MIN_YEAR, MAX_YEAR = 1900, 9998
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME = re.compile(r"^\d{2}:\d{2}(:\d{2})?$")
_OFFSET = re.compile(r"^(Z|[+-]\d{2}:\d{2})$")


class When(Record, frozen=True):
    """A resolved time form: a one-time date or instant, or a yearly month/day."""

    recurrence: str  # "none" | "yearly"
    time_kind: str  # "date" | "datetime"
    date: str | None = None  # YYYY-MM-DD, one-time events
    time: str | None = None  # HH:MM:SS, timed events
    fold: int = 0  # which of two equal local times, when the owner picked one by utc_offset
    month: int | None = None
    day: int | None = None

    def as_dict(self) -> dict[str, Any]:
        if self.recurrence == "yearly":
            return {"type": "annual", "month": self.month, "day": self.day}
        if self.time_kind == "date":
            return {"type": "date", "date": self.date}
        return {"type": "datetime", "date": self.date, "time": self.time}


def zone(name: str) -> tzinfo:
    """The IANA zone `name`, or `invalid_timezone`."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not name or name != name.strip() or name.startswith("/") or ".." in name:
        raise ToolError("invalid_timezone", f"{name!r} is not an IANA timezone such as Europe/Berlin.", {})
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ToolError(
            "invalid_timezone", f"{name!r} is not an IANA timezone such as Europe/Berlin.", {"timezone": name}
        ) from None


def resolve_zone_name(explicit: str | None, configured: str | None) -> str:
    """The explicit zone, else `[fermix_core.personalization] timezone`; never a silent UTC fallback."""
    name = explicit or configured
    if not name:
        raise ToolError(
            "timezone_not_configured",
            "No timezone: pass `timezone` only if the owner named one, or set "
            "[fermix_core.personalization] timezone in config.toml (fermix config set ...). "
            "fermix never assumes UTC.",
            {},
        )
    zone(name)
    return name


def is_iso_day(text: Any) -> bool:
    """Whether `text` is spelled YYYY-MM-DD (ASCII digits; not the other ISO forms fromisoformat reads)."""
    return isinstance(text, str) and _DATE.fullmatch(text) is not None


def parse_date(text: Any, field: str = "date") -> date:
    if not is_iso_day(text):
        raise ToolError(
            "invalid_when", f"{field} must be YYYY-MM-DD; the forms are {WHEN_FORMS}.", {"field": field}
        )
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ToolError(
            "invalid_when", f"{field} {text!r} is not a calendar date.", {"field": field}
        ) from None
    if not MIN_YEAR <= day.year <= MAX_YEAR:
        raise ToolError(
            "invalid_when",
            f"{field} {text!r} is outside the supported years {MIN_YEAR} to {MAX_YEAR}.",
            {"field": field, "min_year": MIN_YEAR, "max_year": MAX_YEAR},
        )
    return day


def parse_time(text: Any, field: str = "time", code: str = "invalid_when") -> time:
    if not isinstance(text, str) or not _TIME.match(text):
        raise ToolError(code, f"{field} must be HH:MM:SS.", {"field": field})
    try:
        return time.fromisoformat(text if len(text) == 8 else text + ":00")
    except ValueError:
        raise ToolError(code, f"{field} {text!r} is not a time of day.", {"field": field}) from None


def _offset_text(delta: timedelta | None) -> str:
    minutes = int((delta or timedelta()).total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def offset_at(day: date, at: time, tz: tzinfo, fold: int = 0) -> str:
    """The UTC offset (`+01:00`) of `day at` in `tz`; `fold` 1 names the second of two equal local times."""
    return _offset_text(datetime.combine(day, at).replace(tzinfo=tz, fold=fold).utcoffset())


def local_instant(day: date, at: time, tz: tzinfo, utc_offset: str | None = None) -> tuple[datetime, int]:
    """The one instant `day at` names in `tz`, and its fold; refuses a DST gap or an unpicked repeat."""
    naive = datetime.combine(day, at)
    first, second = naive.replace(tzinfo=tz, fold=0), naive.replace(tzinfo=tz, fold=1)
    zone_name = str(tz)
    if first.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != naive:
        raise ToolError(
            "dst_gap",
            f"{day.isoformat()} {at.isoformat()} does not exist in {zone_name}: the clocks skip that hour. "
            "Ask the owner which time they meant.",
            {"date": day.isoformat(), "time": at.isoformat(), "timezone": zone_name},
        )
    offsets = [_offset_text(first.utcoffset()), _offset_text(second.utcoffset())]
    if utc_offset is not None:
        if not isinstance(utc_offset, str) or not _OFFSET.match(utc_offset):
            raise ToolError("invalid_utc_offset", "utc_offset must look like +01:00 or -05:00.", {})
        wanted = "+00:00" if utc_offset == "Z" else utc_offset
        if wanted not in offsets:
            raise ToolError(
                "invalid_utc_offset",
                f"{naive.isoformat(sep=' ')} in {zone_name} has offset {' or '.join(sorted(set(offsets)))}, "
                f"not {utc_offset}.",
                {"offsets": sorted(set(offsets))},
            )
        fold = offsets.index(wanted)
        return (second if fold else first), fold
    if offsets[0] != offsets[1]:
        raise ToolError(
            "ambiguous_local_time",
            f"{naive.isoformat(sep=' ')} happens twice in {zone_name} (the clocks go back): at offset "
            f"{offsets[0]} and again at {offsets[1]}. Ask the owner which, then pass utc_offset.",
            {"offsets": offsets, "timezone": zone_name},
        )
    return first, 0


def wall_instant(day: date, at: time, tz: tzinfo) -> datetime:
    """A reminder's instant for a local time: a time in a DST gap lands after it, a repeat takes the first.

    With fold=0 zoneinfo reads a gap time at the offset before the change (02:30 becomes 03:30).
    """
    return datetime.combine(day, at).replace(tzinfo=tz, fold=0)


def yearly_date(year: int, month: int, day: int, leap_policy: str | None) -> date:
    """This year's date of a yearly month/day; 29 February follows the leap-day policy in other years."""
    try:
        return date(year, month, day)
    except ValueError:
        if (month, day) != (2, 29):
            raise
        return date(year, 2, 28) if leap_policy == "feb_28" else date(year, 3, 1)


def next_yearly(month: int, day: int, leap_policy: str | None, today: date) -> date:
    """The first occurrence on or after `today` (calendar arithmetic, never +365 days)."""
    this_year = yearly_date(today.year, month, day, leap_policy)
    return this_year if this_year >= today else yearly_date(today.year + 1, month, day, leap_policy)


def _shape(when: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(when, dict) or not set(when) <= allowed:
        extra = sorted(set(when) - allowed) if isinstance(when, dict) else []
        raise ToolError(
            "invalid_when",
            f"when must be exactly one of the forms {WHEN_FORMS}"
            + (f"; unknown keys: {', '.join(extra)}" if extra else ""),
            {"keys": extra},
        )
    return when


def _int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolError("invalid_when", f"{field} must be an integer from {low} to {high}.", {"field": field})
    return value


def parse_when(when: Any, tz: tzinfo, today: date, leap_policy: str | None) -> tuple[When, datetime | None]:
    """Resolve a tagged `when` in zone `tz` seen from `today`: the form and, for a timed one, its instant."""
    kind = when.get("type") if isinstance(when, dict) else None
    if kind == "date":
        w = _shape(when, {"type", "date"})
        day = parse_date(w.get("date"))
        return When("none", "date", date=day.isoformat()), None
    if kind == "datetime":
        w = _shape(when, {"type", "date", "time", "utc_offset"})
        day, at = parse_date(w.get("date")), parse_time(w.get("time"))
        instant, fold = local_instant(day, at, tz, w.get("utc_offset"))
        return When("none", "datetime", date=day.isoformat(), time=at.isoformat(), fold=fold), instant
    if kind == "relative":
        w = _shape(when, {"type", "amount", "unit", "time", "utc_offset"})
        if w.get("unit") not in ("days", "weeks"):
            raise ToolError("invalid_when", "relative unit must be days or weeks.", {"field": "unit"})
        days = _int(w.get("amount"), "amount", 1, MAX_RELATIVE_DAYS) * (7 if w["unit"] == "weeks" else 1)
        if days > MAX_RELATIVE_DAYS:
            raise ToolError("invalid_when", f"relative dates reach at most {MAX_RELATIVE_DAYS} days.", {})
        day = today + timedelta(days=days)
        if w.get("time") is None:
            if w.get("utc_offset") is not None:
                raise ToolError(
                    "invalid_when", "utc_offset goes with a time of day.", {"field": "utc_offset"}
                )
            return When("none", "date", date=day.isoformat()), None
        at = parse_time(w["time"])
        instant, fold = local_instant(day, at, tz, w.get("utc_offset"))
        return When("none", "datetime", date=day.isoformat(), time=at.isoformat(), fold=fold), instant
    if kind == "annual":
        w = _shape(when, {"type", "month", "day"})
        month, day_of = _int(w.get("month"), "month", 1, 12), _int(w.get("day"), "day", 1, 31)
        try:
            date(2028, month, day_of)  # a leap year: 29 February exists
        except ValueError:
            raise ToolError("invalid_when", f"month {month} has no day {day_of}.", {"field": "day"}) from None
        if (month, day_of) == (2, 29) and leap_policy not in LEAP_POLICIES:
            raise ToolError(
                "leap_day_policy_required",
                "A yearly 29 February needs leap_day_policy: feb_28 or mar_1 (the day it falls on in other "
                "years). Ask the owner which.",
                {},
            )
        return When("yearly", "date", month=month, day=day_of), None
    raise ToolError("invalid_when", f"when must be one of the forms {WHEN_FORMS}.", {"type": kind})


def day_bounds(day: date, tz: tzinfo) -> tuple[datetime, datetime]:
    """The instants a local calendar day starts and ends (the next day's start) in `tz`."""
    return wall_instant(day, time(0), tz), wall_instant(day + timedelta(days=1), time(0), tz)


def stated_as(w: When, occurrence: date, tz_name: str) -> str:
    """The absolute date with its weekday, as the owner should hear it back."""
    text = f"{occurrence.strftime('%A')} {occurrence.day} {occurrence.strftime('%B %Y')}"
    if w.time_kind == "datetime" and w.time:
        text += f" at {w.time[:5]} ({tz_name})"
    if w.recurrence == "yearly":
        text += ", every year"
    return text
