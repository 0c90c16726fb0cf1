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
    """Hashline snapshots per session (core/snapshots_db.py), and the per-path no-op streak."""
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


MIGRATIONS: list[Migration] = [
    m001_tool_calls,
    m002_memories,
    m003_hashline_snapshots,
    m004_web_snapshots,
    m005_transcripts,
    m006_directory_access_requests,
]
