"""The skills domain's state.db tables. Append new migrations at the end, named `skills_NNN_<what>`."""

from __future__ import annotations

import sqlite3

from ...core.migrations import Migration


def skill_index(db: sqlite3.Connection) -> None:
    """The skills as the last `skill_reload` saw them (name -> SKILL.md digest), for its added/changed/removed."""
    db.execute(
        "CREATE TABLE skill_index (name TEXT PRIMARY KEY, path TEXT NOT NULL, digest TEXT NOT NULL,"
        " seen_at TEXT NOT NULL)"
    )


MIGRATIONS = (Migration("skills_001_skill_index", skill_index),)
