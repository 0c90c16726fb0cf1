"""The reminders' due-work source: `fermix jobs run` asks it on every tick whether a reminder is due.

Cheap to import and, when nothing is due, three indexed reads (a due pending reminder, a send in
flight, an event whose day has passed); the engine (`delivery`) is imported only when one answers yes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from . import stamps

if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime

    from ..core.context import ToolContext


class IdleReport:
    quiet = True

    def as_dict(self) -> dict[str, Any]:
        return {"status": "idle"}


def nothing_due(db: sqlite3.Connection, now: datetime) -> bool:
    """No pending reminder due, no send in flight, no active event whose day is surely past in every zone."""
    stamp = stamps.ts(now)
    passed = (now - timedelta(days=1)).date().isoformat()  # UTC-12 is still at most one day behind
    return (
        db.execute(
            "SELECT 1 FROM reminder_occurrences WHERE status = 'pending' AND next_attempt_at <= ? LIMIT 1",
            (stamp,),
        ).fetchone()
        is None
        and db.execute("SELECT 1 FROM reminder_occurrences WHERE status = 'delivering' LIMIT 1").fetchone()
        is None
        and db.execute(
            "SELECT 1 FROM temporal_events WHERE status = 'active' AND next_date < ? LIMIT 1", (passed,)
        ).fetchone()
        is None
    )


class Reminders:
    """Event reminders: claimed in state.db before each send, so overlapping ticks never send one twice."""

    name = "reminders"

    def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, Any]:
        from datetime import UTC

        now = ctx.now().astimezone(UTC)
        if nothing_due(ctx.state.conn, now):
            return 0, IdleReport()
        from .delivery import deliver_due

        return deliver_due(ctx)


DUE_WORK = (Reminders(),)
