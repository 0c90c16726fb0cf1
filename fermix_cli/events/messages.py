"""The text of a reminder: deterministic (no model), with the absolute date and time in the event's zone."""

from __future__ import annotations

from datetime import date
from typing import Any

TEXT_LIMIT = 1000  # well under the smallest channel limit (SMS-style channels aside)


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


def reminder_text(r: Any) -> str:
    """`Reminder: Dentist (appointment) on Sunday 14 March 2027 at 09:30 Europe/Berlin time, in 1 hour.`"""
    day = date.fromisoformat(r["occurrence_key"])
    when = f"{day.strftime('%A')} {day.day} {day.strftime('%B %Y')}"
    if r["time_kind"] == "datetime" and r["event_time"]:
        when += f" at {r['event_time'][:5]} {r['timezone']} time"
    text = f"Reminder: {r['title']} ({r['kind'].replace('_', ' ')}) on {when}, {_lead(r['rule_id'], bool(r['source_reminder_id']))}."
    if r["description"]:
        text += f"\n{r['description']}"
    return text[:TEXT_LIMIT]
