"""The transcripts' full-text index (`messages_fts`, agent/migrations.py), brought up to date in batches.

Inserting a message notes its id in `messages_fts_pending` instead of indexing it in the same commit:
a turn's commit then writes one small row where FTS5 wrote a segment of its own pages, which was most
of what storing a turn cost. The pending messages are indexed together, in one transaction, when a
run ends (`index_pending`, called by the run's last write) and before any full-text search reads the
index (`catch_up`), so a search always sees every message stored before it, the running run's too.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from .logs import logger

if TYPE_CHECKING:
    from .state import StateDB


def index_pending(conn: sqlite3.Connection) -> int:
    """Index every pending message, inside the caller's write transaction; returns how many."""
    indexed = conn.execute(
        "INSERT INTO messages_fts (rowid, role, kind, content)"
        " SELECT m.id, m.role, m.kind, m.content"
        " FROM messages_fts_pending p JOIN messages m ON m.id = p.id ORDER BY m.id"
    ).rowcount
    conn.execute("DELETE FROM messages_fts_pending")
    return int(indexed)


def catch_up(db: StateDB) -> None:
    """Before a full-text search: index what is pending, if anything (one read when nothing is).

    A state file this process may not write (read-only home) is searched as it is: the messages
    noted as pending are then missing from the results, and the log says so.
    """
    if not db.conn.execute("SELECT EXISTS (SELECT 1 FROM messages_fts_pending)").fetchone()[0]:
        return
    try:
        with db.write() as conn:
            index_pending(conn)
    except sqlite3.OperationalError as e:
        logger("fermix.history").warning(
            "the transcripts' search index could not be brought up to date (%s); messages stored since "
            "the last run ended are left out of this search",
            e,
        )
