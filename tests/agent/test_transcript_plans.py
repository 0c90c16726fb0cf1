"""The transcripts' lookups by tool-call id go through the run's index: messages carry no index on
`call_id` alone (migration `agent_006_no_call_index`), which cost every model turn's commit two pages."""

from __future__ import annotations

from tests.conftest import Env

# The statements of agent/transcripts.py that look messages up by call id, with their parameters.
BY_CALL = (
    "SELECT 1 FROM messages WHERE run_id = ? AND call_id = ? LIMIT 1",
    "SELECT t.id, t.args_json FROM tool_calls t JOIN messages m ON m.call_id = t.id WHERE m.run_id = ?",
)


def test_lookups_by_call_id_use_the_run_index_and_scan_nothing(world: Env) -> None:
    ctx = world.context()
    db = ctx.state.conn
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "messages_call" not in names
    assert "messages_run" in names
    for sql in BY_CALL:
        plan = " | ".join(r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql, ("r", "c")[: sql.count("?")]))
        assert "messages_run" in plan, plan
        assert "SCAN" not in plan, plan
    ctx.close()


def test_an_old_home_loses_the_index_on_upgrade(world: Env) -> None:
    ctx = world.context()
    ctx.state.conn.execute("CREATE INDEX messages_call ON messages(call_id)")
    ctx.state.conn.execute("DELETE FROM _fermix_migrations WHERE name = 'agent_006_no_call_index'")
    version = ctx.state.conn.execute("PRAGMA user_version").fetchone()[0]
    ctx.state.conn.execute(f"PRAGMA user_version = {version - 1}")
    ctx.close()
    again = world.context()
    names = {r[0] for r in again.state.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "messages_call" not in names
    again.close()
