"""What event_store, event_update and event_remove do to state.db (reference 9.2 and 9.3)."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from . import plans, store
from .timeforms import MAX_YEAR, MIN_YEAR, When, offset_at, parse_when, resolve_zone_name, stated_as, zone

if TYPE_CHECKING:
    from ..core.context import ToolContext

MAX_TITLE = 240
MAX_DESCRIPTION = 2000
MAX_DIRECTION = 240


def configured_zone(ctx: ToolContext) -> str | None:
    return ctx.config.fermix_core.personalization.timezone  # type: ignore[no-any-return]


# Characters a terminal or a chat would act on (escape sequences, carriage returns, bidi overrides): a stored
# title is printed by `fermix events list` and sent in every reminder. A description may have lines and tabs.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _text(value: str | None, field: str, limit: int, *, required: bool = False) -> str | None:
    if value is None:
        return None
    clean = value.strip()
    if required and not clean:
        raise ToolError("invalid_input", f"{field} must not be empty.", {"field": field})
    if _CONTROL.search(clean) or (required and "\n" in clean):
        lines = "one line" if required else "text (line breaks and tabs allowed)"
        raise ToolError(
            "invalid_input",
            f"{field} must be {lines} without control or direction-override characters; write it again as "
            "plain text.",
            {"field": field},
        )
    if len(clean.encode("utf-8")) > limit:
        raise ToolError("invalid_input", f"{field} is over {limit} bytes.", {"field": field, "limit": limit})
    return clean or None


def _resolve(
    ctx: ToolContext,
    when: Any,
    zone_name: str,
    leap: str | None,
    kind: str,
    reminders: Any,
    no_reminders: bool,
) -> tuple[When, list[dict[str, Any]], plans.Occurrence]:
    """The time form, the plan and the next occurrence, with every rule of the seed checked."""
    now = ctx.now()
    today = store.local_today(now, zone_name)
    try:
        w, _instant = parse_when(when, zone(zone_name), today, leap)
        plan = plans.build_plan(kind, w.time_kind, reminders, no_reminders)
        occ = store.next_occurrence(w, zone_name, leap if w.recurrence == "yearly" else None, today)
        plans.check_plan_times(plan, occ, zone(zone_name))
    except OverflowError:  # parse_date bounds the years; this is the backstop for the arithmetic on them
        raise ToolError(
            "invalid_when",
            f"that date is too far from today to compute its reminders; use a year from {MIN_YEAR} to {MAX_YEAR}.",
            {"min_year": MIN_YEAR, "max_year": MAX_YEAR},
        ) from None
    return w, plan, occ


def _insert(db: sqlite3.Connection, values: dict[str, Any]) -> None:
    cols = ", ".join(values)
    db.execute(
        f"INSERT INTO temporal_events ({cols}) VALUES ({', '.join('?' * len(values))})", list(values.values())
    )


def _when_columns(w: When, occ: plans.Occurrence, leap: str | None) -> dict[str, Any]:
    return {
        "recurrence": w.recurrence,
        "time_kind": w.time_kind,
        "event_date": w.date,
        "event_time": w.time,
        "fold": w.fold,
        "month": w.month,
        "day": w.day,
        "leap_day_policy": leap if w.recurrence == "yearly" else None,
        "next_date": occ.day.isoformat(),
        "next_at": store.ts(occ.start),
    }


def _future(db: sqlite3.Connection, event_id: str, revision: int) -> list[sqlite3.Row]:
    return db.execute(
        "SELECT * FROM reminder_occurrences WHERE event_id = ? AND revision = ? AND status = 'pending'"
        " ORDER BY scheduled_for, rule_id",
        (event_id, revision),
    ).fetchall()


def store_event(ctx: ToolContext, p: Any) -> dict[str, Any]:
    title = _text(p.title, "title", MAX_TITLE, required=True)
    description = _text(p.description, "description", MAX_DESCRIPTION)
    zone_name = resolve_zone_name(p.timezone, configured_zone(ctx))
    w, plan, occ = _resolve(
        ctx, p.when, zone_name, p.leap_day_policy, p.kind, p.reminders, bool(p.no_reminders)
    )
    from .targets import resolve_default_target

    target, source = resolve_default_target(ctx.config, ctx.paths)
    assert title is not None
    key = store.dedupe_key(p.kind, title, w)
    now = ctx.now()
    with ctx.state.write() as db:
        existing = db.execute(
            "SELECT * FROM temporal_events WHERE owner_id = ? AND dedupe_key = ? AND status = 'active'",
            (store.OWNER, key),
        ).fetchone()
        if existing is not None:
            if store.when_of(existing) == w and existing["timezone"] == zone_name:
                return {
                    "status": "existing",
                    "event": store.event_dict(existing, _future(db, existing["id"], existing["revision"])),
                    "message": f"Already stored: {existing['title']} on {existing['next_date']}; nothing was added.",
                }
            stored = store.when_of(existing).as_dict()
            raise ToolError(
                "identity_conflict",
                f"{existing['title']} ({existing['kind']}) is already stored for "
                f"{stated_as(store.when_of(existing), date.fromisoformat(existing['next_date']), existing['timezone'])}; "
                f"to move it use event_update with the owner's words, or store it under another title.",
                {"event_id": existing["id"], "stored_when": stored, "timezone": existing["timezone"]},
            )
        event_id = store.new_id("ev")
        stamp = store.ts(now)
        _insert(
            db,
            {
                "id": event_id,
                "owner_id": store.OWNER,
                "title": title,
                "description": description,
                "kind": p.kind,
                **_when_columns(w, occ, p.leap_day_policy),
                "timezone": zone_name,
                "plan": json.dumps(plan),
                "no_reminders": int(bool(p.no_reminders)),
                "followup": int(bool(p.followup)),
                "delivery_target": json.dumps(target),
                "delivery_source": source,
                "status": "active",
                "dedupe_key": key,
                "revision": 1,
                "created_at": stamp,
                "updated_at": stamp,
            },
        )
        row = store.get_event(db, event_id)
        store.materialise(db, row, now, store.local_today(now, zone_name))
        row = store.get_event(db, event_id)
        planned = _future(db, event_id, 1)
        similar = db.execute(
            "SELECT id, title, next_date FROM temporal_events WHERE owner_id = ? AND kind = ? AND status = 'active'"
            " AND id != ? ORDER BY next_date, id LIMIT 5",
            (store.OWNER, p.kind, event_id),
        ).fetchall()
    event = store.event_dict(row)
    message = f"Stored {title}: {event['stated_as']}."
    if plan and not planned:
        message += " no future reminder remains."
    elif planned:
        message += (
            f" {len(planned)} reminder(s) planned, delivered to {target['platform']}:{target['address']}."
        )
    if p.followup:
        message += " After each reminder, a short follow-up check-in may offer help."
    out = {
        "status": "stored",
        "event": event,
        "stated_as": event["stated_as"],
        "planned_reminders": [store.reminder_dict(r, zone_name) for r in planned],
        "similar_events": [
            {"event_id": s["id"], "title": s["title"], "next_occurrence": s["next_date"]} for s in similar
        ],
        "delivery": {"target": target, "source": source},
        "message": message,
    }
    if plan and not planned:
        out["note"] = "no future reminder remains"
    return out


def check_direction(direction: str | None, existing: sqlite3.Row) -> str:
    if direction is None or not direction.strip():
        raise ToolError(
            "overwrite_unconfirmed",
            f"{existing['title']} is stored for {existing['next_date']}; changing its date needs owner_direction, "
            "the owner's own words directing the change. If they only restated a date, ask which event they mean.",
            {"event_id": existing["id"], "stored_date": existing["next_date"]},
        )
    size = len(direction.encode("utf-8"))
    if size > MAX_DIRECTION:
        raise ToolError(
            "owner_direction_too_long",
            f"owner_direction is {size} bytes; quote just the directing clause, at most {MAX_DIRECTION} bytes "
            "(it is refused, never trimmed).",
            {"bytes": size, "limit": MAX_DIRECTION},
        )
    return direction.strip()


def update_event(ctx: ToolContext, p: Any) -> dict[str, Any]:
    now = ctx.now()
    with ctx.state.write() as db:
        row = store.get_event(db, p.event_id)
        if row["status"] != "active":
            raise ToolError(
                "not_active",
                f"{row['title']} is {row['status']}; only active events change.",
                {"status": row["status"]},
            )
        direction = check_direction(p.owner_direction, row) if p.when is not None else None
        store.refuse_if_sending(db, row["id"])
        changes: dict[str, Any] = {}
        previous: dict[str, Any] = {}
        title = _text(p.title, "title", MAX_TITLE, required=True) if p.title is not None else row["title"]
        kind = p.kind or row["kind"]
        zone_name = resolve_zone_name(p.timezone, None) if p.timezone else row["timezone"]
        leap = p.leap_day_policy or row["leap_day_policy"]
        when = p.when if p.when is not None else _stored_form(row, zone_name)
        if p.reminders is not None:
            reminders, no_rem = p.reminders, bool(p.no_reminders)
        elif p.no_reminders is not None and bool(p.no_reminders) != bool(row["no_reminders"]):
            reminders, no_rem = None, bool(p.no_reminders)  # off, or back on with the kind's defaults
        else:  # unchanged (`no_reminders: false` on a date that has reminders keeps its plan)
            no_rem = bool(row["no_reminders"])
            reminders = None if no_rem else kept_plan(row)
        w, plan, occ = _resolve(ctx, when, zone_name, leap, kind, reminders, no_rem)
        for name, new in (("title", title), ("kind", kind), ("timezone", zone_name)):
            if new != row[name]:
                previous[name], changes[name] = row[name], new
        if p.description is not None:
            previous["description"], changes["description"] = (
                row["description"],
                _text(p.description, "description", MAX_DESCRIPTION),
            )
        if w != store.when_of(row) or occ.day.isoformat() != row["next_date"]:
            previous["when"] = store.when_of(row).as_dict()
        if (leap if w.recurrence == "yearly" else None) != row["leap_day_policy"]:
            previous["leap_day_policy"] = row["leap_day_policy"]  # 29 February falls on another day
        changes.update(_when_columns(w, occ, leap))
        if json.dumps(plan) != row["plan"]:
            previous["plan"] = json.loads(row["plan"])
        changes.update(plan=json.dumps(plan), no_reminders=int(no_rem))
        if p.followup is not None and bool(p.followup) != bool(row["followup"]):
            previous["followup"], changes["followup"] = bool(row["followup"]), int(p.followup)
        if p.rebind_delivery_to_default:
            from .targets import resolve_default_target

            target, source = resolve_default_target(ctx.config, ctx.paths)
            if json.dumps(target) != row["delivery_target"]:
                previous["delivery"] = json.loads(row["delivery_target"])
            changes.update(delivery_target=json.dumps(target), delivery_source=source)
        changes["dedupe_key"] = store.dedupe_key(kind, title or row["title"], w)
        retime = any(
            k in previous for k in ("when", "leap_day_policy", "plan", "timezone", "delivery", "kind")
        )
        kept: list[sqlite3.Row] = []
        dropped: list[dict[str, Any]] = []
        if retime:
            changes["revision"] = row["revision"] + 1
            kept, dropped = _sort_snoozes(
                db, row["id"], plan, moved=any(k in previous for k in ("when", "leap_day_policy", "timezone"))
            )
            kept += _due_and_still_planned(db, row["id"], w, plan, zone_name, leap, now)
            db.execute(
                "UPDATE reminder_occurrences SET status = 'cancelled', next_attempt_at = NULL WHERE event_id = ?"
                f" AND status = 'pending' AND id NOT IN ({', '.join('?' * len(kept))})",
                (row["id"], *(s["id"] for s in kept)),
            )
        changes["updated_at"] = store.ts(now)
        try:
            db.execute(
                f"UPDATE temporal_events SET {', '.join(f'{k} = ?' for k in changes)} WHERE id = ?",
                [*changes.values(), row["id"]],
            )
        except sqlite3.IntegrityError:
            other = db.execute(
                "SELECT * FROM temporal_events WHERE owner_id = ? AND dedupe_key = ? AND status = 'active'"
                " AND id != ?",
                (store.OWNER, changes["dedupe_key"], row["id"]),
            ).fetchone()
            if other is None:
                raise
            raise ToolError(
                "identity_conflict",
                f"{other['title']} ({other['kind']}) is already stored for "
                f"{stated_as(store.when_of(other), date.fromisoformat(other['next_date']), other['timezone'])} "
                f"as {other['id']}; change that one, cancel it first, or pick another title.",
                {
                    "event_id": other["id"],
                    "stored_when": store.when_of(other).as_dict(),
                    "timezone": other["timezone"],
                },
            ) from None
        row = store.get_event(db, row["id"])
        if retime:
            # A kept snooze stands in for its rule's reminder of that occurrence, and a kept due reminder is
            # that reminder: the new revision does not plan it a second time.
            db.executemany(
                "UPDATE reminder_occurrences SET revision = ? WHERE id = ?",
                [(row["revision"], s["id"]) for s in kept],
            )
            skip = frozenset((s["occurrence_key"], s["rule_id"]) for s in kept)
            if not any(k in previous for k in ("when", "leap_day_policy", "timezone")):
                skip |= _already_delivered(db, row["id"], plan)
            store.materialise(db, row, now, store.local_today(now, zone_name), skip=skip)
            row = store.get_event(db, row["id"])
        planned = _future(db, row["id"], row["revision"])
    out = {
        "status": "updated",
        "event": store.event_dict(row),
        "previous": previous,
        "planned_reminders": [store.reminder_dict(r, row["timezone"]) for r in planned],
    }
    if dropped:
        out["dropped_snoozes"] = dropped
    if direction:
        out["owner_direction"] = direction
    return out


def _sort_snoozes(
    db: sqlite3.Connection, event_id: str, plan: list[dict[str, Any]], *, moved: bool
) -> tuple[list[sqlite3.Row], list[dict[str, Any]]]:
    """(kept, dropped) active snoozes of an event whose plan is regenerated.

    A snooze is the owner's own deferral of one reminder, not part of the plan (reference 9.4): it
    survives a new plan that keeps its rule. It is dropped, and reported, when its rule is gone or the
    event moved (its time was chosen against the old date).
    """
    rules = {r["id"] for r in plan}
    kept: list[sqlite3.Row] = []
    dropped: list[dict[str, Any]] = []
    for s in db.execute(
        "SELECT * FROM reminder_occurrences WHERE event_id = ? AND status = 'pending'"
        " AND source_reminder_id IS NOT NULL ORDER BY scheduled_for, id",
        (event_id,),
    ):
        if not moved and s["rule_id"] in rules:
            kept.append(s)
            continue
        dropped.append(
            {
                "reminder_id": s["id"],
                "source_reminder_id": s["source_reminder_id"],
                "rule_id": s["rule_id"],
                "scheduled_for": s["scheduled_for"],
                "reason": "event_moved" if moved else "rule_removed",
            }
        )
    return kept, dropped


def _due_and_still_planned(
    db: sqlite3.Connection,
    event_id: str,
    w: When,
    plan: list[dict[str, Any]],
    zone_name: str,
    leap: str | None,
    now: datetime,
) -> list[sqlite3.Row]:
    """The pending reminders already due (not yet sent: the tick has not come, or they are retrying) that the
    new plan names at the same instant for the same occurrence. They stay as they are: a new plan only plans
    future reminders, so cancelling them would lose a reminder the owner is still owed."""
    due = db.execute(
        "SELECT * FROM reminder_occurrences WHERE event_id = ? AND status = 'pending'"
        " AND source_reminder_id IS NULL AND scheduled_for <= ?",
        (event_id, store.ts(now)),
    ).fetchall()
    if not due:
        return []
    tz = zone(zone_name)
    occs = plans.occurrences(
        w, tz, store.local_today(now, zone_name), leap if w.recurrence == "yearly" else None
    )
    named = {
        (p.occurrence_key, p.rule_id, store.ts(p.due), store.ts(p.boundary))
        for p in plans.planned(plan, occs, tz, datetime.min.replace(tzinfo=UTC))
    }
    return [r for r in due if (r["occurrence_key"], r["rule_id"], r["scheduled_for"], r["boundary"]) in named]


def _lead(rule_id: str) -> tuple[str, int]:
    """What a rule id reminds ahead by, whatever it is called (`week_before` and `days_before_7` alike)."""
    named = {
        "week_before": ("days_before", 7),
        "day_before": ("days_before", 1),
        "day_of": ("days_before", 0),
    }
    if rule_id in named:
        return named[rule_id]
    kind, _, amount = rule_id.rpartition("_")
    return (kind, int(amount)) if amount.isdigit() else (rule_id, 0)


def _already_delivered(
    db: sqlite3.Connection, event_id: str, plan: list[dict[str, Any]]
) -> frozenset[tuple[str, str]]:
    """The (occurrence, rule) pairs of a new plan for a date that did not move whose reminder was already
    delivered: a new time for the week-before note does not send it a second time for the same day."""
    by_lead = {_lead(r["id"]): r["id"] for r in plan}
    pairs = set()
    for r in db.execute(
        "SELECT occurrence_key, rule_id FROM reminder_occurrences WHERE event_id = ? AND status = 'delivered'"
        " AND source_reminder_id IS NULL",
        (event_id,),
    ):
        rule_id = by_lead.get(_lead(r["rule_id"]))
        if rule_id is not None:
            pairs.add((r["occurrence_key"], rule_id))
    return frozenset(pairs)


def _stored_form(row: sqlite3.Row, zone_name: str) -> dict[str, Any]:
    """The stored time as a `when` form read in `zone_name` (the event's zone, or the new one).

    A timed event keeps its wall time and which of two equal local times the owner picked (its fold):
    the utc_offset is that fold's offset in `zone_name`, so neither an unchanged repeated hour nor a
    new zone (where the old offset may not exist) asks again what the owner already answered.
    """
    form = store.when_of(row).as_dict()
    if row["time_kind"] == "datetime":
        form["utc_offset"] = offset_at(
            date.fromisoformat(row["event_date"]),
            time.fromisoformat(row["event_time"]),
            zone(zone_name),
            row["fold"],
        )
    return form


def kept_plan(row: sqlite3.Row) -> list[dict[str, Any]] | None:
    """The stored plan as explicit rules, or None when it is the kind's defaults (recomputed on change)."""
    plan = json.loads(row["plan"])
    if plan == plans.default_plan(row["kind"], row["time_kind"]):
        return None
    return [{k: v for k, v in r.items() if k != "id"} for r in plan]


def remove_event(ctx: ToolContext, event_id: str | None) -> dict[str, Any]:
    now = ctx.now()
    with ctx.state.write() as db:
        via = None
        if event_id is None:
            recent = store.recent_reminder(db, ctx)
            event_id, via = recent["event_id"], recent["id"]
        row = store.get_event(db, event_id)
        if row["status"] != "active":
            raise ToolError(
                "not_active", f"{row['title']} is already {row['status']}.", {"status": row["status"]}
            )
        store.refuse_if_sending(db, event_id)
        stamp = store.ts(now)
        cancelled = db.execute(
            "UPDATE reminder_occurrences SET status = 'cancelled', next_attempt_at = NULL WHERE event_id = ?"
            " AND status = 'pending'",
            (event_id,),
        ).rowcount
        db.execute(
            "UPDATE temporal_events SET status = 'cancelled', cancelled_at = ?, updated_at = ? WHERE id = ?",
            (stamp, stamp, event_id),
        )
        row = store.get_event(db, event_id)
        history = store.reminders_of(db, event_id)
    event = store.event_dict(row, history)
    scope = " and every future occurrence with it" if row["recurrence"] == "yearly" else ""
    out = {
        "status": "cancelled",
        "event": event,
        "cancelled_reminders": cancelled,
        "message": f"Cancelled {row['title']} ({event['stated_as']}){scope}; "
        f"{cancelled} unsent reminder(s) cancelled, delivered history kept.",
    }
    if via:
        out["resolved_from_reminder"] = via
    return out
