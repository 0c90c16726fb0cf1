"""Reminder plans (reference 9.2): the defaults per kind, explicit plans, and the instants they name.

A plan is a list of rules, each a dict with a stable `id`. Pure functions: the store turns the
instants computed here into `reminder_occurrences` rows.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from ..core.errors import ToolError
from ..core.records import Record
from .timeforms import When, day_bounds, parse_time, wall_instant, yearly_date

KINDS = ("birthday", "anniversary", "appointment", "deadline", "event", "follow_up", "explicit_reminder")
MAX_RULES = 10
DAY_RULE_AT = "09:00:00"
VALIDITY_AFTER_DUE = timedelta(hours=2)
LEAD_VALIDITY = timedelta(days=1)


def validity(due: datetime, boundary: datetime) -> datetime:
    """Until when sending still makes sense: a day at most (a week-before note a week late is noise), not
    past the event unless that leaves under two hours (an at-time reminder still gets its retries)."""
    return max(min(boundary, due + LEAD_VALIDITY), due + VALIDITY_AFTER_DUE)


RULE_FORMS = (
    '{"type":"days_before","days":7,"at":"09:00:00"}, {"type":"duration_before","minutes":60} '
    'or {"type":"at_time"}'
)


def _days(days: int, rule_id: str) -> dict[str, Any]:
    return {"id": rule_id, "type": "days_before", "days": days, "at": DAY_RULE_AT}


def _minutes(minutes: int) -> dict[str, Any]:
    return {"id": f"minutes_before_{minutes}", "type": "duration_before", "minutes": minutes}


def default_plan(kind: str, time_kind: str) -> list[dict[str, Any]]:
    """The defaults of the kind table; empty where the kind has none for this time form."""
    if kind in ("birthday", "anniversary"):
        return [_days(7, "week_before"), _days(0, "day_of")] if time_kind == "date" else []
    if kind in ("appointment", "event", "deadline"):
        if time_kind == "datetime":
            return [_minutes(24 * 60), _minutes(60)]
        return [_days(7, "week_before"), _days(1, "day_before"), _days(0, "day_of")]
    if kind in ("follow_up", "explicit_reminder"):
        return [{"id": "at_time", "type": "at_time"}] if time_kind == "datetime" else [_days(0, "day_of")]
    return []


def _int(rule: dict[str, Any], key: str, low: int, high: int) -> int:
    value = rule.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolError(
            "invalid_input", f"reminder rule {key} must be an integer from {low} to {high}.", {"rule": rule}
        )
    return value


def parse_rule(rule: Any, time_kind: str) -> dict[str, Any]:
    """One explicit rule, normalised with its id."""
    if not isinstance(rule, dict):
        raise ToolError("invalid_input", f"each reminder rule is an object: {RULE_FORMS}.", {})
    kind = rule.get("type")
    keys = {
        "days_before": {"type", "days", "at"},
        "duration_before": {"type", "minutes"},
        "at_time": {"type"},
    }
    if kind not in keys or not set(rule) <= keys[kind]:
        raise ToolError("invalid_input", f"a reminder rule is one of {RULE_FORMS}.", {"rule": rule})
    if kind == "days_before":
        days = _int(rule, "days", 0, 3650)
        at = parse_time(rule.get("at", DAY_RULE_AT), "at", code="invalid_input").isoformat()
        return {"id": f"days_before_{days}", "type": kind, "days": days, "at": at}
    if time_kind != "datetime":
        raise ToolError(
            "invalid_rule_time",
            f"{kind} needs an event with a time of day; for a date use days_before.",
            {"rule": rule},
        )
    if kind == "duration_before":
        return _minutes(_int(rule, "minutes", 1, 525_600))
    return {"id": "at_time", "type": "at_time"}


def build_plan(
    kind: str, time_kind: str, reminders: list[Any] | None, no_reminders: bool | None
) -> list[dict[str, Any]]:
    """The plan to store: none, the explicit one (replacing the defaults) or the kind's defaults."""
    if no_reminders:
        if reminders:
            raise ToolError(
                "invalid_input", "no_reminders excludes a reminders plan; give one or the other.", {}
            )
        return []
    if reminders is None:
        plan = default_plan(kind, time_kind)
        if not plan:
            raise ToolError(
                "empty_plan",
                f"a {kind} with a {'time' if time_kind == 'datetime' else 'date'} has no default reminders: "
                f"give reminders ({RULE_FORMS}) or no_reminders: true.",
                {"kind": kind, "time_kind": time_kind},
            )
        return plan
    if not reminders:
        raise ToolError(
            "empty_plan", "an empty reminders plan: use no_reminders: true to store no reminders.", {}
        )
    if len(reminders) > MAX_RULES:
        raise ToolError(
            "too_many_rules",
            f"a plan has at most {MAX_RULES} rules, not {len(reminders)}.",
            {"rules": len(reminders)},
        )
    plan = [parse_rule(r, time_kind) for r in reminders]
    ids = [r["id"] for r in plan]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ToolError(
            "duplicate_rule_id", f"the plan names {', '.join(duplicates)} twice.", {"ids": duplicates}
        )
    return plan


class Planned(Record, frozen=True):
    """One reminder of one occurrence: when it is due and until when a send still makes sense."""

    occurrence_key: str  # the occurrence's local date
    rule_id: str
    due: datetime
    valid_until: datetime
    boundary: datetime  # the event itself: its instant, or the end of its day


class Occurrence(Record, frozen=True):
    day: date
    start: datetime  # the instant, or the start of the local day
    boundary: datetime  # the instant, or the end of the local day


def occurrence(w: When, day: date, tz: tzinfo) -> Occurrence:
    if w.time_kind == "datetime" and w.time:
        start = datetime.combine(day, time.fromisoformat(w.time)).replace(tzinfo=tz, fold=w.fold)
        return Occurrence(day, start, start)
    begin, end = day_bounds(day, tz)
    return Occurrence(day, begin, end)


def occurrences(
    w: When, tz: tzinfo, today: date, leap_policy: str | None, count: int = 2
) -> list[Occurrence]:
    """A one-time event's occurrence, or a yearly one's next `count` from `today` on."""
    if w.recurrence != "yearly":
        assert w.date is not None
        return [occurrence(w, date.fromisoformat(w.date), tz)]
    assert w.month is not None and w.day is not None
    first = yearly_date(today.year, w.month, w.day, leap_policy)
    year = today.year if first >= today else today.year + 1
    return [occurrence(w, yearly_date(year + i, w.month, w.day, leap_policy), tz) for i in range(count)]


def rule_instant(rule: dict[str, Any], occ: Occurrence, tz: tzinfo) -> datetime:
    if rule["type"] == "days_before":
        return wall_instant(occ.day - timedelta(days=rule["days"]), time.fromisoformat(rule["at"]), tz)
    if rule["type"] == "duration_before":
        # Elapsed time, not the wall clock: Python subtracts on the wall clock of an aware datetime,
        # which across a DST change is an hour off (or lands in the spring gap).
        return occ.start.astimezone(UTC) - timedelta(minutes=rule["minutes"])
    return occ.start


def check_plan_times(plan: list[dict[str, Any]], occ: Occurrence, tz: tzinfo) -> None:
    """`invalid_rule_time` for a rule at or after its event (at_time is the event's own instant)."""
    for rule in plan:
        if rule["type"] == "at_time":
            continue
        if rule_instant(rule, occ, tz).astimezone(UTC) >= occ.boundary.astimezone(UTC):
            raise ToolError(
                "invalid_rule_time",
                f"rule {rule['id']} would fire at or after the event itself; move it earlier.",
                {"rule": rule["id"]},
            )


def planned(plan: list[dict[str, Any]], occs: list[Occurrence], tz: tzinfo, now: datetime) -> list[Planned]:
    """Every future reminder of the plan over `occs`; lead rules already past are skipped."""
    out: list[Planned] = []
    for occ in occs:
        for rule in plan:
            due = rule_instant(rule, occ, tz).astimezone(UTC)
            if due <= now:
                continue
            boundary = occ.boundary.astimezone(UTC)
            out.append(Planned(occ.day.isoformat(), rule["id"], due, validity(due, boundary), boundary))
    return sorted(out, key=lambda p: (p.due, p.rule_id))
