"""The record a call of a tool that is not read-only leaves before it runs, and its ending.

A recorded call's `tool_calls` row is written when the call ends (a model loop writes it with the turn
that carries its result). A process killed outright while the call runs (SIGKILL, the OOM killer, a
crash) never gets there, and the command it ran, the file it wrote or the message it sent would leave no
trace. So `registry.invoke` first writes a `tool_call_starts` row, in its own transaction, for every
recorded call of a tool that is not declared read-only; the transaction that stores the call's
`tool_calls` row deletes it (`insert_call_records`). A row whose owner died is ended `interrupted` by
the next `fermix ask`, `agent` or `logs` (`close_orphaned_calls`), as orphaned runs are. Read-only tools
write no start: they change nothing, and a model's searches stay one transaction each.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import ToolContext
    from .state import StateDB

TABLE = "tool_call_starts"
STARTED = "started"
INTERRUPTED = "interrupted"
INTERRUPTED_MESSAGE = (
    "the fermix process running it ended (killed or crashed) before the call's end was recorded; what "
    "it did before that stands, so check before running it again"
)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def note_start(
    ctx: ToolContext, call_id: str, tool: str, args_json: str, started: float, run_id: str | None
) -> None:
    """Write, and commit, the start of call `call_id` before it runs."""
    from .procid import current_owner

    with ctx.state.write() as db:
        db.execute(
            f"INSERT OR REPLACE INTO {TABLE} (id, session_id, run_id, tool, origin, trust, args_json,"
            " started_at, owner) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                call_id,
                ctx.session_id,
                run_id,
                tool,
                ctx.origin,
                ctx.trust,
                args_json,
                iso(started),
                current_owner(),
            ),
        )


def forget_starts(db: sqlite3.Connection, call_ids: Sequence[str]) -> None:
    """Delete the starts of calls whose end is stored in this transaction (the caller's)."""
    db.executemany(f"DELETE FROM {TABLE} WHERE id = ?", [(i,) for i in call_ids])


def close_orphaned_calls(state: StateDB, now: datetime) -> int:
    """End `interrupted` every call still `started` whose process has died; the count ended.

    Cheap when there is none: the open starts are a partial index, and a live process has only its
    running calls there.
    """
    from .procid import owner_gone

    rows = state.query(f"SELECT id, owner FROM {TABLE} WHERE status = '{STARTED}'")
    dead = [r["id"] for r in rows if owner_gone(r["owner"])]
    if not dead:
        return 0
    ended = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    closed = 0
    with state.write() as db:
        for call_id in dead:
            closed += db.execute(
                f"UPDATE {TABLE} SET status = '{INTERRUPTED}', ended_at = ? WHERE id = ? AND status = ?",
                (ended, call_id, STARTED),
            ).rowcount
    return closed


def unfinished_calls(state: StateDB, run_id: str) -> list[dict[str, Any]]:
    """The calls of model run `run_id` whose end was never stored, as `fermix logs` lists a call:
    `{id, name, arguments, ok, output, error_code, status, started_at}`; `status` is `interrupted`, or
    `running` (with `ok` None) for one whose process still lives."""
    rows = state.query(
        f"SELECT id, tool, args_json, status, started_at FROM {TABLE} WHERE run_id = ? ORDER BY started_at",
        (run_id,),
    )
    return [call_entry(r) for r in rows]


def call_entry(row: Any) -> dict[str, Any]:
    interrupted = row["status"] == INTERRUPTED
    try:
        arguments = json.loads(row["args_json"])
    except ValueError:
        arguments = row["args_json"]
    return {
        "id": row["id"],
        "name": row["tool"],
        "arguments": arguments,
        "ok": False if interrupted else None,
        "output": f"interrupted: {INTERRUPTED_MESSAGE}" if interrupted else "",
        "error_code": INTERRUPTED if interrupted else None,
        "status": INTERRUPTED if interrupted else "running",
        "started_at": row["started_at"],
    }


def orphaned_calls_readonly(state_db: Path) -> list[str]:
    """Calls still `started` whose process has died, read-only (for `fermix doctor`)."""
    from .procid import owner_gone

    if not state_db.exists():
        return []
    conn = sqlite3.connect(f"{state_db.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
    try:
        rows = conn.execute(f"SELECT id, owner FROM {TABLE} WHERE status = '{STARTED}'").fetchall()
    except sqlite3.Error as e:
        from .state import schema_missing

        if not schema_missing(e):
            raise
        return []  # a state.db from before call starts were recorded
    finally:
        conn.close()
    return [call_id for call_id, owner in rows if owner_gone(owner)]


def recent_calls(state: StateDB, *, session_id: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The newest `limit` recorded calls (oldest first), ended or not, optionally of one session.

    Each is `{id, session_id, tool, origin, trust, arguments, status, error_code, started_at,
    duration_ms}`; `status` is `ok`, `error`, `running` (started, its process alive) or `interrupted`
    (`duration_ms` null for those two).
    """
    where = " WHERE session_id = ?" if session_id is not None else ""
    params: tuple[Any, ...] = (session_id,) if session_id is not None else ()
    rows = state.query(
        "SELECT * FROM ("
        " SELECT id, session_id, tool, origin, trust, args_json,"
        "  CASE WHEN ok THEN 'ok' ELSE 'error' END AS status, error_code, started_at, duration_ms"
        f"  FROM tool_calls{where}"
        " UNION ALL"
        " SELECT id, session_id, tool, origin, trust, args_json,"
        f"  CASE status WHEN '{STARTED}' THEN 'running' ELSE status END, NULL, started_at, NULL"
        f"  FROM {TABLE}{where}"
        ") ORDER BY started_at DESC LIMIT ?",
        (*params, *params, limit),
    )
    out = []
    for r in reversed(rows):
        try:
            arguments = json.loads(r["args_json"])
        except ValueError:
            arguments = r["args_json"]
        error_code = INTERRUPTED if r["status"] == INTERRUPTED else r["error_code"]
        out.append(
            {
                "id": r["id"],
                "session_id": r["session_id"],
                "tool": r["tool"],
                "origin": r["origin"],
                "trust": r["trust"],
                "arguments": arguments,
                "status": r["status"],
                "error_code": error_code,
                "started_at": r["started_at"],
                "duration_ms": r["duration_ms"],
            }
        )
    return out
