"""state.db migrations: each domain's ordered list of named migrations, and the one runner.

A family or domain declares `MIGRATIONS`, a tuple of `Migration(name, apply)`, in a module of its own
(`memory/migrations.py`, `jobs/migrations.py`, ...); the kernel's own tables are declared here. The
runner applies every migration not yet recorded in `_fermix_migrations`, kernel first and then each
domain in catalog order, inside one BEGIN IMMEDIATE transaction, so five processes starting at once
agree on one schema. `user_version` counts the migrations applied: an older fermix, which knows fewer,
refuses a newer database, and opening an up-to-date one costs one PRAGMA.

Append new migrations at the end of a domain's list. Never edit, rename or reorder one that has shipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .errors import ToolError
from .records import Record

if TYPE_CHECKING:
    import sqlite3

    from .catalog import Catalog

TABLE = "_fermix_migrations"


class Migration(Record, frozen=True):
    """One named schema step; `after` names migrations of other domains it needs (a foreign key)."""

    name: str
    apply: Callable[[sqlite3.Connection], None]
    after: tuple[str, ...] = ()


def tool_calls(db: sqlite3.Connection) -> None:
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


def tool_call_starts(db: sqlite3.Connection) -> None:
    """The start of every call of a tool that is not read-only, written before it runs (`core/callstarts.py`).

    A row lives while its call runs; the transaction that stores the call's `tool_calls` row deletes it.
    A row whose process died first (`owner`, as in `core/procid.py`) is ended `interrupted` by the next
    process that looks, so a killed fermix still leaves the record that a command, a write or a send began.
    `run_id` is the model run that made the call (NULL outside one: an MCP call).
    """
    db.execute(
        """
        CREATE TABLE tool_call_starts (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            run_id TEXT,
            tool TEXT NOT NULL,
            origin TEXT NOT NULL,
            trust TEXT NOT NULL,
            args_json TEXT NOT NULL,
            started_at TEXT NOT NULL,
            owner TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'started',
            ended_at TEXT
        )
        """
    )
    db.execute("CREATE INDEX tool_call_starts_open ON tool_call_starts(status) WHERE status = 'started'")
    db.execute("CREATE INDEX tool_call_starts_run ON tool_call_starts(run_id) WHERE run_id IS NOT NULL")


MIGRATIONS = (
    Migration("core_001_tool_calls", tool_calls),
    Migration("core_003_tool_call_starts", tool_call_starts),
)

# Before migrations had names, `user_version` N meant the first N of these had run.
LEGACY_ORDER = (
    "core_001_tool_calls",
    "memory_001_memories",
    "coding_001_hashline_snapshots",
    "web_001_snapshots",
    "agent_001_transcripts",
    "core_002_directory_access_requests",
    "jobs_001_scheduled_jobs",
)


def ordered_modules(modules: Sequence[str]) -> list[str]:
    """The modules declaring MIGRATIONS in run order: this kernel module first, then catalog order."""
    return [__name__, *(m for m in modules if m != __name__)]


def all_migrations(catalog: Catalog | None = None) -> tuple[Migration, ...]:
    """Every migration fermix knows, in run order (imports each declaring module)."""
    from .catalog import default_catalog

    catalog = catalog or default_catalog()
    declared = catalog.declared("MIGRATIONS", tuple(m for m in catalog.migration_modules if m != __name__))
    found = [*MIGRATIONS, *(m for _module, migrations in declared for m in migrations)]
    return run_order(found)


def run_order(migrations: list[Migration]) -> tuple[Migration, ...]:
    """`migrations` in order, except that one naming `after=` waits for those it names."""
    names = {m.name for m in migrations}
    if len(names) != len(migrations):
        raise ValueError("two migrations share a name")
    done: list[Migration] = []
    placed: set[str] = set()
    pending = list(migrations)
    while pending:
        for i, m in enumerate(pending):
            missing = [a for a in m.after if a not in names]
            if missing:
                raise ValueError(f"migration {m.name} needs unknown {missing}")
            if all(a in placed for a in m.after):
                done.append(pending.pop(i))
                placed.add(m.name)
                break
        else:
            raise ValueError(f"migrations wait for each other: {[m.name for m in pending]}")
    return tuple(done)


def applied_names(db: sqlite3.Connection) -> list[str]:
    """The names recorded in `_fermix_migrations`, creating the table (and mapping a legacy version) if needed."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone()
    if exists is None:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > len(LEGACY_ORDER):
            raise ToolError(
                "state_too_new",
                f"state.db has schema version {version} but no migration names; upgrade fermix.",
                {"version": version},
            )
        db.execute(f"CREATE TABLE {TABLE} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        now = "strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'"
        for name in LEGACY_ORDER[:version]:
            db.execute(f"INSERT INTO {TABLE} (name, applied_at) VALUES (?, {now})", (name,))
    return [r[0] for r in db.execute(f"SELECT name FROM {TABLE} ORDER BY rowid")]


def apply_missing(db: sqlite3.Connection, migrations: Sequence[Migration]) -> int:
    """Apply each migration not yet recorded, in order, and record it; returns the count applied in all.

    Call inside a write transaction.
    """
    applied = set(applied_names(db))
    now = "strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'"
    for migration in migrations:
        if migration.name not in applied:
            migration.apply(db)
            db.execute(f"INSERT INTO {TABLE} (name, applied_at) VALUES (?, {now})", (migration.name,))
            applied.add(migration.name)
    db.execute(f"PRAGMA user_version = {len(applied)}")
    return len(applied)
