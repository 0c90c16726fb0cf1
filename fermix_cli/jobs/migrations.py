"""The scheduled-jobs domain's state.db tables, as an ordered list of named migrations.

Append new migrations at the end, named `<domain>_NNN_<what>`. Never edit, rename or reorder one that
has shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ..core.migrations import Migration


def scheduled_jobs(db: sqlite3.Connection) -> None:
    """Scheduled jobs and their runs (fermix_cli/jobs).

    A slot is claimed by inserting its run row: the partial unique index on (job_id, scheduled_for)
    makes a second claim of one scheduled slot impossible, whatever the processes do. Runs go with
    their job. `due` and `active` are partial indexes so a tick over thousands of idle jobs reads a
    handful of index entries.
    """
    db.execute(
        """
        CREATE TABLE scheduled_jobs (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('agent', 'command')),
            task TEXT NOT NULL,
            description TEXT,
            schedule TEXT NOT NULL,
            schedule_kind TEXT NOT NULL CHECK (schedule_kind IN ('interval', 'cron', 'once')),
            timezone TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN
                ('scheduled', 'paused', 'running', 'completed', 'disabled', 'expired')),
            next_run_at TEXT,
            expires_at TEXT,
            allowed_tools TEXT,
            skill_name TEXT,
            provider TEXT,
            model TEXT,
            timeout_seconds INTEGER NOT NULL CHECK (timeout_seconds > 0),
            inactivity_timeout_seconds INTEGER NOT NULL CHECK (inactivity_timeout_seconds > 0),
            delivery_mode TEXT NOT NULL CHECK (delivery_mode IN ('none', 'origin', 'channel', 'local')),
            delivery_target TEXT,
            created_by_agent_id TEXT NOT NULL,
            created_by_session_id TEXT NOT NULL,
            created_by_channel TEXT NOT NULL,
            created_by_trust TEXT NOT NULL CHECK (created_by_trust IN ('operator', 'guest')),
            policy_ceiling TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            paused_at TEXT,
            last_run_id TEXT,
            last_run_at TEXT,
            last_status TEXT,
            last_error TEXT,
            run_count INTEGER NOT NULL DEFAULT 0,
            CHECK ((provider IS NULL) = (model IS NULL)),
            CHECK ((delivery_mode IN ('channel', 'origin')) = (delivery_target IS NOT NULL))
        )
        """
    )
    db.execute("CREATE INDEX scheduled_jobs_due ON scheduled_jobs(next_run_at) WHERE state = 'scheduled'")
    db.execute(
        "CREATE INDEX scheduled_jobs_expiry ON scheduled_jobs(expires_at) WHERE expires_at IS NOT NULL"
    )
    db.execute("CREATE INDEX scheduled_jobs_created ON scheduled_jobs(created_at, id)")
    db.execute(
        """
        CREATE TABLE job_runs (
            id TEXT PRIMARY KEY,
            job_id TEXT NOT NULL REFERENCES scheduled_jobs(id) ON DELETE CASCADE,
            trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual')),
            scheduled_for TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'ok', 'error', 'skipped')),
            reason TEXT,
            claimed_by TEXT,
            lease_until TEXT,
            queued_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT,
            duration_ms REAL,
            session_id TEXT,
            task_prompt TEXT,
            prompt_snapshot TEXT,
            config_snapshot TEXT,
            final_response TEXT,
            error_code TEXT,
            error TEXT,
            usage TEXT,
            iterations INTEGER,
            attempts INTEGER,
            tool_failures TEXT,
            silent INTEGER NOT NULL DEFAULT 0,
            delivery_status TEXT,
            delivery_detail TEXT,
            output_path TEXT,
            CHECK ((status = 'skipped') = (reason IS NOT NULL)),
            CHECK (status NOT IN ('queued', 'running') OR claimed_by IS NOT NULL)
        )
        """
    )
    db.execute(
        "CREATE UNIQUE INDEX job_runs_slot ON job_runs(job_id, scheduled_for) WHERE trigger = 'schedule'"
    )
    db.execute("CREATE INDEX job_runs_job ON job_runs(job_id, queued_at)")
    db.execute("CREATE INDEX job_runs_active ON job_runs(status) WHERE status IN ('queued', 'running')")


def pending_deliveries(db: sqlite3.Connection) -> None:
    """Finished runs whose delivery is under way (`pending`): a partial index, so an idle tick finds the
    ones a killed runner left behind with one indexed read."""
    db.execute("CREATE INDEX job_runs_pending_delivery ON job_runs(id) WHERE delivery_status = 'pending'")


def run_attachments(db: sqlite3.Connection) -> None:
    """The files a run sent with send_attachment (jobs/attachments.py): one row per send, written
    `sending` before it leaves and `sent`/`failed` after; `undelivered` when the run ended mid-send.
    They go with their run."""
    db.execute(
        """
        CREATE TABLE job_run_attachments (
            run_id TEXT NOT NULL REFERENCES job_runs(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL CHECK (seq >= 1),
            call_id TEXT,
            filename TEXT NOT NULL,
            kind TEXT NOT NULL,
            mime_type TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            caption TEXT,
            source TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('sending', 'sent', 'failed', 'undelivered')),
            detail TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            PRIMARY KEY (run_id, seq)
        )
        """
    )
    db.execute(
        "CREATE INDEX job_run_attachments_sending ON job_run_attachments(run_id) WHERE status = 'sending'"
    )


def clock_mark(db: sqlite3.Connection) -> None:
    """The scheduler's clock high-water mark (jobs/tick.py): one row, the latest "now" at which a tick or
    a job write computed a next run. A tick whose now lies well before it knows the clock stepped back."""
    db.execute(
        "CREATE TABLE jobs_clock_mark (id INTEGER PRIMARY KEY CHECK (id = 1), high_water TEXT NOT NULL)"
    )


MIGRATIONS = (
    Migration("jobs_001_scheduled_jobs", scheduled_jobs),
    Migration("jobs_002_pending_deliveries", pending_deliveries),
    Migration("jobs_003_run_attachments", run_attachments),
    Migration("jobs_004_clock_mark", clock_mark),
)
