"""Delivering a finished run's outcome, at least once, always carrying the run id (for dedup).

Two routes. A run launched from an owner's turn (`fermix ask`/`fermix agent`) is reported at the start of
the next turn in the launching session: `turn_notices` gives the texts, the loop puts them before the
owner's prompt, and `mark_delivered` is called only after that turn was recorded, so a crash mid-turn
reports it again. A run launched from a scheduled job is delivered by `fermix jobs run` (the due-work
source in `duework.py`) through the owner's channel, with retries until `delivery_max_attempts` or
`delivery_max_age_hours`, after which it is dead-lettered for list_coding_runs to raise.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .store import parse_ts, settle, ts

if TYPE_CHECKING:
    import sqlite3

    from ..core.context import ToolContext

RETRY_BASE_S = 60


def outcome_text(row: sqlite3.Row) -> str:
    """The message an outcome is delivered as; a cancelled run's is plain and asks nothing of the model."""
    head = f"[coding run {row['id']}] {row['vendor']} in {row['cwd']}: {row['status']}"
    if row["reason"]:
        head += f" ({row['reason']})"
    if row["status"] == "cancelled":
        return head + ". No further action is needed."
    parts = [head]
    if row["usage"]:
        parts.append(f"usage: {row['usage']}")
    if row["result_tail"]:
        parts.append("result:\n" + row["result_tail"])
    parts.append(f'Details: get_coding_run {{"run_id": "{row["id"]}"}}')
    return "\n".join(parts)


def turn_notices(ctx: ToolContext, session_id: str) -> list[tuple[str, str]]:
    """(run id, text) of the finished runs launched from `session_id` whose outcome is not delivered yet."""
    if not _has_table(ctx):
        return []
    settle(ctx)
    rows = ctx.state.query(
        "SELECT * FROM coding_runs WHERE delivery_state = 'pending' AND session_id = ? AND job_id IS NULL"
        " ORDER BY ended_at, id",
        (session_id,),
    )
    out = [(row["id"], outcome_text(row)) for row in rows]
    from .progress import due_notices

    running = ctx.state.query(
        "SELECT * FROM coding_runs WHERE status = 'running' AND progress = 'milestones' AND session_id = ?"
        " AND job_id IS NULL",
        (session_id,),
    )
    # Progress is not an outcome: it carries no run-id entry to mark delivered (the mark is the throttle).
    return out + [(f"progress:{row['id']}", text) for row, text in due_notices(ctx, running)]


def _has_table(ctx: ToolContext) -> bool:
    return bool(ctx.state.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'coding_runs'"))


def mark_delivered(ctx: ToolContext, run_ids: list[str], to: str) -> None:
    run_ids = [i for i in run_ids if i.startswith("hr_")]
    if not run_ids:
        return
    now = ts(ctx.now())
    with ctx.state.write() as db:
        for run_id in run_ids:
            db.execute(
                "UPDATE coding_runs SET delivery_state = 'delivered', delivered_at = ?, delivered_to = ?,"
                " delivery_attempts = delivery_attempts + 1 WHERE id = ? AND delivery_state = 'pending'",
                (now, to, run_id),
            )


def _due(row: sqlite3.Row, now_s: float) -> bool:
    """Backoff between channel attempts: 1, 2, 4 ... minutes (capped at an hour) after the last one."""
    attempts = row["delivery_attempts"]
    if attempts == 0 or not row["delivered_at"]:
        return True
    wait = min(RETRY_BASE_S * 2 ** (attempts - 1), 3600)
    return parse_ts(row["delivered_at"]).timestamp() + wait <= now_s


def deliver_due(ctx: ToolContext) -> dict[str, Any]:
    """Settle runs, deliver job launches' outcomes through the owner's channel, dead-letter the hopeless."""
    from ..core.errors import ToolError
    from .cloud import poll_due
    from .gates import settings

    settled = settle(ctx) + poll_due(ctx)
    cfg = settings(ctx)
    now = ctx.now()
    oldest = now - timedelta(hours=cfg.delivery_max_age_hours)
    rows = ctx.state.query("SELECT * FROM coding_runs WHERE delivery_state = 'pending' ORDER BY ended_at, id")
    report: dict[str, Any] = {"settled": settled, "delivered": [], "failed": [], "dead_lettered": []}
    _send_progress(ctx, report)
    for row in rows:
        expired = row["ended_at"] is not None and parse_ts(row["ended_at"]) < oldest
        if expired or row["delivery_attempts"] >= cfg.delivery_max_attempts:
            _dead_letter(
                ctx, row["id"], row["delivery_error"] or "delivery gave up (attempts or age exhausted)"
            )
            report["dead_lettered"].append(row["id"])
            continue
        if row["job_id"] is None or not _due(row, now.timestamp()):
            continue  # a turn in the launching session reports it
        if not _claim(ctx, row):
            continue  # an overlapping `fermix jobs run` took this attempt
        try:
            where = _send(ctx, row)
        except ToolError as e:
            _attempt_failed(ctx, row["id"], f"{e.code}: {e.message}")
            report["failed"].append({"run_id": row["id"], "error": e.code})
            continue
        with ctx.state.write() as db:
            db.execute(
                "UPDATE coding_runs SET delivery_state = 'delivered', delivered_at = ?, delivered_to = ?,"
                " delivery_error = NULL WHERE id = ? AND delivery_state = 'pending'",
                (ts(ctx.now()), where, row["id"]),
            )
        report["delivered"].append(row["id"])
    return report


def _send_progress(ctx: ToolContext, report: dict[str, Any]) -> None:
    """Job launches' progress notices, through the owner's channel; best effort, never retried."""
    from ..core.errors import ToolError
    from .progress import due_notices

    running = ctx.state.query(
        "SELECT * FROM coding_runs WHERE status = 'running' AND progress = 'milestones' AND job_id IS NOT NULL"
    )
    for row, text in due_notices(ctx, running):
        try:
            _send(ctx, row, text)
        except ToolError as e:
            report.setdefault("progress_failed", []).append({"run_id": row["id"], "error": e.code})
        else:
            report.setdefault("progress", []).append(row["id"])


def _claim(ctx: ToolContext, row: sqlite3.Row) -> bool:
    """Count this attempt before sending, in one transaction, so two ticks never send the same attempt."""
    with ctx.state.write() as db:
        cur = db.execute(
            "UPDATE coding_runs SET delivery_attempts = delivery_attempts + 1, delivered_at = ? WHERE id = ?"
            " AND delivery_state = 'pending' AND delivery_attempts = ?",
            (ts(ctx.now()), row["id"], row["delivery_attempts"]),
        )
        return cur.rowcount == 1


def _send(ctx: ToolContext, row: sqlite3.Row, text: str | None = None) -> str:
    """To the owner's delivery target, through the sender `fermix jobs run` lends (`core/ownersend.py`)."""
    from ..core.ownersend import send_to_owner

    meta = {"run_id": row["id"], "job_id": row["job_id"], "status": row["status"]}
    return send_to_owner(ctx, text or outcome_text(row), meta)


def _attempt_failed(ctx: ToolContext, run_id: str, error: str) -> None:
    with ctx.state.write() as db:
        db.execute(
            "UPDATE coding_runs SET delivery_error = ? WHERE id = ? AND delivery_state = 'pending'",
            (error[:500], run_id),
        )


def _dead_letter(ctx: ToolContext, run_id: str, error: str) -> None:
    with ctx.state.write() as db:
        db.execute(
            "UPDATE coding_runs SET delivery_state = 'dead_letter', delivery_error = ? WHERE id = ?"
            " AND delivery_state = 'pending'",
            (error[:500], run_id),
        )
