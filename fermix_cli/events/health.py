"""What `fermix doctor` says about reminders: failed deliveries, read without migrating or writing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def failed_reminders(state_db: Path, limit: int = 5) -> tuple[int, list[dict[str, Any]]]:
    """(how many reminders failed to deliver, the latest few), read-only; (0, []) before any exist.

    For a process that has no StateDB open on the file (doctor): closing this connection would drop that
    connection's locks otherwise.
    """
    if not state_db.exists():
        return 0, []
    conn = sqlite3.connect(f"{state_db.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
    conn.row_factory = sqlite3.Row
    try:
        count = conn.execute("SELECT count(*) FROM reminder_occurrences WHERE status = 'failed'").fetchone()[
            0
        ]
        rows = conn.execute(
            "SELECT r.id, r.event_id, r.scheduled_for, r.last_error_code, r.last_error, e.title"
            " FROM reminder_occurrences r JOIN temporal_events e ON e.id = r.event_id"
            " WHERE r.status = 'failed' ORDER BY r.scheduled_for DESC LIMIT ?",
            (limit,),
        ).fetchall()
    except sqlite3.Error:  # no events tables yet (an older state.db): nothing can have failed
        return 0, []
    finally:
        conn.close()
    return int(count), [dict(r) for r in rows]
