"""event_list (reference 9.3): upcoming dates from today, windows, status, text, and opaque cursor paging.

Rows are ordered by (next occurrence date, id), the order of the `temporal_events_upcoming` index; the
cursor carries the last row's key and id (base64url), so a page costs one indexed range read.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import re
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from . import store
from .timeforms import is_iso_day

if TYPE_CHECKING:
    from ..core.context import ToolContext

STATUSES = ("active", "completed", "cancelled", "any")
MAX_WINDOW_DAYS = 2 * 366
KEY = re.compile(r"\d{4}-\d{2}-\d{2}")


def encode_cursor(key: str, event_id: str) -> str:
    return base64.urlsafe_b64encode(f"{key}|{event_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        key, event_id = raw.split("|", 1)
        if not KEY.fullmatch(key):  # a date, or a yearly 29 February in another year (2027-02-29)
            raise ValueError(key)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ToolError(
            "invalid_cursor", "cursor is not one event_list returned; pass it back verbatim.", {}
        ) from None
    return key, event_id


def _day(text: str, field: str) -> date:
    try:
        if not is_iso_day(text):  # fromisoformat also reads 2026W011 and 20261231
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise ToolError(
            "invalid_date_window",
            f"{field} must be a date spelled YYYY-MM-DD, such as 2026-09-14.",
            {"field": field},
        ) from None


def _yearly_key(year: int) -> tuple[str, list[Any]]:
    """SQL for a yearly row's date in `year` (YYYY-MM-DD), and its parameters: 29 February in a year
    without one falls on 28 February or 1 March by the row's leap_day_policy."""
    if calendar.isleap(year):
        return "printf('%04d-%02d-%02d', ?, month, day)", [year]
    return (
        "CASE WHEN month = 2 AND day = 29 THEN (CASE WHEN leap_day_policy = 'feb_28' THEN ? ELSE ? END)"
        " ELSE printf('%04d-%02d-%02d', ?, month, day) END",
        [f"{year:04d}-02-28", f"{year:04d}-03-01", year],
    )


def list_events(ctx: ToolContext, p: Any) -> dict[str, Any]:
    from .actions import configured_zone

    zone_name = configured_zone(ctx) or "UTC"
    today = store.local_today(ctx.now(), zone_name)
    start = _day(getattr(p, "from"), "from") if getattr(p, "from") else None
    end = _day(p.to, "to") if p.to else None
    if start is None and p.status is None:
        start = today  # "what is coming up"; naming a status or a window drops the floor
    if start and end:
        if end < start:
            if getattr(p, "from") is None:  # the floor is today's, not the caller's
                raise ToolError(
                    "invalid_date_window",
                    f"to {end.isoformat()} is before today ({start.isoformat()}), where a listing without from "
                    "or status starts; for past dates pass from, or a status such as any.",
                    {"today": start.isoformat()},
                )
            raise ToolError("invalid_date_window", "to is before from.", {})
        if end - start > timedelta(days=MAX_WINDOW_DAYS):
            raise ToolError("date_window_too_wide", "a window spans at most two years.", {})
    status = p.status or "active"
    where, args = ["owner_id = ?"], [store.OWNER]
    if status != "any":
        where.append("status = ?")
        args.append(status)
    if p.kind:
        where.append("kind = ?")
        args.append(p.kind)
    if p.text:
        pattern = "%" + p.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(title LIKE ? ESCAPE '\\' OR description LIKE ? ESCAPE '\\')")
        args += [pattern, pattern]
    # The listing key is the next occurrence; from a floor past it (an explicit `from`, or today before a
    # tick has rolled a yearly date whose day just passed), a yearly date is listed at its first occurrence
    # on or after the floor, 29 February on the day its leap-day policy names in other years.
    by_occurrence = start is not None
    key_sql, key_args = "next_date", []
    if by_occurrence:
        assert start is not None
        floor = start.isoformat()
        this_year, next_year = _yearly_key(start.year), _yearly_key(start.year + 1)
        key_sql = (
            f"CASE WHEN recurrence = 'yearly' AND next_date < ? THEN CASE WHEN {this_year[0]} >= ? THEN"
            f" {this_year[0]} ELSE {next_year[0]} END ELSE next_date END"
        )
        key_args = [floor, *this_year[1], floor, *this_year[1], *next_year[1]]
    bounds: list[str] = []
    if start:
        bounds.append("list_key >= ?")
        args_after = [start.isoformat()]
    else:
        args_after = []
    if end:
        bounds.append("list_key <= ?")
        args_after.append(end.isoformat())
    if p.cursor:
        key, last = decode_cursor(p.cursor)
        bounds.append("(list_key > ? OR (list_key = ? AND id > ?))")
        args_after += [key, key, last]
    limit = p.limit or 25
    db = ctx.state.conn
    if by_occurrence:
        sql = (
            f"SELECT * FROM (SELECT *, {key_sql} AS list_key FROM temporal_events WHERE {' AND '.join(where)})"
            f" {'WHERE ' + ' AND '.join(bounds) if bounds else ''} ORDER BY list_key, id LIMIT ?"
        )
        params = [*key_args, *args, *args_after, limit + 1]
    else:  # the index's order: (status, next_date, id)
        sql = (
            "SELECT *, next_date AS list_key FROM temporal_events WHERE "
            + " AND ".join(where + [b.replace("list_key", "next_date") for b in bounds])
            + " ORDER BY next_date, id LIMIT ?"
        )
        params = [*args, *args_after, limit + 1]
    rows = db.execute(sql, params).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    by_event: dict[str, list[Any]] = {r["id"]: [] for r in rows}
    if rows:
        marks = ",".join("?" * len(rows))
        for r in db.execute(
            f"SELECT * FROM reminder_occurrences WHERE event_id IN ({marks})"
            " AND (status IN ('pending', 'delivering', 'failed') OR sent_at IS NOT NULL)"
            " ORDER BY scheduled_for, rule_id",
            list(by_event),
        ):
            by_event[r["event_id"]].append(r)
    events = [store.event_dict(r, by_event[r["id"]]) for r in rows]
    for event, r in zip(events, rows, strict=True):
        if r["list_key"] != r["next_date"]:
            event["occurrence_in_window"] = r["list_key"]
    failing = [
        {"event_id": e["event_id"], "title": e["title"], **rem}
        for e in events
        for rem in e["reminders"]
        if rem["status"] == "failed"
    ]
    out: dict[str, Any] = {
        "events": events,
        "count": len(events),
        "today": today.isoformat(),
        "timezone": zone_name,
    }
    if failing:
        out["failed_reminders"] = failing
    if more:
        out["next_cursor"] = encode_cursor(rows[-1]["list_key"], rows[-1]["id"])
    return out
