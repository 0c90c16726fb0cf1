"""The model loop's state.db tables (transcripts), as an ordered list of named migrations.

Append new migrations at the end, named `<domain>_NNN_<what>`. Never edit, rename or reorder one that
has shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ..core.ftsbatch import declare
from ..core.migrations import Migration


def transcripts(db: sqlite3.Connection) -> None:
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


def session_parents(db: sqlite3.Connection) -> None:
    """A delegated run's conversation (a skill run, a subagent worker) points at its caller's session."""
    db.execute("ALTER TABLE conversations ADD COLUMN parent_id TEXT")
    db.execute("ALTER TABLE conversations ADD COLUMN label TEXT")
    db.execute("CREATE INDEX conversations_parent ON conversations(parent_id) WHERE parent_id IS NOT NULL")


def fts_in_batches(db: sqlite3.Connection) -> None:
    """The messages' full-text index is filled in batches (core/ftsbatch.py) instead of row by row: a
    stored message is noted as pending, and a run's end (Transcript.finish_run) and every full-text
    search (`fermix logs -q`, memory_recall over history) index what is pending."""
    declare(db, "messages_fts", "messages", ("role", "kind", "content"))


def run_owners(db: sqlite3.Connection) -> None:
    """A run names the process that runs it (`core/procid.py`): a run whose process died (SIGKILL, a
    crash) while it was `running` is found and ended `interrupted` by the next process that looks
    (`Transcript.close_orphaned_runs`), instead of showing `running` for good."""
    db.execute("ALTER TABLE runs ADD COLUMN owner TEXT")
    db.execute("CREATE INDEX runs_running ON runs(status) WHERE status = 'running'")


def opaque_blocks(db: sqlite3.Connection) -> None:
    """An assistant message keeps the parts of its reply only its provider reads (Anthropic's thinking
    and redacted_thinking blocks, `OpaqueBlock`), as JSON, so a resumed session sends them back as they
    came. Not indexed for search: they are not the conversation's text."""
    db.execute("ALTER TABLE messages ADD COLUMN opaque_json TEXT")


def no_call_index(db: sqlite3.Connection) -> None:
    """Messages are no longer indexed by `call_id` alone: every lookup by call id names its run too and
    goes through `messages_run`, and the index cost each model turn's commit two of its ten pages (a
    tool result's random call id lands on its own page)."""
    db.execute("DROP INDEX IF EXISTS messages_call")


MIGRATIONS = (
    Migration("agent_001_transcripts", transcripts),
    Migration("agent_002_session_parents", session_parents),
    Migration("agent_003_fts_in_batches", fts_in_batches),
    Migration("agent_004_run_owners", run_owners),
    Migration("agent_005_opaque_blocks", opaque_blocks),
    Migration("agent_006_no_call_index", no_call_index),
)
