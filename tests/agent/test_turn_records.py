"""A turn's last tool call is recorded in the turn's own transaction; nothing is lost when that fails."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from fermix_cli.agent.transcripts import Transcript
from fermix_cli.core import cancel
from fermix_cli.core.errors import ToolError
from fermix_cli.core.state import StateDB
from tests.conftest import Env

STEPS = [
    [
        {"name": "glob_search", "arguments": {"pattern": "a*"}},
        {"name": "glob_search", "arguments": {"pattern": "b*"}},
    ],
    [{"name": "glob_search", "arguments": {"pattern": "c*"}}],
]


def count_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    count = [0]
    real = StateDB.write

    @contextlib.contextmanager
    def counting(self: StateDB, **kw: Any) -> Iterator[Any]:
        count[0] += 1
        with real(self, **kw) as c:
            yield c

    monkeypatch.setattr(StateDB, "write", counting)
    return count


def echo_agent(ctx: Any) -> Agent:
    agent = Agent(ctx, AgentOptions(model="echo"))
    agent.open()
    return agent


def test_the_last_call_of_a_turn_is_stored_with_the_turn(world: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = world.context()
    try:
        agent = echo_agent(ctx)
        writes = count_writes(monkeypatch)
        result = agent.run(json.dumps({"tool_calls": STEPS}))
        rows = ctx.state.query(
            "SELECT id, tool, ok FROM tool_calls WHERE session_id = ?", (agent.session_id,)
        )
        answered = ctx.state.query(
            "SELECT call_id FROM messages WHERE role = 'tool' AND conversation_id = ?", (agent.session_id,)
        )
    finally:
        ctx.close()
    assert result.status == "ok", result.error
    assert len(rows) == 3 and all(r["ok"] == 1 for r in rows)
    assert {r["id"] for r in rows} == {m["call_id"] for m in answered}
    # start_run, the first call of the two-call turn by itself, each turn (with its last call's record)
    # but the last, and the last (the final reply) with finish_run: one write fewer per turn that called
    # a tool than recording every call apart, and one fewer for the run's end.
    turns = result.iterations
    assert writes[0] == 1 + 1 + (turns - 1) + 1


def test_the_final_reply_is_stored_with_the_run_s_end(world: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's last reply and how the run ended are one write: both are there, or neither."""
    ctx = world.context()
    try:
        agent = echo_agent(ctx)
        writes = count_writes(monkeypatch)
        result = agent.run("hello there")
        first_run_writes = writes[0]
        stored = ctx.state.query(
            "SELECT m.role, m.content, r.status FROM messages m JOIN runs r ON r.id = m.run_id"
            " WHERE m.conversation_id = ? ORDER BY m.seq",
            (agent.session_id,),
        )

        def refused(self: Transcript, run_id: str, **kw: Any) -> None:
            with self.db.write() as c:
                self._store_turn(c, agent.session_id, run_id, kw["last_turn"][1], [], kw["last_turn"][2])
                raise ToolError("state_unavailable", "disk said no", {})

        monkeypatch.setattr(Transcript, "finish_run", refused)
        # The answer still comes back; the end that could not be recorded is said beside it.
        second = agent.run("second question")
        assert second.response and second.record_error is not None
        assert second.record_error.code == "state_unavailable"
        after = ctx.state.query(
            "SELECT role, content FROM messages WHERE conversation_id = ? ORDER BY seq", (agent.session_id,)
        )
        runs = ctx.state.query("SELECT status FROM runs WHERE conversation_id = ?", (agent.session_id,))
    finally:
        ctx.close()
    assert result.status == "ok" and first_run_writes == 2  # start_run, then the reply with finish_run
    assert [tuple(r) for r in stored] == [("user", "hello there", "ok"), ("assistant", result.response, "ok")]
    # The second run's reply was rolled back with its end: its question is stored, its answer is not.
    assert [r["role"] for r in after] == ["user", "assistant", "user"]
    assert sorted(r["status"] for r in runs) == ["ok", "running"]


def test_a_held_record_is_stored_when_the_turn_write_fails(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = world.context()
    real = Transcript.add_turn

    def failing(self: Transcript, session_id: str, run_id: str, response: Any, results: Any, *a: Any) -> None:
        if results:
            raise ToolError("state_unavailable", "disk said no", {})
        real(self, session_id, run_id, response, results, *a)

    try:
        agent = Agent(ctx, AgentOptions(model="echo"))
        monkeypatch.setattr(Transcript, "add_turn", failing)
        result = agent.run(json.dumps({"tool_calls": STEPS[1:]}))
        rows = ctx.state.query("SELECT tool, ok FROM tool_calls WHERE session_id = ?", (agent.session_id,))
        status = ctx.state.query("SELECT status FROM runs WHERE conversation_id = ?", (agent.session_id,))
    finally:
        ctx.close()
    assert result.status == "error" and result.error is not None
    assert [tuple(r) for r in rows] == [("glob_search", 1)]  # the call ran: its record is kept
    assert status[0]["status"] == "error"


def test_a_worker_thread_waits_for_the_model_in_one_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    naps: list[float] = []
    real_sleep = time.sleep

    def nap(seconds: float) -> None:
        naps.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", nap)
    t = threading.Thread(target=cancel.sleep_unless_interrupted, args=(0.12,))
    t.start()
    t.join()
    assert naps == [0.12]
    naps.clear()
    cancel.sleep_unless_interrupted(0.12)  # the main thread still wakes to look at the Ctrl-C flag
    assert len(naps) == 3


def test_a_worker_thread_sees_a_ctrl_c_flag_raised_before_its_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cancel._interrupt, "requested", True)
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            cancel.sleep_unless_interrupted(30)
        except KeyboardInterrupt as e:
            raised.append(e)

    t = threading.Thread(target=wait)
    started = time.monotonic()
    t.start()
    t.join(5)
    assert raised and time.monotonic() - started < 5


def _busy() -> Exception:
    import sqlite3

    e = sqlite3.OperationalError("database is locked")
    e.sqlite_errorcode = 5  # type: ignore[attr-defined]  # SQLITE_BUSY, as SQLite raises it
    return e


@pytest.mark.parametrize("busy_tries", [2, 1000])
def test_a_turn_write_that_meets_a_busy_state_db_waits_then_fails_typed(
    world: Env, monkeypatch: pytest.MonkeyPatch, busy_tries: int
) -> None:
    """state.db busy past the busy timeout while a turn is stored: the write is tried again; if it stays
    busy, the run fails `state_busy` (exit 1), never `internal_error` (a bug, exit 4)."""
    import fermix_cli.agent.loop as loop

    monkeypatch.setattr(loop, "FINISH_PATIENCE_SECONDS", 0.3)
    real = Transcript.add_turn
    tries = [0]

    def busy_at_first(self: Transcript, *a: Any) -> None:
        tries[0] += 1
        if tries[0] <= busy_tries:
            raise _busy()
        real(self, *a)

    ctx = world.context()
    try:
        agent = Agent(ctx, AgentOptions(model="echo"))
        monkeypatch.setattr(Transcript, "add_turn", busy_at_first)
        result = agent.run(json.dumps({"tool_calls": STEPS[1:]}))
        status = ctx.state.query("SELECT status FROM runs WHERE id = ?", (result.run_id,))
    finally:
        ctx.close()
    if busy_tries == 2:
        assert (result.status, result.error) == ("ok", None)
        assert status[0]["status"] == "ok"
    else:
        assert result.status == "error" and result.error is not None
        assert result.error.code == "state_busy" and int(result.error.exit_class) == 1
        assert status[0]["status"] == "error"
