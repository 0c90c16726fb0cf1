"""computer_use's state.db tables, as an ordered list of named migrations.

Append new migrations at the end, named `computer_NNN_<what>`. Never edit, rename or reorder one that
has shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ..core.migrations import Migration


def views_and_pause(db: sqlite3.Connection) -> None:
    """The latest look of each session (what coordinates mean) and the owner's pause switch.

    `computer_use_views` holds one row per session: the view as JSON (monitor, region, scale, image size).
    `computer_use_control` has at most one row: `paused` is set by /pause and cleared by /resume.
    """
    db.execute(
        """
        CREATE TABLE computer_use_views (
            session_id TEXT PRIMARY KEY,
            view_json TEXT NOT NULL,
            screenshot TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE computer_use_control (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            paused INTEGER NOT NULL DEFAULT 0,
            changed_at TEXT NOT NULL
        )
        """
    )


MIGRATIONS = (Migration("computer_001_views_and_pause", views_and_pause),)
