"""Full-text indexes filled in batches: an external-content FTS5 table whose new rows join the index
together, not in the commit that stored each of them.

An FTS5 trigger that indexes every insert writes a segment of index pages into every commit (on the
transcripts, 7 of the 18 pages a model turn's commit wrote). A domain that stores rows one commit at a
time declares its index here instead, in a migration (`declare`): an insert then only notes the row's
key in `<fts>_pending`, one small row. The domain indexes what is pending when a batch of its work ends
(`index_pending`, inside its write transaction), and every full-text search catches up first
(`catch_up`), so a search always sees every row stored before it. Editing or deleting a row updates the
index at once when the row was indexed and only drops its note when it was not: FTS5's external-content
`delete` must never name a row it does not hold.

Which content table, key and columns an index covers is recorded in `fts_batches` by `declare`, so a
reader names only the index (a domain that searches another's transcripts does not import it).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .logs import logger

if TYPE_CHECKING:
    from .state import StateDB

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _ident(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"not an SQL identifier: {name!r}")
    return name


def declare(
    conn: sqlite3.Connection, fts: str, content: str, columns: Sequence[str], key: str = "id"
) -> None:
    """Make `fts` (an existing external-content FTS5 table over `content`) an index filled in batches.

    Run inside a migration. Rows already in `content` are taken as indexed (the per-row triggers this
    replaces, named `<fts>_insert`, `<fts>_delete` and `<fts>_update`, kept them so).
    """
    fts, content, key = _ident(fts), _ident(content), _ident(key)
    cols = [_ident(c) for c in columns]
    conn.execute(
        "CREATE TABLE IF NOT EXISTS fts_batches"
        " (fts TEXT PRIMARY KEY, content TEXT NOT NULL, key TEXT NOT NULL, columns TEXT NOT NULL)"
    )
    conn.execute(
        "INSERT OR REPLACE INTO fts_batches (fts, content, key, columns) VALUES (?, ?, ?, ?)",
        (fts, content, key, ",".join(cols)),
    )
    conn.execute(f"CREATE TABLE IF NOT EXISTS {fts}_pending (id INTEGER PRIMARY KEY)")
    for name in ("insert", "delete", "update"):
        conn.execute(f"DROP TRIGGER IF EXISTS {fts}_{name}")
    names = ", ".join(cols)
    old = ", ".join(f"old.{c}" for c in cols)
    new = ", ".join(f"new.{c}" for c in cols)
    indexed = f"NOT EXISTS (SELECT 1 FROM {fts}_pending WHERE id = old.{key})"
    conn.execute(
        f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {content} BEGIN"
        f" INSERT INTO {fts}_pending (id) VALUES (new.{key}); END"
    )
    conn.execute(
        f"CREATE TRIGGER {fts}_delete AFTER DELETE ON {content} BEGIN"
        f" INSERT INTO {fts}({fts}, rowid, {names}) SELECT 'delete', old.{key}, {old} WHERE {indexed};"
        f" DELETE FROM {fts}_pending WHERE id = old.{key}; END"
    )
    conn.execute(
        f"CREATE TRIGGER {fts}_update AFTER UPDATE OF {names} ON {content} BEGIN"
        f" INSERT INTO {fts}({fts}, rowid, {names}) SELECT 'delete', old.{key}, {old} WHERE {indexed};"
        f" INSERT INTO {fts}(rowid, {names}) SELECT new.{key}, {new} WHERE {indexed}; END"
    )


def index_pending(conn: sqlite3.Connection, fts: str) -> int:
    """Index every pending row of `fts`, inside the caller's write transaction; returns how many."""
    row = conn.execute("SELECT content, key, columns FROM fts_batches WHERE fts = ?", (fts,)).fetchone()
    if row is None:
        raise LookupError(f"{fts} is not declared as a batched full-text index")
    content, key, columns = (_ident(row[0]), _ident(row[1]), [_ident(c) for c in row[2].split(",")])
    fts = _ident(fts)
    names = ", ".join(columns)
    picked = ", ".join(f"c.{c}" for c in columns)
    indexed = conn.execute(
        f"INSERT INTO {fts} (rowid, {names}) SELECT c.{key}, {picked}"
        f" FROM {fts}_pending p JOIN {content} c ON c.{key} = p.id ORDER BY c.{key}"
    ).rowcount
    conn.execute(f"DELETE FROM {fts}_pending")
    return int(indexed)


def catch_up(db: StateDB, fts: str) -> None:
    """Before a full-text search of `fts`: index what is pending, if anything (one read when nothing is).

    A state file this process may not write (a read-only home) is searched as it is: the rows still
    pending are then missing from the results, and the log says so.
    """
    if not db.conn.execute(f"SELECT EXISTS (SELECT 1 FROM {_ident(fts)}_pending)").fetchone()[0]:
        return
    try:
        with db.write() as conn:
            index_pending(conn, fts)
    except sqlite3.OperationalError as e:
        logger("fermix.state").warning(
            "the full-text index %s could not be brought up to date (%s); rows stored since its last "
            "batch are left out of this search",
            fts,
            e,
        )
