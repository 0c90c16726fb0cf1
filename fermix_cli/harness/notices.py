"""The agent's turn notices for coding runs, cheap when a session has none (most turns).

`fermix ask` / `fermix agent` ask at every turn whether a coding run launched from this session finished.
One indexed read answers "no" for a session with no run still going or waiting to be told; only a yes
loads the delivery engine (`delivery.py`), which settles the runs and words their outcomes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.context import ToolContext


def _nothing_for(ctx: ToolContext, session_id: str) -> bool:
    db = ctx.state.conn
    if (
        db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'coding_runs'").fetchone()
        is None
    ):
        return True
    return (
        db.execute(
            "SELECT 1 FROM coding_runs WHERE session_id = ? AND job_id IS NULL"
            " AND (delivery_state = 'pending' OR status IN ('starting', 'running')) LIMIT 1",
            (session_id,),
        ).fetchone()
        is None
    )


class RunOutcomeNotices:
    """The agent's turn notices (`agent.assemble.TurnNotices`): this session's finished coding runs."""

    def collect(self, ctx: ToolContext, session_id: str) -> list[tuple[str, str]]:
        if _nothing_for(ctx, session_id):
            return []
        from .delivery import turn_notices

        return turn_notices(ctx, session_id)

    def delivered(self, ctx: ToolContext, ids: list[str], session_id: str) -> None:
        if not ids:
            return
        from .delivery import mark_delivered

        mark_delivered(ctx, ids, f"session:{session_id}")
