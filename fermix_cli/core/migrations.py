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


def m002_web_snapshots(db: sqlite3.Connection) -> None:
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


MIGRATIONS: list[Migration] = [
    m001_tool_calls,
    m002_web_snapshots,
]
