"""The memory domain's state.db tables, as an ordered list of named migrations.

Append new migrations at the end, named `<domain>_NNN_<what>`. Never edit, rename or reorder one that
has shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ..core.migrations import Migration


def memories(db: sqlite3.Connection) -> None:
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


def profiles(db: sqlite3.Connection) -> None:
    """The durable user and work profiles the memory review writes, every version kept, and the reviews run.

    `memory_reviews.through` is the newest `memories.updated_at` a successful review consolidated: the
    next one reads only facts stored, changed or forgotten after it.
    """
    db.execute(
        "CREATE TABLE memory_profiles (kind TEXT PRIMARY KEY CHECK (kind IN ('user', 'work')),"
        " content TEXT NOT NULL, revision INTEGER NOT NULL, updated_at TEXT NOT NULL)"
    )
    db.execute(
        "CREATE TABLE memory_profile_history (id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " kind TEXT NOT NULL CHECK (kind IN ('user', 'work')), revision INTEGER NOT NULL,"
        " content TEXT NOT NULL, source TEXT NOT NULL CHECK (source IN ('review', 'edit', 'reset')),"
        " review_id INTEGER, created_at TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX memory_profile_history_kind ON memory_profile_history(kind, revision)")
    db.execute(
        "CREATE TABLE memory_reviews (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at TEXT NOT NULL,"
        " finished_at TEXT, status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'nothing_new')),"
        " through TEXT, facts INTEGER NOT NULL DEFAULT 0, session_id TEXT, error_json TEXT)"
    )


def review_owners(db: sqlite3.Connection) -> None:
    """A running review names the process that runs it (`core/procid.py`): one whose process died
    (SIGKILL, a crash) no longer blocks the next review for an hour."""
    db.execute("ALTER TABLE memory_reviews ADD COLUMN owner TEXT")


MIGRATIONS = (
    Migration("memory_001_memories", memories),
    Migration("memory_002_profiles", profiles),
    Migration("memory_003_review_owners", review_owners),
)
