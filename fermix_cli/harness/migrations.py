"""The harness's state.db tables, as an ordered list of named migrations.

Append new migrations at the end, named `harness_NNN_<what>`. Never edit, rename or reorder one that
has shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ..core.migrations import Migration


def coding_runs(db: sqlite3.Connection) -> None:
    """The run ledger: one row per coding run, written before its process starts.

    `active` is a partial index over the runs that hold a slot (the concurrency and worktree caps read
    it); `polling` over the cloud runs still tracked; `undelivered` over the finished runs whose outcome has not been delivered yet.
    """
    db.execute(
        """
        CREATE TABLE coding_runs (
            id TEXT PRIMARY KEY CHECK (id GLOB 'hr_[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
                || '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'),
            tool TEXT NOT NULL,
            vendor TEXT NOT NULL CHECK (vendor IN ('codex', 'claude_code')),
            rail TEXT NOT NULL CHECK (rail IN ('local', 'cloud')),
            status TEXT NOT NULL CHECK (status IN
                ('starting', 'running', 'completed', 'failed', 'cancelled', 'timed_out', 'lost', 'untracked')),
            reason TEXT,
            cwd TEXT NOT NULL,
            worktree TEXT NOT NULL,
            locks TEXT NOT NULL DEFAULT '[]',
            add_dirs TEXT NOT NULL DEFAULT '[]',
            run_dir TEXT NOT NULL,
            argv TEXT NOT NULL DEFAULT '[]',
            prompt_bytes INTEGER NOT NULL,
            brief_path TEXT,
            posture TEXT,
            resume_of TEXT,
            ephemeral INTEGER NOT NULL DEFAULT 0,
            vendor_session TEXT,
            timeout_seconds INTEGER NOT NULL,
            progress TEXT NOT NULL DEFAULT 'quiet',
            progress_mark INTEGER NOT NULL DEFAULT 0,
            progress_at TEXT,
            session_id TEXT NOT NULL,
            origin TEXT NOT NULL,
            job_id TEXT,
            task_url TEXT,
            next_poll_at TEXT,
            deadline_at TEXT,
            pid INTEGER,
            pid_start TEXT,
            exit_code INTEGER,
            usage TEXT,
            result_tail TEXT,
            diagnostics_tail TEXT,
            created_at TEXT NOT NULL,
            started_at TEXT,
            ended_at TEXT,
            delivery_state TEXT NOT NULL DEFAULT 'none'
                CHECK (delivery_state IN ('none', 'pending', 'delivered', 'dead_letter')),
            delivery_attempts INTEGER NOT NULL DEFAULT 0,
            delivery_error TEXT,
            delivered_at TEXT,
            delivered_to TEXT
        )
        """
    )
    db.execute(
        "CREATE INDEX coding_runs_active ON coding_runs(worktree) WHERE status IN ('starting', 'running')"
    )
    db.execute(
        "CREATE INDEX coding_runs_undelivered ON coding_runs(session_id, ended_at)"
        " WHERE delivery_state = 'pending'"
    )
    db.execute("CREATE INDEX coding_runs_recent ON coding_runs(created_at)")
    db.execute(
        "CREATE INDEX coding_runs_polling ON coding_runs(next_poll_at) WHERE rail = 'cloud' AND status = 'running'"
    )


MIGRATIONS = (Migration("harness_001_coding_runs", coding_runs),)
