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


def m002_hashline_snapshots(db: sqlite3.Connection) -> None:
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


MIGRATIONS: list[Migration] = [
    m001_tool_calls,
    m002_hashline_snapshots,
]
