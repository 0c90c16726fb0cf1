"""What a fan-out's workers share (the prepared context, toolbox and sandbox; lent state connections)
and what stays each worker's own (policy, session, transcript, tool records)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.agent import delegate
from fermix_cli.agent.delegate import Delegation, run_delegated
from fermix_cli.agent.subagents import fanout
from fermix_cli.agent.subagents.tools import WITHHELD_CLASSES
from fermix_cli.core.state import StateDB
from tests.conftest import Env
from tests.subagents.test_subagents import script

WRITE_ATTEMPTS = [
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "w.txt", "content": "x"}}]},
    {
        "tool_calls": [
            {
                "name": "tool_call",
                "arguments": {"name": "file_write", "arguments": {"path": "w.txt", "content": "x"}},
            }
        ]
    },
    {"tool_calls": [{"name": "glob_search", "arguments": {"pattern": "*.txt"}}]},
    {"text": "done"},
]


def worker(task_id: str, ceiling: frozenset[str]) -> tuple[str, Delegation]:
    return (
        task_id,
        Delegation(
            origin="subagent", label=f"subagent:{task_id}", prompt=f"task {task_id}", policy_ceiling=ceiling
        ),
    )


def test_workers_share_one_preparation_but_each_is_refused_file_write(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    script(world, [{"contains": "task", "responses": WRITE_ATTEMPTS}])
    (world.project / "a.txt").write_text("x")
    built: list[delegate.Prepared] = []

    def counting_prepare(*args: Any, **kw: Any) -> delegate.Prepared:
        built.append(delegate.prepare(*args, **kw))
        return built[-1]

    monkeypatch.setattr(fanout, "prepare", counting_prepare)
    seen: list[Any] = []
    real_run = fanout.run_delegated

    def spying_run(*args: Any, **kw: Any) -> Any:
        seen.append(kw["prepared"])
        return real_run(*args, **kw)

    monkeypatch.setattr(fanout, "run_delegated", spying_run)
    ctx = world.context(cwd=str(world.project))
    try:
        ceiling = frozenset({"read_only", "exec", "network", "external_api"})
        runs = fanout.fan_out(
            ctx, [worker(t, ceiling) for t in ("a", "b", "c")], max_concurrency=3, timeout=60
        )
        rows = ctx.state.query(
            "SELECT session_id, tool, ok, error_code FROM tool_calls ORDER BY session_id, started_at"
        )
        kids = ctx.state.query("SELECT id, parent_id, label FROM conversations WHERE parent_id IS NOT NULL")
        runs_per_kid = ctx.state.query(
            "SELECT conversation_id, count(*) AS n FROM runs GROUP BY conversation_id"
        )
    finally:
        ctx.close()
    assert [r.status for r in runs] == ["completed"] * 3
    # Built once for the three workers (same narrowing), and the same object reached each of them.
    assert len(built) == 1 and len(seen) == 3 and all(p is built[0] for p in seen)
    assert "file_write" not in built[0].groundwork.toolbox.dispatchable
    assert not (built[0].child.policy_ceiling or frozenset()) & WITHHELD_CLASSES
    assert not (world.project / "w.txt").exists()
    # Every worker was refused at execution, directly and through the bridge, in its own session.
    by_session: dict[str, list[tuple[str, int, str | None]]] = {}
    for r in rows:
        by_session.setdefault(r["session_id"], []).append((r["tool"], r["ok"], r["error_code"]))
    assert sorted(by_session) == sorted(r.session_id for r in runs)
    for calls in by_session.values():
        assert calls == [
            ("file_write", 0, "policy_denied"),
            ("file_write", 0, "policy_denied"),
            ("glob_search", 1, None),
        ]
    assert {k["id"]: (k["parent_id"], k["label"]) for k in kids} == {
        r.session_id: ("default", f"subagent:{t}") for t, r in zip("abc", runs, strict=True)
    }
    assert {r["conversation_id"]: r["n"] for r in runs_per_kid} == {r.session_id: 1 for r in runs}


def test_different_narrowings_get_their_own_preparation(world: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "ok"}]}])
    built: list[delegate.Prepared] = []

    def counting_prepare(*args: Any, **kw: Any) -> delegate.Prepared:
        built.append(delegate.prepare(*args, **kw))
        return built[-1]

    monkeypatch.setattr(fanout, "prepare", counting_prepare)
    ctx = world.context(cwd=str(world.project))
    try:
        wide = frozenset({"read_only", "exec"})
        narrow = frozenset({"read_only"})
        runs = fanout.fan_out(
            ctx, [worker("a", wide), worker("b", narrow), worker("c", wide)], max_concurrency=3, timeout=60
        )
    finally:
        ctx.close()
    assert [r.status for r in runs] == ["completed"] * 3
    assert [p.child.policy_ceiling for p in built] == [wide, narrow]
    assert "shell" in runs[0].tools and "shell" not in runs[1].tools and "shell" in runs[2].tools


def test_a_run_that_cannot_start_is_still_recorded_under_its_caller(world: Env) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "ok"}]}])
    ctx = world.context(cwd=str(world.project), session_id="parent")
    try:
        d = Delegation(origin="subagent", label="subagent:x", prompt="task x", provider="no-such-provider")
        run = run_delegated(ctx, d)
        kid = ctx.state.query(
            "SELECT parent_id, label, origin FROM conversations WHERE id = ?", (run.session_id,)
        )
        started = ctx.state.query(
            "SELECT count(*) AS n FROM runs WHERE conversation_id = ?", (run.session_id,)
        )
    finally:
        ctx.close()
    assert run.status == "failed" and run.error is not None
    assert [dict(k) for k in kid] == [{"parent_id": "parent", "label": "subagent:x", "origin": "subagent"}]
    assert started[0]["n"] == 0


def test_worker_sandbox_shares_the_callers_lists_not_its_roots(world: Env) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "ok"}]}])
    elsewhere = world.home / "elsewhere"
    elsewhere.mkdir()
    ctx = world.context(cwd=str(elsewhere), origin="cli")
    try:
        caller = ctx.sandbox
        assert any(r.path == str(elsewhere) for r in caller.roots)  # the caller's request cwd is a root
        ready = delegate.prepare(ctx, worker("a", frozenset({"read_only"}))[1])
        child = ready.child.sandbox
        assert child is not caller and child.protected is caller.protected
        assert all(r.path != str(elsewhere) for r in child.roots)  # not a root of an untrusted-local child
        # A run's context keeps the prepared sandbox; a context with other inputs builds its own.
        run_ctx = ready.child.derive(share_sandbox=True, extras={})
        assert run_ctx.sandbox is child
        assert ready.child.derive(share_sandbox=True, cwd=str(world.project)).sandbox is not child
        assert ready.child.derive(extras={}).sandbox is not child
    finally:
        ctx.close()


def test_lent_connections_are_reused_and_never_reused_mid_transaction(tmp_path: Path) -> None:
    owner = StateDB(tmp_path / "state.db")
    try:
        first = owner.lend()
        assert first is not owner
        out: list[Any] = []

        def use(db: StateDB) -> None:  # another thread than the one that opened it
            with db.write() as c:
                c.execute(
                    "INSERT INTO tool_calls VALUES ('x', 's', 't', 'cli', 'operator', '{}', 1, NULL,"
                    " NULL, '2026-01-01T00:00:00.000000Z', 1.0)"
                )
            out.append(db.query("SELECT count(*) AS n FROM tool_calls")[0]["n"])

        t = threading.Thread(target=use, args=(first,))
        t.start()
        t.join()
        assert out == [1]
        owner.take_back(first)
        assert owner.lend() is first  # the spare, not a new connection
        first.conn.execute("BEGIN")
        owner.take_back(first)  # handed back inside a transaction: closed, not kept
        second = owner.lend()
        assert second is not first
        with pytest.raises(Exception, match="closed"):
            first.conn.execute("SELECT 1")
        assert owner.query("SELECT count(*) AS n FROM tool_calls")[0]["n"] == 1
    finally:
        owner.close()
    owner.take_back(second)  # after the owner closed: closed too
    with pytest.raises(Exception, match="closed"):
        second.conn.execute("SELECT 1")


def test_a_narrowing_that_cannot_be_prepared_fails_only_its_own_workers(world: Env) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "ok"}]}])
    ctx = world.context(cwd=str(world.project))
    try:
        bad = Delegation(
            origin="subagent", label="subagent:bad", prompt="task bad", toolset="no-such-toolset"
        )
        runs = fanout.fan_out(
            ctx, [("bad", bad), worker("good", frozenset({"read_only"}))], max_concurrency=2, timeout=60
        )
        kids = ctx.state.query("SELECT label FROM conversations WHERE parent_id = 'default' ORDER BY label")
    finally:
        ctx.close()
    assert [r.status for r in runs] == ["failed", "completed"]
    assert runs[0].error is not None and runs[0].error["code"] == "invalid_toolset"
    assert [k["label"] for k in kids] == ["subagent:bad", "subagent:good"]


def test_the_workers_messages_join_the_search_index_in_one_batch_after_them(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fermix_cli.core import ftsbatch

    script(world, [{"contains": "task", "responses": [{"text": "wombat answer"}]}])
    batches: list[int] = []
    real = ftsbatch.index_pending

    def counting(conn: Any, fts: str) -> int:
        batches.append(real(conn, fts))
        return batches[-1]

    monkeypatch.setattr(ftsbatch, "index_pending", counting)
    ctx = world.context(cwd=str(world.project))
    try:
        ceiling = frozenset({"read_only"})
        runs = fanout.fan_out(
            ctx, [worker(t, ceiling) for t in ("a", "b", "c")], max_concurrency=3, timeout=60
        )
        pending = ctx.state.query("SELECT count(*) FROM messages_fts_pending")[0][0]
        found = ctx.state.query("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'wombat'")[0][0]
    finally:
        ctx.close()
    assert [r.status for r in runs] == ["completed"] * 3
    # One batch for the three workers' prompts and replies (it was one per worker), and nothing left.
    assert batches == [6]
    assert pending == 0 and found == 3
