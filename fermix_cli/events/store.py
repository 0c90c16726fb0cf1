"""Events in state.db: rows to dicts, materialising reminders, and the shared look-ups of the tools.

Every write runs in one `BEGIN IMMEDIATE` transaction (`ctx.state.write()`); reminders are materialised
in the same transaction as the event change that implies them, so a reader never sees half a plan.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from . import plans
from .stamps import parse_ts, ts
from .timeforms import When, next_yearly, stated_as, zone

if TYPE_CHECKING:
    from ..core.context import ToolContext

OWNER = "owner"
RECENT_WINDOW = timedelta(hours=24)
ACTIVE_REMINDER = ("pending", "delivering")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def when_of(row: sqlite3.Row) -> When:
    return When(
        row["recurrence"],
        row["time_kind"],
        row["event_date"],
        row["event_time"],
        row["fold"],
        row["month"],
        row["day"],
    )


def local_today(now: datetime, zone_name: str) -> date:
    return now.astimezone(zone(zone_name)).date()


def dedupe_key(kind: str, title: str, w: When) -> str:
    """Kind + title, plus the resolved date/time for a one-time event (reference 9.2 "Dedupe")."""
    key = f"{kind}|{' '.join(title.split()).casefold()}"
    if w.recurrence == "none":
        key += f"|{w.date}" + (f"T{w.time}" if w.time else "")
    return key


def next_occurrence(w: When, zone_name: str, leap_policy: str | None, today: date) -> plans.Occurrence:
    tz = zone(zone_name)
    if w.recurrence == "yearly":
        assert w.month is not None and w.day is not None
        return plans.occurrence(w, next_yearly(w.month, w.day, leap_policy, today), tz)
    assert w.date is not None
    return plans.occurrence(w, date.fromisoformat(w.date), tz)


def materialise(
    db: sqlite3.Connection,
    event: sqlite3.Row | dict[str, Any],
    now: datetime,
    today: date,
    skip: frozenset[tuple[str, str]] = frozenset(),
) -> list[plans.Planned]:
    """Insert the future reminders of the event's current revision (next two occurrences if yearly),
    except the (occurrence, rule) pairs in `skip` (an active snooze stands in for them)."""
    w, tz = when_of(event), zone(event["timezone"])  # type: ignore[arg-type]
    plan = json.loads(event["plan"])
    occs = plans.occurrences(w, tz, today, event["leap_day_policy"])
    rows = [p for p in plans.planned(plan, occs, tz, now) if (p.occurrence_key, p.rule_id) not in skip]
    stamp = ts(now)
    db.executemany(
        "INSERT OR IGNORE INTO reminder_occurrences (id, event_id, revision, occurrence_key, rule_id,"
        " scheduled_for, valid_until, boundary, status, next_attempt_at, created_at)"
        " VALUES (?,?,?,?,?,?,?,?,'pending',?,?)",
        [
            (
                new_id("rm"),
                event["id"],
                event["revision"],
                p.occurrence_key,
                p.rule_id,
                ts(p.due),
                ts(p.valid_until),
                ts(p.boundary),
                ts(p.due),
                stamp,
            )
            for p in rows
        ],
    )
    through = occs[-1].day if w.recurrence == "yearly" else occs[0].day
    db.execute(
        "UPDATE temporal_events SET materialized_through = ? WHERE id = ?", (through.isoformat(), event["id"])
    )
    return rows


def reminder_dict(r: sqlite3.Row, zone_name: str) -> dict[str, Any]:
    tz = zone(zone_name)
    local = parse_ts(r["scheduled_for"]).astimezone(tz)
    out: dict[str, Any] = {
        "reminder_id": r["id"],
        "rule_id": r["rule_id"],
        "occurrence": r["occurrence_key"],
        "scheduled_for": r["scheduled_for"],
        "local_time": local.isoformat(timespec="minutes"),
        "status": r["status"],
        "attempt_count": r["attempt_count"],
    }
    for key in ("sent_at", "last_error", "last_error_code", "source_reminder_id", "followup_status"):
        if r[key] is not None:
            out[key] = r[key]
    return out


def event_dict(row: sqlite3.Row, reminders: list[sqlite3.Row] | None = None) -> dict[str, Any]:
    w = when_of(row)
    out: dict[str, Any] = {
        "event_id": row["id"],
        "title": row["title"],
        "kind": row["kind"],
        "when": w.as_dict(),
        "recurrence": row["recurrence"],
        "timezone": row["timezone"],
        "next_occurrence": row["next_date"],
        "stated_as": stated_as(w, date.fromisoformat(row["next_date"]), row["timezone"]),
        "status": row["status"],
        "followup": bool(row["followup"]),
        "no_reminders": bool(row["no_reminders"]),
        "plan": json.loads(row["plan"]),
        "delivery": {"target": json.loads(row["delivery_target"]), "source": row["delivery_source"]},
        "revision": row["revision"],
        "created_at": row["created_at"],
    }
    if row["description"]:
        out["description"] = row["description"]
    if row["leap_day_policy"]:
        out["leap_day_policy"] = row["leap_day_policy"]
    if row["cancelled_at"]:
        out["cancelled_at"] = row["cancelled_at"]
    if reminders is not None:
        out["reminders"] = [reminder_dict(r, row["timezone"]) for r in reminders]
    return out


def get_event(db: sqlite3.Connection, event_id: str) -> sqlite3.Row:
    row = db.execute("SELECT * FROM temporal_events WHERE id = ?", (event_id,)).fetchone()
    if row is None:
        raise ToolError(
            "not_found", f"no event {event_id}; find ids with event_list.", {"event_id": event_id}
        )
    return row


def reminders_of(db: sqlite3.Connection, event_id: str) -> list[sqlite3.Row]:
    return db.execute(
        "SELECT * FROM reminder_occurrences WHERE event_id = ? ORDER BY scheduled_for, rule_id", (event_id,)
    ).fetchall()


def refuse_if_sending(db: sqlite3.Connection, event_id: str) -> None:
    busy = db.execute(
        "SELECT id FROM reminder_occurrences WHERE event_id = ? AND status = 'delivering' LIMIT 1",
        (event_id,),
    ).fetchone()
    if busy is not None:
        raise ToolError(
            "delivery_in_progress",
            f"reminder {busy['id']} of this event is being sent right now and a send cannot be recalled; "
            "try again in a minute.",
            {"reminder_id": busy["id"]},
        )


def conversation_required(ctx: ToolContext) -> str:
    from .gate import conversation_of

    conversation = conversation_of(ctx)
    if conversation is None:
        raise ToolError(
            "no_conversation_target",
            "this turn has no conversation to look for a recent reminder in; name the event or reminder id.",
            {},
        )
    return conversation


def recent_reminder(db: sqlite3.Connection, ctx: ToolContext) -> sqlite3.Row:
    """The reminder most recently delivered into this exact conversation within 24 h ("cancel that")."""
    conversation = conversation_required(ctx)
    now = ctx.now()
    row = db.execute(
        "SELECT * FROM reminder_occurrences WHERE conversation_id = ? AND status = 'delivered'"
        " AND sent_at >= ? AND sent_at <= ? ORDER BY sent_at DESC, scheduled_for DESC, id DESC LIMIT 1",
        (conversation, ts(now - RECENT_WINDOW), ts(now)),
    ).fetchone()
    if row is None:
        raise ToolError(
            "no_recent_reminder",
            "no reminder was delivered into this conversation in the last 24 hours; ask the owner which "
            "date they mean (event_list finds it).",
            {"conversation": conversation},
        )
    return row
