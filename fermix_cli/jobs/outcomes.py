"""Writing a claimed run's life into its row: started, prompt snapshot, outcome, delivery; retention.

Every write names the claimant (`claimed_by = ?`) and the status it expects, so a run that another
process already declared lost or interrupted is never written over. Outcomes are committed with
synchronous=FULL, like claims.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

from .attachments import close_unfinished
from .claims import lease_until, release_job
from .job import Job, session_id_for, ts

Writer = Callable[..., AbstractContextManager[Any]]

# A finished run's delivery_status while its send is still to come.
PENDING = "pending"


def mark_running(write: Writer, run_id: str, claimant: str, job: Job, now: datetime) -> str | None:
    """queued → running; returns the run's session id, or None if the run is no longer ours."""
    session = session_id_for(job.id, now, run_id)
    with write() as db:
        cur = db.execute(
            "UPDATE job_runs SET status = 'running', started_at = ?, session_id = ?, lease_until = ?"
            " WHERE id = ? AND status = 'queued' AND claimed_by = ?",
            (ts(now), session, lease_until(now, job.timeout_seconds), run_id, claimant),
        )
    return session if cur.rowcount else None


def record_prompt(write: Writer, run_id: str, claimant: str, prompt: str, config_snapshot: str) -> None:
    with write() as db:
        db.execute(
            "UPDATE job_runs SET prompt_snapshot = ?, config_snapshot = ? WHERE id = ? AND claimed_by = ?",
            (prompt, config_snapshot, run_id, claimant),
        )


def finish_run(
    write: Writer,
    run_id: str,
    claimant: str,
    job_id: str,
    outcome: Any,
    now: datetime,
    duration_ms: float,
    output: Path | None,
    delivery: tuple[str, dict[str, Any] | None] | None = None,
) -> bool:
    """running → ok|error with everything the run produced, and free the job. False if not ours any more.

    `delivery` is the run's delivery status and detail, committed with the outcome: `pending` while a
    send is still to come, so a runner killed before the send is recorded leaves a trace (`reconcile`).
    """
    with write(durable=True) as db:
        cur = db.execute(
            """
            UPDATE job_runs SET status = ?, finished_at = ?, duration_ms = ?, final_response = ?,
                error_code = ?, error = ?, usage = ?, iterations = ?, attempts = ?, tool_failures = ?,
                silent = ?, output_path = ?, delivery_status = ?, delivery_detail = ?
            WHERE id = ? AND status IN ('queued', 'running') AND claimed_by = ?
            """,
            (
                outcome.status,
                ts(now),
                duration_ms,
                outcome.final_response,
                outcome.error_code,
                outcome.error,
                None if outcome.usage is None else json.dumps(outcome.usage),
                outcome.iterations,
                outcome.attempts,
                json.dumps(outcome.tool_failures),
                int(outcome.silent),
                None if output is None else str(output),
                None if delivery is None else delivery[0],
                None if delivery is None or delivery[1] is None else json.dumps(delivery[1]),
                run_id,
                claimant,
            ),
        )
        if not cur.rowcount:
            return False
        # The worker has exited: a file it was still sending is undelivered, never sent again.
        close_unfinished(db, run_id, ts(now))
        error = f"{outcome.error_code}: {outcome.error}" if outcome.status == "error" else None
        release_job(db, job_id, run_id, outcome.status, error, now)
    return True


def record_delivery(write: Writer, run_id: str, status: str, detail: dict[str, Any] | None) -> None:
    with write() as db:
        db.execute(
            "UPDATE job_runs SET delivery_status = ?, delivery_detail = ? WHERE id = ?",
            (status, None if detail is None else json.dumps(detail), run_id),
        )


def prune(write: Writer, data_dir: Path, job_id: str, keep: int) -> int:
    """Keep a job's newest `keep` finished runs; delete older rows and their output.md."""
    with write() as db:
        old = db.execute(
            "SELECT id FROM job_runs WHERE job_id = ? AND status NOT IN ('queued', 'running')"
            " ORDER BY queued_at DESC, scheduled_for DESC LIMIT -1 OFFSET ?",
            (job_id, keep),
        ).fetchall()
        ids = [r["id"] for r in old]
        db.executemany("DELETE FROM job_runs WHERE id = ?", [(i,) for i in ids])
    for run_id in ids:
        shutil.rmtree(data_dir / "jobs" / job_id / run_id, ignore_errors=True)
    return len(ids)
