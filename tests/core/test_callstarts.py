"""Start records: a recorded call of a tool that is not read-only is in state.db before it runs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.registry import default_registry
from tests.conftest import Env

# Run by the command under test, while its own call runs: prints the start rows state.db holds then.
PEEK = (
    "import json, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "print(json.dumps(c.execute('SELECT id, tool, status, session_id FROM tool_call_starts').fetchall()))"
)


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_shell_call_s_start_is_committed_before_the_command_runs(world: Env) -> None:
    db = world.fermix_home / "state.db"
    ctx = world.context(record_calls=True, session_id="s-1")
    try:
        command = f"'{sys.executable}' -c \"{PEEK}\" '{db}'"
        result = default_registry().invoke("shell", {"command": command}, ctx)
    finally:
        ctx.close()
    ((call_id, tool, status, session),) = json.loads(result["output"])
    assert (tool, status, session) == ("shell", "started", "s-1")
    # Its end replaced it: the tool_calls row under the same id, and no start left.
    assert rows(db, "SELECT id, tool, ok FROM tool_calls") == [(call_id, "shell", 1)]
    assert rows(db, "SELECT * FROM tool_call_starts") == []


def test_a_failed_call_s_start_is_replaced_by_its_record_too(world: Env) -> None:
    from fermix_cli.core.errors import ToolError

    ctx = world.context(record_calls=True)
    try:
        with pytest.raises(ToolError):
            default_registry().invoke("shell", {"command": "exit 3"}, ctx)
    finally:
        ctx.close()
    db = world.fermix_home / "state.db"
    assert rows(db, "SELECT tool, ok, error_code FROM tool_calls") == [("shell", 0, "exit_nonzero")]
    assert rows(db, "SELECT * FROM tool_call_starts") == []


def write_transactions(world: Env, name: str, args: dict[str, Any]) -> list[str]:
    """The write statements one recorded call of `name` runs on state.db."""
    ctx = world.context(record_calls=True)
    seen: list[str] = []
    try:
        ctx.state.conn.set_trace_callback(seen.append)
        default_registry().invoke(name, args, ctx)
    finally:
        ctx.close()
    writes = [s for s in seen if s.startswith(("BEGIN IMMEDIATE", "INSERT", "DELETE"))]
    return [s.split(" (")[0].split(" WHERE")[0] for s in writes]  # the statement, not its values


def test_read_only_calls_keep_their_one_transaction(world: Env) -> None:
    """glob_search (read-only) writes its record in one transaction, as before; file_write (not
    read-only) first commits its start in a transaction of its own."""
    (world.project / "a.txt").write_text("x")
    searched = write_transactions(world, "glob_search", {"pattern": "*.txt"})
    assert searched == ["BEGIN IMMEDIATE", "INSERT INTO tool_calls"]
    wrote = write_transactions(world, "file_write", {"path": "b.txt", "content": "y"})
    assert wrote == [
        "BEGIN IMMEDIATE",
        "INSERT OR REPLACE INTO tool_call_starts",
        "BEGIN IMMEDIATE",
        "INSERT INTO tool_calls",
        "DELETE FROM tool_call_starts",
    ]


def test_which_tools_leave_a_start() -> None:
    """Read-only means read-only both ways the registry says it: a tool whose policy class is
    read_only but whose hints say it has effects (react sends a reaction) leaves a start too."""
    reg = default_registry()
    assert reg.get("glob_search").declared_read_only and reg.get("file_read").declared_read_only
    for name in ("shell", "bash", "file_write", "git_write", "schedule_job", "web_fetch", "react"):
        assert not reg.get(name).declared_read_only, name


def test_calls_are_not_recorded_by_fermix_tool_so_they_leave_no_start(world: Env) -> None:
    """`fermix tool NAME` records no call (the owner at the keyboard sees the result), so it writes no
    start record either: a machine call does not open state.db at all."""
    r = world.tool("shell", {"command": "echo hi"})
    assert r.code == 0, r.stderr
    assert not (world.fermix_home / "state.db").exists()


def dead_owner() -> str:
    from fermix_cli.core.procid import process_start

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(child.pid)
    child.wait()
    return f"{os.uname().nodename}:{child.pid}:{start or ''}"


def test_only_a_dead_process_s_starts_are_ended_interrupted(world: Env) -> None:
    from fermix_cli.core.callstarts import close_orphaned_calls, orphaned_calls_readonly, recent_calls
    from fermix_cli.core.procid import current_owner

    ctx = world.context()
    try:
        with ctx.state.write() as c:
            for call_id, owner in (("call_dead", dead_owner()), ("call_live", current_owner())):
                c.execute(
                    "INSERT INTO tool_call_starts (id, session_id, tool, origin, trust, args_json,"
                    " started_at, owner) VALUES (?, 's', 'shell', 'mcp', 'operator', '{}', ?, ?)",
                    (call_id, f"2026-01-01T00:00:0{len(call_id)}.000000Z", owner),
                )
        assert orphaned_calls_readonly(ctx.paths.state_db) == ["call_dead"]
        now = datetime(2026, 1, 2, tzinfo=UTC)
        assert close_orphaned_calls(ctx.state, now) == 1
        assert close_orphaned_calls(ctx.state, now) == 0  # once
        listed = {c["id"]: (c["status"], c["error_code"]) for c in recent_calls(ctx.state)}
    finally:
        ctx.close()
    assert listed == {"call_dead": ("interrupted", "interrupted"), "call_live": ("running", None)}
    assert rows(ctx.paths.state_db, "SELECT id, status, ended_at FROM tool_call_starts ORDER BY id") == [
        ("call_dead", "interrupted", "2026-01-02T00:00:00.000000Z"),
        ("call_live", "started", None),
    ]
    assert orphaned_calls_readonly(ctx.paths.state_db) == []


def test_logs_calls_refuses_what_it_cannot_combine(world: Env) -> None:
    r = world.run("logs", "--calls", "-q", "x")
    assert r.code == 2 and "--calls" in r.stderr
    assert not (world.fermix_home / "state.db").exists()
