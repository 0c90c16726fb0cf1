"""The coding tools' state.db tables (hashline snapshots), as an ordered list of named migrations.

Append new migrations at the end, named `<domain>_NNN_<what>`. Never edit, rename or reorder one that
has shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ...core.migrations import Migration


def hashline_snapshots(db: sqlite3.Connection) -> None:
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


MIGRATIONS = (Migration("coding_001_hashline_snapshots", hashline_snapshots),)
