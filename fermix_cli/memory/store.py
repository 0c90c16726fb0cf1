"""Memory storage in state.db: keyed memories in scopes, the sources that back them, and FTS5 search.

The memory tools, the `fermix memory` commands and (later) the agent loop and the jobs runner share
this module. Functions that change rows take a connection inside a transaction the caller opened
with `StateDB.write()`, so a check and the write it guards happen in one BEGIN IMMEDIATE.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.records import Record

if TYPE_CHECKING:
    from ..core.context import ToolContext

AGENT = "main"
OWNER = "owner"
MAIN_SOURCE = "main"

# User-facing facts live in the owner scope; work memory in the agent scope.
USER_CATEGORIES = ("identity", "preference", "interest", "goal")
WORK_CATEGORIES = ("context", "directive")
CATEGORIES = USER_CATEGORIES + WORK_CATEGORIES

SCOPE_REQUESTS = ("current", "owner", "all")

# Search ranking: a match in the key (which names the memory) counts most, the category least.
BM25_WEIGHTS = (0.5, 3.0, 1.0)

_SCOPE_ORDER = "CASE m.scope_type WHEN 'conversation' THEN 0 WHEN 'job' THEN 1 WHEN 'agent' THEN 2 ELSE 3 END"
_TERM = re.compile(r"\w+", re.UNICODE)


def timestamp(moment: datetime) -> str:
    """Fixed-width UTC (6-digit microseconds and Z), so string order is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Caller(Record, frozen=True):
    """Who is asking, as far as memory cares: trust, the conversation, and the job of a scheduled run."""

    trust: str
    origin: str
    session_id: str
    job_id: str | None = None

    @classmethod
    def of(cls, ctx: ToolContext) -> Caller:
        return cls(ctx.trust, ctx.origin, ctx.session_id, ctx.job_id)

    @property
    def is_guest(self) -> bool:
        return self.trust != "operator"


class Scope(Record, frozen=True):
    """Where one memory lives: (`owner`, owner id), (`agent`, agent), (`conversation`, session) or (`job`, id)."""

    type: str
    id: str

    @property
    def source_id(self) -> str:
        return job_source_id(self.id) if self.type == "job" else MAIN_SOURCE

    @property
    def label(self) -> str:
        return f"{self.type}:{self.id}" if self.type in ("conversation", "job") else self.type


def job_source_id(job_id: str) -> str:
    return f"job:{job_id}"


class View(Record, frozen=True):
    """The memories a caller may see: a SQL condition over `memories m` and its parameters."""

    name: str
    where: str
    params: tuple[Any, ...]
    requested: str
    scoped_down: bool


def _base(where: str) -> str:
    return f"m.agent = '{AGENT}' AND m.owner = '{OWNER}' AND ({where})"


def search_view(caller: Caller, requested: str = "current") -> View:
    """Widen to what was asked for, unless the caller is held narrower.

    A scope is a request, never an authorisation: a scheduled job sees only its own job memory and a
    guest only the conversation it is in, whatever it asks for.
    """
    if caller.job_id is not None:
        return View(
            f"job:{caller.job_id}",
            _base("m.scope_type = 'job' AND m.scope_id = ?"),
            (caller.job_id,),
            requested,
            requested != "current",
        )
    if caller.is_guest:
        return View(
            "conversation",
            _base("m.scope_type = 'conversation' AND m.scope_id = ?"),
            (caller.session_id,),
            requested,
            True,
        )
    if requested == "owner":
        return View(
            "owner", _base("m.scope_type IN ('owner', 'agent', 'conversation')"), (), requested, False
        )
    if requested == "all":
        return View("all", _base("1"), (), requested, False)
    return View(
        "current",
        _base("m.scope_type IN ('owner', 'agent') OR (m.scope_type = 'conversation' AND m.scope_id = ?)"),
        (caller.session_id,),
        requested,
        False,
    )


def conversation_view(caller: Caller) -> View:
    """Only this conversation's notes (a scheduled run's conversation is its job's memory)."""
    if caller.job_id is not None:
        return search_view(caller)
    return View(
        "conversation",
        _base("m.scope_type = 'conversation' AND m.scope_id = ?"),
        (caller.session_id,),
        "current",
        False,
    )


def edit_view(caller: Caller) -> View:
    """The rows a caller may correct, forget or restore: the owner any; a job its own; a guest its conversation."""
    if caller.job_id is not None or caller.is_guest:
        return search_view(caller)
    return search_view(caller, "all")


# ----- rows ----------------------------------------------------------------------------------------

_COLUMNS = (
    "m.id, m.key, m.value, m.category, m.scope_type, m.scope_id, m.source_id, m.created_trust,"
    " m.created_origin, m.session_id, m.created_at, m.updated_at, m.archived_at, m.archive_reason"
)


def as_dict(row: sqlite3.Row) -> dict[str, Any]:
    """A memory row as the JSON the tools return."""
    return {("scope" if k == "scope_type" else k): row[k] for k in row.keys() if k != "rank"}  # noqa: SIM118 (a Row iterates values)


def scope_label(memory: dict[str, Any]) -> str:
    return Scope(memory["scope"], memory["scope_id"]).label


def fetch(db: sqlite3.Connection, memory_id: int, view: View) -> sqlite3.Row | None:
    """One row by id, archived or not, if the view lets the caller see it."""
    row: sqlite3.Row | None = db.execute(
        f"SELECT {_COLUMNS} FROM memories m WHERE m.id = ? AND {view.where}", (memory_id, *view.params)
    ).fetchone()
    return row


def fetch_active_key(db: sqlite3.Connection, scope: Scope, key: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute(
        f"SELECT {_COLUMNS} FROM memories m WHERE m.agent = ? AND m.owner = ? AND m.scope_type = ?"
        " AND m.scope_id = ? AND m.key = ? AND m.archived_at IS NULL",
        (AGENT, OWNER, scope.type, scope.id, key),
    ).fetchone()
    return row


def ensure_source(db: sqlite3.Connection, scope: Scope, now: str) -> None:
    """A job's memory source comes into being with its first memory; `main` always exists."""
    if scope.type == "job":
        register_job_source(db, scope.id, now)


def register_job_source(db: sqlite3.Connection, job_id: str, now: str, label: str | None = None) -> None:
    """Record `job:<id>` as a memory source (idempotent). The jobs issue calls this when a job is created."""
    db.execute(
        "INSERT OR IGNORE INTO memory_sources (source_id, source_type, job_id, label, created_at, updated_at)"
        " VALUES (?, 'job', ?, ?, ?, ?)",
        (job_source_id(job_id), job_id, label or job_id, now, now),
    )


def tombstone_job_source(db: sqlite3.Connection, job_id: str, now: str) -> bool:
    """Mark a removed job's source as a tombstone; its memories stay. True if a row changed."""
    cur = db.execute(
        "UPDATE memory_sources SET status = 'tombstoned', tombstoned_at = ?, updated_at = ?"
        " WHERE source_id = ? AND status = 'active'",
        (now, now, job_source_id(job_id)),
    )
    return cur.rowcount > 0


def insert(
    db: sqlite3.Connection,
    scope: Scope,
    key: str,
    value: str,
    category: str | None,
    caller: Caller,
    now: str,
) -> sqlite3.Row:
    ensure_source(db, scope, now)
    cur = db.execute(
        "INSERT INTO memories (agent, owner, scope_type, scope_id, source_id, key, value, category,"
        " created_trust, created_origin, session_id, created_at, updated_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            AGENT,
            OWNER,
            scope.type,
            scope.id,
            scope.source_id,
            key,
            value,
            category,
            "guest" if caller.is_guest else "operator",
            caller.origin,
            caller.session_id,
            now,
            now,
        ),
    )
    return _by_id(db, int(cur.lastrowid or 0))


def update_value(
    db: sqlite3.Connection, memory_id: int, value: str, category: str | None, now: str
) -> sqlite3.Row:
    db.execute(
        "UPDATE memories SET value = ?, category = ?, updated_at = ? WHERE id = ?",
        (value, category, now, memory_id),
    )
    return _by_id(db, memory_id)


def set_archived(
    db: sqlite3.Connection, memory_id: int, archived_at: str | None, reason: str | None, now: str
) -> sqlite3.Row:
    db.execute(
        "UPDATE memories SET archived_at = ?, archive_reason = ?, updated_at = ? WHERE id = ?",
        (archived_at, reason, now, memory_id),
    )
    return _by_id(db, memory_id)


def _by_id(db: sqlite3.Connection, memory_id: int) -> sqlite3.Row:
    row: sqlite3.Row = db.execute(
        f"SELECT {_COLUMNS} FROM memories m WHERE m.id = ?", (memory_id,)
    ).fetchone()
    return row


def check_editable(row: sqlite3.Row, caller: Caller) -> None:
    """A guest may not change what the owner stored, even inside its own conversation."""
    if caller.is_guest and row["created_trust"] == "operator":
        raise ToolError(
            "not_editable",
            f"Memory id={row['id']} was stored by the owner; a guest cannot change it.",
            {"id": row["id"]},
        )


# ----- reads ---------------------------------------------------------------------------------------


def by_key(db: sqlite3.Connection, view: View, key: str) -> list[sqlite3.Row]:
    """Active memories with exactly this key, the most specific scope first."""
    return db.execute(
        f"SELECT {_COLUMNS} FROM memories m WHERE m.key = ? AND m.archived_at IS NULL AND {view.where}"
        f" ORDER BY {_SCOPE_ORDER}, m.id",
        (key, *view.params),
    ).fetchall()


def listing(
    db: sqlite3.Connection,
    view: View,
    *,
    limit: int,
    archived: bool = False,
    category: str | None = None,
) -> tuple[list[sqlite3.Row], int]:
    """The view's memories in the order they were stored (first `limit`), and how many there are in all."""
    where = f"m.archived_at IS {'NOT ' if archived else ''}NULL AND {view.where}"
    params: tuple[Any, ...] = view.params
    if category is not None:
        where += " AND m.category IS ?"
        params = (*params, None if category == "note" else category)
    total = int(db.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).fetchone()[0])
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM memories m WHERE {where} ORDER BY m.id LIMIT ?", (*params, limit)
    ).fetchall()
    return rows, total


def search_terms(text: str) -> list[str]:
    """The words of a search, each quoted, so no user text can be read as FTS5 syntax."""
    return ['"' + t.replace('"', '""') + '"' for t in _TERM.findall(text)]


class SearchResult(Record):
    hits: list[dict[str, Any]]
    more: bool
    match: str  # "all_terms", "any_term" or "none"


def _terms_or_refuse(text: str) -> list[str]:
    terms = search_terms(text)
    if not terms:
        raise ToolError(
            "invalid_search",
            f"The search {text!r} has no words to look for; use letters or digits.",
            {"search": text},
        )
    return terms


def _ranked(
    db: sqlite3.Connection,
    sql: str,
    terms: list[str],
    params: tuple[Any, ...],
    limit: int,
    make: Callable[[sqlite3.Row], dict[str, Any]],
) -> SearchResult:
    """Run an FTS query with every word first; failing that, with any word."""
    attempts = [("all_terms", " ".join(terms))]
    if len(terms) > 1:
        attempts.append(("any_term", " OR ".join(terms)))
    for mode, query in attempts:
        rows = db.execute(sql, (query, *params, limit + 1)).fetchall()
        if rows:
            return SearchResult([make(r) for r in rows[:limit]], len(rows) > limit, mode)
    return SearchResult([], False, "none")


def search(db: sqlite3.Connection, view: View, text: str, limit: int) -> SearchResult:
    """BM25-ranked FTS5 search: memories holding every word first; failing that, any word."""
    terms = _terms_or_refuse(text)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    sql = (
        f"SELECT {_COLUMNS}, bm25(memories_fts, {weights}) AS rank"
        " FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid"
        f" WHERE memories_fts MATCH ? AND m.archived_at IS NULL AND {view.where}"
        " ORDER BY rank, m.id LIMIT ?"
    )
    return _ranked(db, sql, terms, view.params, limit, lambda r: {**as_dict(r), "rank": float(r["rank"])})


def sources(
    db: sqlite3.Connection, *, status: str | None = None, source_type: str | None = None
) -> list[dict[str, Any]]:
    """Memory sources with their active and archived memory counts, `main` first, then jobs by id."""
    where, params = ["1"], []
    if status is not None:
        where.append("s.status = ?")
        params.append(status)
    if source_type is not None:
        where.append("s.source_type = ?")
        params.append(source_type)
    rows = db.execute(
        "SELECT s.source_id, s.source_type, s.job_id, s.label, s.status, s.created_at, s.updated_at,"
        " s.tombstoned_at,"
        " (SELECT count(*) FROM memories m WHERE m.source_id = s.source_id AND m.archived_at IS NULL)"
        " AS memories,"
        " (SELECT count(*) FROM memories m WHERE m.source_id = s.source_id AND m.archived_at IS NOT NULL)"
        " AS archived"
        f" FROM memory_sources s WHERE {' AND '.join(where)}"
        " ORDER BY s.source_type != 'main', s.source_id",
        params,
    ).fetchall()
    return [dict(r) for r in rows]


MAX_ID = 2**63 - 1  # SQLite's largest INTEGER; no row can have a larger id


def parse_id(raw: int | str) -> int:
    """An id given as an int or a digit string, from 1 to MAX_ID."""
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw <= MAX_ID:
        return raw
    if isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdigit() and 0 < int(raw) <= MAX_ID:
        return int(raw)
    raise ToolError("invalid_id", f"id must be a positive integer no larger than {MAX_ID}", {"id": raw})


def fetch_for_edit(db: sqlite3.Connection, memory_id: int, caller: Caller) -> sqlite3.Row:
    row = fetch(db, memory_id, edit_view(caller))
    if row is None:
        raise ToolError(
            "not_found",
            f"No memory has that id (id={memory_id}) in the memory you can reach. "
            "Find ids with memory_recall.",
            {"id": memory_id},
        )
    return row


def restore(db: sqlite3.Connection, memory_id: int, caller: Caller, now: str) -> tuple[sqlite3.Row, bool]:
    """Bring an archived memory back. (row, changed); refuses when an active row now holds its key."""
    row = fetch_for_edit(db, memory_id, caller)
    check_editable(row, caller)
    if row["archived_at"] is None:
        return row, False
    clash = fetch_active_key(db, Scope(row["scope_type"], row["scope_id"]), row["key"])
    if clash is not None:
        raise ToolError(
            "conflict",
            f"Memory id={memory_id} cannot be restored: id={clash['id']} now holds the key "
            f"{row['key']!r} in the same scope. Forget id={clash['id']} first, then restore.",
            {"id": memory_id, "active_id": clash["id"]},
        )
    return set_archived(db, memory_id, None, None, now), True


def search_history(
    db: sqlite3.Connection, caller: Caller, requested: str, text: str, limit: int
) -> tuple[SearchResult, str]:
    """BM25-ranked search of conversation transcripts, and the scope it was held to.

    `current` is this conversation; `owner` and `all` are every conversation an operator held, plus
    this one. A guest is held to its own conversation whatever it asks for.
    """
    terms = _terms_or_refuse(text)
    if caller.is_guest or requested == "current":
        applied, where = "conversation", "m.conversation_id = ?"
    else:
        applied, where = requested, "(c.trust = 'operator' OR m.conversation_id = ?)"
    sql = (
        "SELECT m.conversation_id, c.origin, m.role, m.kind, m.content, m.created_at,"
        " bm25(messages_fts) AS rank"
        " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
        " JOIN conversations c ON c.id = m.conversation_id"
        f" WHERE messages_fts MATCH ? AND {where} ORDER BY rank, m.id LIMIT ?"
    )

    def hit(r: sqlite3.Row) -> dict[str, Any]:
        return {
            "rank": float(r["rank"]),
            "channel": r["origin"],
            "thread": r["conversation_id"],
            "role": r["role"],
            "kind": r["kind"],
            "content": r["content"],
            "created_at": r["created_at"],
        }

    return _ranked(db, sql, terms, (caller.session_id,), limit, hit), applied
