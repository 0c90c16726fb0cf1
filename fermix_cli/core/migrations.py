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


def m002_directory_access_requests(db: sqlite3.Connection) -> None:
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
    m002_directory_access_requests,
]
