"""Runs that ended without a result (interrupted, runner lost): counted for `fermix jobs` and `doctor`;
and jobs by the state shown, for `fermix jobs status`.

Such a run is never re-run (at most once); whoever reads these needs to know it happened, which run it
was, and what to check.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.state import schema_missing
from .job import ts

LOST_CODES = ("interrupted", "runner_lost")
ADVICE = (
    "such runs are never re-run (at most once): check what each did before it stopped with "
    "`fermix jobs runs JOB_ID --status error`; the job runs again at its next slot, or now with "
    "`fermix jobs run-now JOB_ID`"
)


def job_state_counts(conn: sqlite3.Connection, now: datetime) -> dict[str, int]:
    """Jobs by the state shown (`Job.shown_state`): one past its `expires_at` counts as `expired` even
    before a tick records it, as `fermix jobs list` shows it."""
    rows = conn.execute(
        "SELECT CASE WHEN state IN ('scheduled', 'paused') AND expires_at IS NOT NULL AND expires_at <= ?"
        " THEN 'expired' ELSE state END AS shown, count(*) FROM scheduled_jobs GROUP BY shown",
        (ts(now),),
    ).fetchall()
    return {str(state): int(n) for state, n in rows}


def interrupted_runs(conn: sqlite3.Connection, limit: int = 5) -> dict[str, Any]:
    """How many kept runs ended interrupted or lost, and the latest few, on an open connection."""
    marks = ", ".join("?" for _ in LOST_CODES)
    count = conn.execute(
        f"SELECT count(*) FROM job_runs WHERE status = 'error' AND error_code IN ({marks})", LOST_CODES
    ).fetchone()[0]
    rows = conn.execute(
        "SELECT id, job_id, scheduled_for, finished_at, error_code, error FROM job_runs"
        f" WHERE status = 'error' AND error_code IN ({marks}) ORDER BY finished_at DESC, id LIMIT ?",
        (*LOST_CODES, limit),
    ).fetchall()
    names = ("run_id", "job_id", "scheduled_for", "finished_at", "error_code", "error")
    latest = [dict(zip(names, tuple(r), strict=True)) for r in rows]
    return {"count": int(count), "latest": latest, "advice": ADVICE if count else None}


def interrupted_runs_readonly(state_db: Path, limit: int = 5) -> dict[str, Any]:
    """The same, read-only, for a process with no StateDB open on the file (doctor); a state.db that
    cannot be read raises its sqlite3.Error."""
    empty: dict[str, Any] = {"count": 0, "latest": [], "advice": None}
    if not state_db.exists():
        return empty
    conn = sqlite3.connect(f"{state_db.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
    try:
        return interrupted_runs(conn, limit)
    except sqlite3.Error as e:
        if not schema_missing(e):
            raise
        return empty  # no jobs tables yet (an older state.db): nothing can have been interrupted
    finally:
        conn.close()


def describe(found: dict[str, Any]) -> str:
    """One line: how many, the latest, what to do."""
    last = found["latest"][0]
    return (
        f"{found['count']} job run(s) ended without a result; latest {last['run_id']} of {last['job_id']} "
        f"({last['error_code']}, {last['finished_at']}); {found['advice']}"
    )
