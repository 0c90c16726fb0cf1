"""Transcripts in state.db: conversations (sessions), runs (one per prompt), messages, full-text search.

`run_json` builds the one JSON shape that both `fermix ask --json` (live) and `fermix logs --json`
print. Writes are short BEGIN IMMEDIATE transactions, never held across a model or tool call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.records import Record
from ..core.state import StateDB
from .messages import Message, ModelResponse, OpaqueBlock, ToolCall, Usage

if TYPE_CHECKING:
    from ..core.registry import CallRecord

TITLE_CHARS = 80


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_session_id() -> str:
    return f"s_{uuid.uuid4().hex[:12]}"


def new_run_id() -> str:
    return f"r_{uuid.uuid4().hex[:12]}"


def fts_query(text: str) -> str:
    """User text as an FTS5 query: every word must appear (each quoted, so no operator syntax)."""
    words = [w.replace('"', '""') for w in text.split()]
    return " ".join(f'"{w}"' for w in words)


def orphaned_runs_readonly(state_db: Path) -> list[str]:
    """Runs still `running` whose process has died, read-only (for `fermix doctor`, which must not
    change the file): the next `fermix ask`, `agent` or `logs` ends them `interrupted`."""
    import sqlite3

    from ..core.procid import owner_gone

    if not state_db.exists():
        return []
    conn = sqlite3.connect(f"{state_db.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
    try:
        rows = conn.execute(
            "SELECT id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL"
        ).fetchall()
    except sqlite3.Error as e:
        from ..core.state import schema_missing

        if not schema_missing(e):
            raise  # unreadable: the caller says so
        return []  # an older state.db without owners (or no transcripts yet)
    finally:
        conn.close()
    return [run_id for run_id, owner in rows if owner_gone(owner)]


class Transcript:
    """Reads and writes the transcript tables of one StateDB."""

    def __init__(self, db: StateDB, clock: Callable[[], datetime], *, index_at_end: bool = True) -> None:
        self.db = db
        self.clock = clock
        # `finish_run` indexes the messages pending for search; False leaves them to the caller's
        # batch (a fan-out's), or to the next run's end or search (`ftsbatch.catch_up`).
        self.index_at_end = index_at_end

    def _now(self) -> str:
        return iso(self.clock())

    # ----- sessions ------------------------------------------------------------------------------

    def exists(self, session_id: str) -> bool:
        return bool(self.db.query("SELECT 1 FROM conversations WHERE id = ?", (session_id,)))

    def latest_session(self) -> str | None:
        rows = self.db.query("SELECT id FROM conversations ORDER BY updated_at DESC, rowid DESC LIMIT 1")
        return str(rows[0]["id"]) if rows else None

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT c.id, c.title, c.provider, c.model, c.created_at, c.updated_at, c.parent_id, c.label,"
            " (SELECT count(*) FROM runs r WHERE r.conversation_id = c.id) AS runs"
            " FROM conversations c ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ?",
            (limit,),
        )
        return [
            {
                "session_id": r["id"],
                "title": r["title"],
                "provider": r["provider"],
                "model": r["model"],
                "runs": r["runs"],
                "parent_id": r["parent_id"],
                "label": r["label"],
                "created_at": r["created_at"],
                "updated_at": r["updated_at"],
            }
            for r in rows
        ]

    def history(self, session_id: str) -> list[Message]:
        """The conversation as provider-neutral messages, with any call left unanswered closed off."""
        rows = self.db.query(
            "SELECT role, content, tool_calls_json, provider_call_id, tool_name, is_error, opaque_json"
            " FROM messages WHERE conversation_id = ? ORDER BY seq",
            (session_id,),
        )
        out: list[Message] = []
        for r in rows:
            calls = [ToolCall.from_json(c) for c in json.loads(r["tool_calls_json"] or "[]")]
            opaque = [OpaqueBlock.from_json(b) for b in json.loads(r["opaque_json"] or "[]")]
            out.append(
                Message(
                    role=r["role"],
                    content=r["content"],
                    tool_calls=calls,
                    tool_call_id=r["provider_call_id"],
                    tool_name=r["tool_name"],
                    is_error=bool(r["is_error"]),
                    opaque_blocks=opaque,
                )
            )
        return close_open_calls(out)

    # ----- runs ----------------------------------------------------------------------------------

    def start_run(
        self,
        session_id: str,
        *,
        prompt: str,
        provider: str,
        model: str,
        toolset: str | None,
        origin: str,
        trust: str,
        parent: tuple[str, str] | None = None,
        run_id: str | None = None,
    ) -> str:
        """Record a new run and its prompt, creating the conversation on its first run.

        `parent` (session, label) links a new conversation under its caller's (a delegated run).
        `run_id` is the id to store it under (`new_run_id()`), made beforehand by a caller that must be
        able to end the run if it is stopped as the row is committed.
        """
        from ..core.procid import current_owner

        run_id = run_id or new_run_id()
        now = self._now()
        parent_id, label = parent if parent is not None else (None, None)
        with self.db.write() as c:
            c.execute(
                "INSERT OR IGNORE INTO conversations (id, origin, trust, created_at, updated_at, parent_id,"
                " label) VALUES (?,?,?,?,?,?,?)",
                (session_id, origin, trust, now, now, parent_id, label),
            )
            c.execute(
                "INSERT INTO runs (id, conversation_id, status, provider, model, toolset, prompt, started_at,"
                " owner) VALUES (?,?,?,?,?,?,?,?,?)",
                (run_id, session_id, "running", provider, model, toolset, prompt, now, current_owner()),
            )
            c.execute(
                "UPDATE conversations SET updated_at = ?, provider = ?, model = ?,"
                " title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?",
                (now, provider, model, " ".join(prompt.split())[:TITLE_CHARS], session_id),
            )
            self._insert(c, session_id, run_id, role="user", kind="text", content=prompt)
        return run_id

    def add_turn(
        self,
        session_id: str,
        run_id: str,
        response: ModelResponse,
        results: list[ToolOutcome],
        call_records: Sequence[CallRecord] = (),
    ) -> None:
        """Store a model reply and the answers to its tool calls in one transaction.

        `call_records` are tool_calls rows held back for this transaction (the turn's last call).
        """
        with self.db.write() as c:
            if self._given_up(c, run_id):  # `abandon_runs` stored this run's turn in flight already
                self._store_records(c, call_records)
                return
            self._store_turn(c, session_id, run_id, response, results, call_records)

    @staticmethod
    def _given_up(c: Any, run_id: str) -> bool:
        """Whether the run was ended by another than its own loop (`abandon_runs`): its late writes
        keep only what the registry recorded of its calls, and the counts it reached."""
        row = c.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row is not None and row[0] != "running"

    @staticmethod
    def _store_records(c: Any, call_records: Sequence[CallRecord]) -> None:
        if call_records:
            from ..core.registry import insert_call_records

            insert_call_records(c, call_records)

    def _store_turn(
        self,
        c: Any,
        session_id: str,
        run_id: str,
        response: ModelResponse,
        results: list[ToolOutcome],
        call_records: Sequence[CallRecord],
    ) -> None:
        calls = [call.to_json() for call in response.tool_calls]
        opaque = [block.to_json() for block in response.opaque_blocks]
        if call_records:
            from ..core.registry import insert_call_records

            insert_call_records(c, call_records)
        seq = self._insert(
            c,
            session_id,
            run_id,
            role="assistant",
            kind="tool_calls" if calls else "text",
            content=response.text,
            tool_calls_json=json.dumps(calls, ensure_ascii=False) if calls else None,
            opaque_json=json.dumps(opaque, ensure_ascii=False) if opaque else None,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
        )
        for r in results:
            seq = self._insert(
                c,
                session_id,
                run_id,
                after=seq,  # the turn's messages follow each other inside this transaction
                role="tool",
                kind="tool_result",
                content=r.output,
                call_id=r.call.call_id,
                provider_call_id=r.call.wire_id,
                tool_name=r.name,
                is_error=int(not r.ok),
                error_code=r.error_code,
            )

    def add_call_records(self, call_records: Sequence[CallRecord]) -> None:
        """Store tool_calls rows held for a turn that was never stored (the run failed first)."""
        from ..core.registry import insert_call_records

        with self.db.write() as c:
            insert_call_records(c, call_records)

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        response: str,
        iterations: int,
        usage: Usage,
        error: dict[str, Any] | None,
        last_turn: tuple[str, ModelResponse, Sequence[CallRecord]] | None = None,
    ) -> None:
        """Record how the run ended. `last_turn` (session id, the final reply, tool_calls rows held for
        it) is stored in the same transaction: a run's last reply and its end are written together."""
        from ..core.ftsbatch import index_pending

        with self.db.write() as c:
            given_up = self._given_up(c, run_id)
            if last_turn is not None:
                session_id, reply, call_records = last_turn
                if given_up:
                    self._store_records(c, call_records)
                else:
                    self._store_turn(c, session_id, run_id, reply, [], call_records)
            # The run's messages (and any a run that died left) join the search index in one batch.
            if self.index_at_end:
                index_pending(c, "messages_fts")
            if given_up:
                # A run its caller already gave up on (`abandon_runs`) keeps that ending; its counts
                # rise to what it used by the end (a model call that answered late was still paid for).
                c.execute(
                    "UPDATE runs SET iterations = max(iterations, ?), input_tokens = max(input_tokens, ?),"
                    " output_tokens = max(output_tokens, ?) WHERE id = ?",
                    (iterations, usage.input_tokens, usage.output_tokens, run_id),
                )
                return
            c.execute(
                "UPDATE runs SET status = ?, response = ?, iterations = ?, input_tokens = ?,"
                " output_tokens = ?, error_json = ?, ended_at = ? WHERE id = ? AND status = 'running'",
                (
                    status,
                    response,
                    iterations,
                    usage.input_tokens,
                    usage.output_tokens,
                    json.dumps(error) if error else None,
                    self._now(),
                    run_id,
                ),
            )

    def close_orphaned_runs(self) -> int:
        """End `interrupted` every run still `running` whose process has died (a SIGKILL, a crash, a
        reboot): nothing else would ever end it. Cheap when there is none (a partial index). The calls
        such a process left started (of any run, or none: an MCP call) are ended `interrupted` too."""
        from ..core.callstarts import close_orphaned_calls
        from ..core.procid import owner_gone

        close_orphaned_calls(self.db, self.clock())
        rows = self.db.query("SELECT id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL")
        dead = [r["id"] for r in rows if owner_gone(r["owner"])]
        if not dead:
            return 0
        error = {
            "code": "interrupted",
            "message": "the fermix process running it ended (killed or crashed) before the run finished",
            "details": {},
        }
        closed = 0
        with self.db.write() as c:
            for run_id in dead:
                closed += c.execute(
                    "UPDATE runs SET status = 'interrupted', error_json = ?, ended_at = ?"
                    " WHERE id = ? AND status = 'running'",
                    (json.dumps(error), self._now(), run_id),
                ).rowcount
        return closed

    def abandon_runs(
        self,
        session_id: str,
        status: str,
        error: dict[str, Any],
        *,
        iterations: int | None = None,
        usage: Usage | None = None,
        turn: tuple[ModelResponse, Sequence[ToolOutcome]] | None = None,
    ) -> int:
        """End the runs of `session_id` still marked running: a delegated run its caller stopped
        waiting for (timed out, or the caller interrupted), whose thread may never get to end it (the
        process can exit first). What is known of it is kept: its model calls and tokens so far, and
        `turn`, the reply in flight with its calls answered (unless its own loop stored it already).
        A late `add_turn` or `finish_run` of such a run leaves this ending and these messages in place."""
        from ..core.ftsbatch import index_pending

        with self.db.write() as c:
            runs = [
                r[0]
                for r in c.execute(
                    "SELECT id FROM runs WHERE conversation_id = ? AND status = 'running' ORDER BY rowid",
                    (session_id,),
                ).fetchall()
            ]
            if not runs:
                return 0
            if turn is not None and not self._turn_stored(c, runs[-1], turn[0]):
                self._store_turn(c, session_id, runs[-1], turn[0], list(turn[1]), [])
            for run_id in runs:
                c.execute(
                    "UPDATE runs SET status = ?, error_json = ?, ended_at = ?,"
                    " iterations = max(iterations, ?), input_tokens = max(input_tokens, ?),"
                    " output_tokens = max(output_tokens, ?) WHERE id = ?",
                    (
                        status,
                        json.dumps(error),
                        self._now(),
                        iterations or 0,
                        usage.input_tokens if usage is not None else 0,
                        usage.output_tokens if usage is not None else 0,
                        run_id,
                    ),
                )
            index_pending(c, "messages_fts")
        return len(runs)

    @staticmethod
    def _turn_stored(c: Any, run_id: str, reply: ModelResponse) -> bool:
        """Whether the run's loop stored `reply` already (a reply and its calls' results go in together)."""
        if not reply.tool_calls:
            return False
        row = c.execute(
            "SELECT 1 FROM messages WHERE run_id = ? AND call_id = ? LIMIT 1",
            (run_id, reply.tool_calls[0].call_id),
        ).fetchone()
        return row is not None

    def _insert(self, c: Any, session_id: str, run_id: str, *, after: int | None = None, **cols: Any) -> int:
        """Insert one message and return its seq: the next after `after` (the seq this transaction
        inserted last), else the next in the conversation."""
        if after is None:
            seq = c.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE conversation_id = ?", (session_id,)
            ).fetchone()[0]
        else:
            seq = after + 1
        cols.update(conversation_id=session_id, run_id=run_id, seq=seq, created_at=self._now())
        names = ", ".join(cols)
        marks = ", ".join("?" for _ in cols)
        c.execute(f"INSERT INTO messages ({names}) VALUES ({marks})", tuple(cols.values()))
        return int(seq)

    # ----- reading back --------------------------------------------------------------------------

    def run_json(self, run_id: str) -> dict[str, Any]:
        rows = self.db.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise KeyError(run_id)
        return self._run_record(rows[0])

    def runs(
        self, *, session_id: str | None = None, query: str | None = None, limit: int = 10
    ) -> list[dict[str, Any]]:
        """The newest `limit` runs (oldest first), optionally of one session or matching a search."""
        where, params = [], []
        if session_id is not None:
            where.append("r.conversation_id = ?")
            params.append(session_id)
        matches: dict[str, list[dict[str, Any]]] = {}
        if query is not None:
            for hit in self.search(query, session_id=session_id, limit=500):
                matches.setdefault(hit["run_id"], []).append(hit)
            if not matches:
                return []
            where.append(f"r.id IN ({', '.join('?' for _ in matches)})")
            params.extend(matches)
        sql = "SELECT r.* FROM runs r"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.started_at DESC, r.rowid DESC LIMIT ?"
        rows = self.db.query(sql, (*params, limit))
        out = []
        for row in reversed(rows):
            record = self._run_record(row)
            if query is not None:
                record["matches"] = matches.get(row["id"], [])
            out.append(record)
        return out

    def search(self, text: str, *, session_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        q = fts_query(text)
        if not q:
            return []
        from ..core.ftsbatch import catch_up

        catch_up(self.db, "messages_fts")  # the messages stored since the last run ended, this run's too
        sql = (
            "SELECT m.conversation_id, m.run_id, m.seq, m.role, m.kind, m.created_at,"
            " snippet(messages_fts, 2, '[', ']', '…', 12) AS snippet"
            " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
            " WHERE messages_fts MATCH ?"
        )
        params: list[Any] = [q]
        if session_id is not None:
            sql += " AND m.conversation_id = ?"
            params.append(session_id)
        sql += " ORDER BY rank LIMIT ?"
        params.append(limit)
        return [
            {
                "session_id": r["conversation_id"],
                "run_id": r["run_id"],
                "seq": r["seq"],
                "role": r["role"],
                "kind": r["kind"],
                "snippet": r["snippet"],
                "created_at": r["created_at"],
            }
            for r in self.db.query(sql, params)
        ]

    def messages(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT seq, role, kind, content, tool_calls_json, call_id, tool_name, is_error, error_code"
            " FROM messages WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [dict(r) for r in rows]

    def _run_record(self, run: Any) -> dict[str, Any]:
        msgs = self.messages(run["id"])
        requested: dict[str, dict[str, Any]] = {}
        for m in msgs:
            for call in json.loads(m["tool_calls_json"] or "[]"):
                requested[call["call_id"]] = call
        recorded = {
            r["id"]: r
            for r in self.db.query(
                "SELECT t.id, t.args_json FROM tool_calls t JOIN messages m ON m.call_id = t.id"
                " WHERE m.run_id = ?",
                (run["id"],),
            )
        }
        calls = []
        for m in msgs:
            if m["role"] != "tool":
                continue
            raw = recorded[m["call_id"]]["args_json"] if m["call_id"] in recorded else None
            if raw is None:
                raw = requested.get(m["call_id"], {}).get("arguments", "")
            entry: dict[str, Any] = {
                "id": m["call_id"],
                "name": m["tool_name"],
                "arguments": ToolCall(m["tool_name"] or "", raw or "", "").parsed_arguments(),
                "ok": not m["is_error"],
                "output": m["content"],
            }
            if m["error_code"]:
                entry["error_code"] = m["error_code"]
            calls.append(entry)
        # A call whose end was never stored (its process died while it ran, or before the turn that
        # carries its result was written) is listed from its start record.
        from ..core.callstarts import unfinished_calls

        answered = {c["id"] for c in calls}
        calls += [c for c in unfinished_calls(self.db, run["id"]) if c["id"] not in answered]
        record: dict[str, Any] = {
            "status": run["status"],
            "response": run["response"],
            "session_id": run["conversation_id"],
            "tool_calls": calls,
            "usage": {"input_tokens": run["input_tokens"], "output_tokens": run["output_tokens"]},
            "run_id": run["id"],
            "provider": run["provider"],
            "model": run["model"],
            "iterations": run["iterations"],
            "prompt": run["prompt"],
            "started_at": run["started_at"],
            "ended_at": run["ended_at"],
        }
        if run["error_json"]:
            record["error"] = json.loads(run["error_json"])
        return record


class ToolOutcome(Record, frozen=True):
    """What one tool call returned, as the model saw it."""

    call: ToolCall
    name: str
    ok: bool
    output: str
    error_code: str | None
    images: tuple[str, ...] = ()


def close_open_calls(messages: list[Message]) -> list[Message]:
    """Answer every tool call that has no result (a crash mid-turn), so providers accept the history."""
    out: list[Message] = []
    pending: list[ToolCall] = []

    def flush() -> None:
        for call in pending:
            out.append(
                Message(
                    role="tool",
                    content="cancelled: this call never ran (the run stopped first)",
                    tool_call_id=call.wire_id,
                    tool_name=call.name,
                    is_error=True,
                )
            )
        pending.clear()

    for m in messages:
        if m.role == "tool":
            pending[:] = [c for c in pending if c.wire_id != m.tool_call_id]
        else:
            flush()
        out.append(m)
        if m.role == "assistant":
            pending.extend(m.tool_calls)
    flush()
    return out
