"""The access family's table in state.db (named before families owned their migrations, hence `core_`)."""

from __future__ import annotations

import sqlite3

from ...core.migrations import Migration


def directory_access_requests(db: sqlite3.Connection) -> None:
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


MIGRATIONS = (Migration("core_002_directory_access_requests", directory_access_requests),)
