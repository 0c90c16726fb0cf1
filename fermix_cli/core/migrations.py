"""The state.db schema as an ordered list of small migrations; `user_version` counts those applied.

Append new migrations at the end. Never edit or reorder one that has shipped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def m001_tool_calls(db: sqlite3.Connection) -> None:
    """Every recorded tool call: who asked, with what, and how it ended."""
    db.execute(
        """
        CREATE TABLE tool_calls (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            origin TEXT NOT NULL,
            trust TEXT NOT NULL,
            args_json TEXT NOT NULL,
            ok INTEGER NOT NULL,
            error_code TEXT,
            result_json TEXT,
            started_at TEXT NOT NULL,
            duration_ms REAL NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX tool_calls_session ON tool_calls(session_id, started_at)")


def m002_memories(db: sqlite3.Connection) -> None:
    """Memory: sources (main, one per job), keyed memories archived rather than erased, and their FTS index.

    Only active rows are indexed, so a search never pays for forgotten ones. The key is unique among the
    active rows of one scope; archived rows keep theirs, so forgetting never erases and a key can be reused.
    """
    db.execute(
        """
        CREATE TABLE memory_sources (
            source_id TEXT PRIMARY KEY,
            source_type TEXT NOT NULL CHECK (source_type IN ('main', 'job')),
            job_id TEXT,
            label TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'tombstoned')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            tombstoned_at TEXT,
            CHECK ((source_type = 'job') = (job_id IS NOT NULL)),
            CHECK ((status = 'tombstoned') = (tombstoned_at IS NOT NULL))
        )
        """
    )
    # strftime's %f has millisecond precision; pad it to the fixed 6-digit width every timestamp uses.
    now = "strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'"
    db.execute(
        "INSERT INTO memory_sources (source_id, source_type, label, created_at, updated_at)"
        f" VALUES ('main', 'main', 'main', {now}, {now})"
    )
    db.execute(
        """
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent TEXT NOT NULL,
            owner TEXT NOT NULL,
            scope_type TEXT NOT NULL CHECK (scope_type IN ('owner', 'agent', 'conversation', 'job')),
            scope_id TEXT NOT NULL,
            source_id TEXT NOT NULL REFERENCES memory_sources(source_id),
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            category TEXT CHECK (category IS NULL OR category IN
                ('identity', 'preference', 'interest', 'goal', 'context', 'directive')),
            created_trust TEXT NOT NULL CHECK (created_trust IN ('operator', 'guest')),
            created_origin TEXT NOT NULL,
            session_id TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            archived_at TEXT,
            archive_reason TEXT
        )
        """
    )
    db.execute(
        "CREATE UNIQUE INDEX memories_active_key ON memories(agent, owner, scope_type, scope_id, key)"
        " WHERE archived_at IS NULL"
    )
    db.execute("CREATE INDEX memories_scope ON memories(scope_type, scope_id, updated_at)")
    db.execute("CREATE INDEX memories_source ON memories(source_id)")
    db.execute(
        "CREATE VIRTUAL TABLE memories_fts USING fts5("
        "category, key, value, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories WHEN new.archived_at IS NULL
        BEGIN
            INSERT INTO memories_fts (rowid, category, key, value)
            VALUES (new.id, new.category, new.key, new.value);
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF category, key, value, archived_at ON memories
        BEGIN
            DELETE FROM memories_fts WHERE rowid = old.id;
            INSERT INTO memories_fts (rowid, category, key, value)
            SELECT new.id, new.category, new.key, new.value WHERE new.archived_at IS NULL;
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories
        BEGIN
            DELETE FROM memories_fts WHERE rowid = old.id;
        END
        """
    )


def m003_hashline_snapshots(db: sqlite3.Connection) -> None:
    """Hashline snapshots per session (tools/coding/snapshot_db.py), and the per-path no-op streak."""
    db.execute(
        """
        CREATE TABLE hashline_snapshots (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            path TEXT NOT NULL,
            tag TEXT NOT NULL,
            text TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            seen TEXT NOT NULL,
            seq INTEGER NOT NULL,
            recorded_at REAL NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX hashline_snapshots_path ON hashline_snapshots(session_id, path, seq)")
    db.execute("CREATE INDEX hashline_snapshots_seq ON hashline_snapshots(seq)")
    db.execute(
        """
        CREATE TABLE hashline_noops (
            session_id TEXT NOT NULL,
            path TEXT NOT NULL,
            payload_sha TEXT NOT NULL,
            count INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (session_id, path)
        )
        """
    )


def m004_web_snapshots(db: sqlite3.Connection) -> None:
    """The `web` tool's cached page snapshots: immutable text behind `web:<ref>` references.

    `seq` orders them by recency (the newest has the largest); the tool keeps the newest 64.
    `truncated_by` lists, comma-separated, the limits that cut the text when it was captured.
    """
    db.execute(
        """
        CREATE TABLE web_snapshots (
            ref TEXT PRIMARY KEY,
            seq INTEGER NOT NULL,
            url TEXT NOT NULL,
            title TEXT,
            content_type TEXT,
            source TEXT NOT NULL,
            text TEXT NOT NULL,
            truncated_by TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX web_snapshots_seq ON web_snapshots(seq)")


def m005_transcripts(db: sqlite3.Connection) -> None:
    """Model-loop transcripts: conversations, runs (one per prompt), messages, and their FTS5 index.

    A tool message's `call_id` is the id of its `tool_calls` row; `provider_call_id` is the id the model
    used on the wire, which need not be unique across runs.
    """
    db.execute(
        """
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            origin TEXT NOT NULL,
            trust TEXT NOT NULL,
            provider TEXT,
            model TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX conversations_updated ON conversations(updated_at)")
    db.execute(
        """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            status TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            toolset TEXT,
            prompt TEXT NOT NULL,
            response TEXT NOT NULL DEFAULT '',
            iterations INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            error_json TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT
        )
        """
    )
    db.execute("CREATE INDEX runs_conversation ON runs(conversation_id, started_at)")
    db.execute("CREATE INDEX runs_started ON runs(started_at)")
    db.execute(
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL DEFAULT '',
            tool_calls_json TEXT,
            call_id TEXT,
            provider_call_id TEXT,
            tool_name TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            error_code TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            created_at TEXT NOT NULL,
            UNIQUE (conversation_id, seq)
        )
        """
    )
    db.execute("CREATE INDEX messages_run ON messages(run_id, seq)")
    db.execute("CREATE INDEX messages_call ON messages(call_id)")
    db.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5("
        "role, kind, content, content='messages', content_rowid='id', tokenize='unicode61')"
    )
    db.execute(
        """
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts(rowid, role, kind, content)
            VALUES (new.id, new.role, new.kind, new.content);
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, role, kind, content)
            VALUES ('delete', old.id, old.role, old.kind, old.content);
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER messages_fts_update AFTER UPDATE OF role, kind, content ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, role, kind, content)
            VALUES ('delete', old.id, old.role, old.kind, old.content);
            INSERT INTO messages_fts(rowid, role, kind, content)
            VALUES (new.id, new.role, new.kind, new.content);
        END
        """
    )


def m006_directory_access_requests(db: sqlite3.Connection) -> None:
    """Pending `request_directory_access` grants: single-use tokens the owner confirms or denies."""
    db.execute(
        """
        CREATE TABLE directory_access_requests (
            token TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            reason TEXT NOT NULL,
            session_id TEXT NOT NULL,
            origin TEXT NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'confirmed', 'denied', 'expired')),
            resolved_at REAL
        )
        """
    )
    db.execute("CREATE INDEX directory_access_requests_path ON directory_access_requests(path, status)")


def m007_scheduled_jobs(db: sqlite3.Connection) -> None:
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


MIGRATIONS: list[Migration] = [
    m001_tool_calls,
    m002_memories,
    m003_hashline_snapshots,
    m004_web_snapshots,
    m005_transcripts,
    m006_directory_access_requests,
    m007_scheduled_jobs,
]
