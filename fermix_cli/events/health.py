"""What `fermix doctor` says about reminders: failed deliveries, read without migrating or writing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from ..core.state import schema_missing


def reminder_counts(conn: sqlite3.Connection, limit: int = 5) -> dict[str, Any]:
    """Reminders by status (pending, failed, ...) and the latest failed ones, on an open connection."""
    counts = {
        row[0]: row[1]
        for row in conn.execute(
            "SELECT status, count(*) FROM reminder_occurrences GROUP BY status"
        ).fetchall()
    }
    rows = conn.execute(
        "SELECT r.id, r.event_id, r.scheduled_for, r.last_error_code, r.last_error, e.title"
        " FROM reminder_occurrences r JOIN temporal_events e ON e.id = r.event_id"
        " WHERE r.status = 'failed' ORDER BY r.scheduled_for DESC LIMIT ?",
        (limit,),
    ).fetchall()
    names = ("id", "event_id", "scheduled_for", "last_error_code", "last_error", "title")
    return {"counts": counts, "failed": [dict(zip(names, tuple(r), strict=True)) for r in rows]}


def failed_reminders(state_db: Path, limit: int = 5) -> tuple[int, list[dict[str, Any]]]:
    """(how many reminders failed to deliver, the latest few), read-only; (0, []) before any exist.

    For a process that has no StateDB open on the file (doctor): closing this connection would drop that
    connection's locks otherwise. A state.db that cannot be read raises its sqlite3.Error.
    """
    if not state_db.exists():
        return 0, []
    conn = sqlite3.connect(f"{state_db.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
    try:
        found = reminder_counts(conn, limit)
    except sqlite3.Error as e:
        if not schema_missing(e):
            raise
        return 0, []  # no events tables yet (an older state.db): nothing can have failed
    finally:
        conn.close()
    return int(found["counts"].get("failed", 0)), found["failed"]
