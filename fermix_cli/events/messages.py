"""The text of a reminder: deterministic (no model), with the absolute date and time in the event's zone."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

TEXT_LIMIT = 1000  # well under the smallest channel limit (SMS-style channels aside)
LATE = timedelta(
    minutes=5
)  # a tick runs every minute: later than this, the machine was off or a send retried


def _lead(rule_id: str, snoozed: bool) -> str:
    if snoozed:
        return "snoozed reminder"
    if rule_id in ("day_of", "days_before_0", "at_time"):
        return "today" if rule_id != "at_time" else "now"
    if rule_id == "week_before":
        return "in 7 days"
    if rule_id == "day_before":
        return "tomorrow"
    kind, _, amount = rule_id.rpartition("_")
    if kind == "days_before" and amount.isdigit():
        return f"in {amount} days" if amount != "1" else "tomorrow"
    if kind == "minutes_before" and amount.isdigit():
        minutes = int(amount)
        if minutes % 1440 == 0:
            days = minutes // 1440
            return f"in {days} day{'s' if days > 1 else ''}"
        if minutes % 60 == 0:
            hours = minutes // 60
            return f"in {hours} hour{'s' if hours > 1 else ''}"
        return f"in {minutes} minutes"
    return "coming up"


def _days_phrase(days: int) -> str:
    return "today" if days == 0 else "tomorrow" if days == 1 else f"in {days} days"


def _late_lead(r: Any, now: datetime) -> str | None:
    """What a reminder sent late says instead of its rule's phrase (None when sent on time).

    The machine was off, or the channel retried: a day-before note sent on the day is "today", an hour-before
    one sent after the event began says its time has passed; a lead sent more than 5 minutes late counts
    down from the moment it is sent."""
    from .stamps import parse_ts
    from .timeforms import zone

    due = parse_ts(r["scheduled_for"])
    if now - due < LATE:
        return None
    if r["rule_id"] == "at_time" or r["rule_id"].startswith("minutes_before_"):
        left = parse_ts(r["boundary"]) - now  # a timed event's boundary is its start
        if left <= timedelta(0):
            return "sent late: that time has passed"
        minutes = -(-int(left.total_seconds()) // 60)
        return f"in {minutes} minutes" if minutes < 120 else f"in about {round(minutes / 60)} hours"
    days = (date.fromisoformat(r["occurrence_key"]) - now.astimezone(zone(r["timezone"])).date()).days
    return _days_phrase(days) if days >= 0 else "sent late: that day has passed"


def reminder_text(r: Any, now: datetime | None = None) -> str:
    """`Reminder: Dentist (appointment) on Sunday 14 March 2027 at 09:30 Europe/Berlin time, in 1 hour.`

    `now` is when it is sent: a late reminder's phrase is said from then (`_late_lead`)."""
    day = date.fromisoformat(r["occurrence_key"])
    when = f"{day.strftime('%A')} {day.day} {day.strftime('%B %Y')}"
    if r["time_kind"] == "datetime" and r["event_time"]:
        when += f" at {r['event_time'][:5]} {r['timezone']} time"
    snoozed = bool(r["source_reminder_id"])
    lead = (None if snoozed or now is None else _late_lead(r, now)) or _lead(r["rule_id"], snoozed)
    text = f"Reminder: {r['title']} ({r['kind'].replace('_', ' ')}) on {when}, {lead}."
    if r["description"]:
        text += f"\n{r['description']}"
    return text[:TEXT_LIMIT]
