"""The web family's state.db tables (the page cache), as an ordered list of named migrations.

Append new migrations at the end, named `<domain>_NNN_<what>`. Never edit, rename or reorder one that
has shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ...core.migrations import Migration


def web_snapshots(db: sqlite3.Connection) -> None:
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


MIGRATIONS = (Migration("web_001_snapshots", web_snapshots),)
