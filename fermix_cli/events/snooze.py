"""reminder_snooze (reference 9.4): defer one reminder; one active snooze per source, never the plan."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from . import plans, store
from .timeforms import local_instant, parse_date, parse_time, wall_instant, yearly_date, zone

if TYPE_CHECKING:
    from datetime import datetime

    from ..core.context import ToolContext

MAX_AHEAD = timedelta(days=90)
VALID_AFTER = timedelta(hours=2)
UNITS = {"minutes": 1, "hours": 60, "days": 24 * 60}
FORMS = (
    '{"type":"duration","amount":2,"unit":"minutes"|"hours"|"days"} or '
    '{"type":"datetime","date":"YYYY-MM-DD","time":"HH:MM:SS","utc_offset"?:"+01:00"}'
)


def days_later(now: datetime, days: int, zone_name: str) -> datetime:
    """The same wall-clock time `days` calendar days after `now` in the zone (a gap time lands after it)."""
    tz = zone(zone_name)
    local = now.astimezone(tz)
    return wall_instant(local.date() + timedelta(days=days), local.time().replace(tzinfo=None), tz)


def snooze_time(snooze: Any, now: datetime, zone_name: str) -> datetime:
    kind = snooze.get("type") if isinstance(snooze, dict) else None
    if kind == "duration" and set(snooze) <= {"type", "amount", "unit"}:
        amount, unit = snooze.get("amount"), snooze.get("unit")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1 or unit not in UNITS:
            raise ToolError("invalid_input", f"snooze is {FORMS}; amount is an integer >= 1.", {})
        if amount > 90 * 24 * 60:
            raise ToolError("snooze_too_far", "a snooze reaches at most 90 days ahead.", {})
        if unit == "days":  # days on the owner's wall clock: "a day later" is the same time across DST
            return days_later(now, amount, zone_name)
        return now + timedelta(minutes=amount * UNITS[unit])
    if kind == "datetime" and set(snooze) <= {"type", "date", "time", "utc_offset"}:
        day, at = parse_date(snooze.get("date")), parse_time(snooze.get("time"))
        return local_instant(day, at, zone(zone_name), snooze.get("utc_offset"))[0]
    raise ToolError("invalid_input", f"snooze is {FORMS}.", {})


def _source(db: sqlite3.Connection, ctx: ToolContext, reminder_id: str | None) -> sqlite3.Row:
    if reminder_id is None:
        row = store.recent_reminder(db, ctx)
    else:
        row = db.execute("SELECT * FROM reminder_occurrences WHERE id = ?", (reminder_id,)).fetchone()
        if row is None:
            raise ToolError("not_found", f"no reminder {reminder_id}; event_list shows reminder ids.", {})
    if row["source_reminder_id"] is not None:  # snoozing a snooze defers its source again
        row = db.execute(
            "SELECT * FROM reminder_occurrences WHERE id = ?", (row["source_reminder_id"],)
        ).fetchone()
    return row


def _occurrence_now(event: sqlite3.Row, source: sqlite3.Row) -> tuple[str, str]:
    """The occurrence (its day, its boundary stamp) a snooze of `source` reminds of.

    A reminder delivered before an `event_update` names the event as it was; the snooze is about the event as
    it is now: a one-time date where it now is, a yearly one in the same year. It must not announce, or
    stop at, a date or time the owner has since moved."""
    if source["revision"] == event["revision"]:
        return source["occurrence_key"], source["boundary"]
    w = store.when_of(event)
    if w.recurrence == "yearly":
        assert w.month is not None and w.day is not None
        day = yearly_date(int(source["occurrence_key"][:4]), w.month, w.day, event["leap_day_policy"])
    else:
        assert w.date is not None
        day = date.fromisoformat(w.date)
    occ = plans.occurrence(w, day, zone(event["timezone"]))
    return day.isoformat(), store.ts(occ.boundary)


def snooze_reminder(ctx: ToolContext, p: Any) -> dict[str, Any]:
    from .actions import configured_zone

    now = ctx.now()
    with ctx.state.write(durable=True) as db:
        source = _source(db, ctx, p.reminder_id)
        event = store.get_event(db, source["event_id"])
        if event["status"] == "cancelled":
            raise ToolError(
                "parent_cancelled", f"{event['title']} was cancelled; its reminders cannot be snoozed.", {}
            )
        if source["status"] in ("failed", "expired", "cancelled"):
            raise ToolError(
                "source_terminal", f"reminder {source['id']} is {source['status']}; it cannot be snoozed.", {}
            )
        if source["status"] == "delivering":
            raise ToolError(
                "source_delivering",
                f"reminder {source['id']} is being sent right now; try again shortly.",
                {},
            )
        owner_zone = configured_zone(ctx) or event["timezone"]
        when = snooze_time(p.snooze, now, owner_zone)
        if when <= now:
            raise ToolError("snooze_in_past", "the snooze time has already passed; pick a later time.", {})
        # 90 days on the owner's calendar (an autumn change in between adds an hour of elapsed time)
        if when > max(now + MAX_AHEAD, days_later(now, MAX_AHEAD.days, owner_zone)):
            raise ToolError("snooze_too_far", "a snooze reaches at most 90 days ahead.", {})
        occurrence_key, boundary_stamp = _occurrence_now(event, source)
        boundary = store.parse_ts(boundary_stamp)
        if when >= boundary and not p.confirm_past_boundary:
            raise ToolError(
                "snooze_past_boundary_unconfirmed",
                f"that is at or after {event['title']} itself ({boundary_stamp}); ask the owner, then pass "
                "confirm_past_boundary: true.",
                {"boundary": boundary_stamp},
            )
        active = db.execute(
            "SELECT * FROM reminder_occurrences WHERE source_reminder_id = ? AND status IN ('pending', 'delivering')",
            (source["id"],),
        ).fetchone()
        stamp = store.ts(when)
        if active is not None:
            if active["status"] == "delivering":
                raise ToolError(
                    "delivery_in_progress", "the earlier snooze of this reminder is being sent right now.", {}
                )
            if active["scheduled_for"] == stamp:
                raise ToolError(
                    "already_snoozed",
                    f"reminder {source['id']} is already snoozed to {stamp}; nothing changed.",
                    {"reminder_id": active["id"], "scheduled_for": stamp},
                )
            db.execute(
                "UPDATE reminder_occurrences SET status = 'cancelled', next_attempt_at = NULL WHERE id = ?",
                (active["id"],),
            )
        if source["status"] == "pending":  # deferring a reminder not yet sent: the snooze takes its place
            db.execute(
                "UPDATE reminder_occurrences SET status = 'superseded', next_attempt_at = NULL, last_error = ? WHERE id = ?",
                (f"snoozed to {stamp}", source["id"]),
            )
        if event["status"] == "completed":  # active again just long enough to deliver (reference 9.4)
            db.execute(
                "UPDATE temporal_events SET status = 'active', completed_at = NULL, updated_at = ? WHERE id = ?",
                (store.ts(now), event["id"]),
            )
        valid = when + VALID_AFTER if when >= boundary else min(when + VALID_AFTER, boundary)
        snooze_id = store.new_id("rm")
        db.execute(
            "INSERT INTO reminder_occurrences (id, event_id, revision, occurrence_key, rule_id, scheduled_for,"
            " valid_until, boundary, status, next_attempt_at, source_reminder_id, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,'pending',?,?,?)"
            " ON CONFLICT DO UPDATE SET status = 'pending', next_attempt_at = excluded.next_attempt_at,"
            " attempt_count = 0, last_error = NULL, valid_until = excluded.valid_until",
            (
                snooze_id,
                source["event_id"],
                event["revision"],
                occurrence_key,
                source["rule_id"],
                stamp,
                store.ts(valid),
                boundary_stamp,
                stamp,
                source["id"],
                store.ts(now),
            ),
        )
        row = db.execute(
            "SELECT * FROM reminder_occurrences WHERE source_reminder_id = ? AND scheduled_for = ?",
            (source["id"], stamp),
        ).fetchone()
    local = when.astimezone(zone(event["timezone"]))
    return {
        "status": "snoozed",
        "reminder": store.reminder_dict(row, event["timezone"]),
        "source_reminder_id": source["id"],
        "event": {"event_id": event["id"], "title": event["title"], "next_occurrence": event["next_date"]},
        "message": f"Snoozed: {event['title']} again at {local.strftime('%A %d %B %Y %H:%M')} ({event['timezone']}).",
    }
