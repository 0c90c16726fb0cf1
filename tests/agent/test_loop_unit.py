"""The loop in-process: repeat guard, caps by origin, interrupts, observers, owner confirmation."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from fermix_cli.agent.loop import RepeatGuard, RunResult
from fermix_cli.agent.messages import ModelRequest, StreamEvent, TextDelta, Usage
from fermix_cli.agent.providers.echo import EchoProvider
from fermix_cli.cli.ask_cmd import run_exit_code
from fermix_cli.core.approval import confirm_with_owner
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import Params, Registry, ToolSpec
from tests.conftest import Env


@pytest.mark.parametrize(
    ("calls", "verdicts"),
    [
        (["a", "a", "a", "a"], ["ok", "ok", "warn", "stop"]),
        (["a", "b", "a", "b", "a", "b"], ["ok"] * 6),
        (["a", "a", "b", "a", "a"], ["ok", "ok", "ok", "ok", "ok"]),
        (["a", "a", "a", "b", "b", "b"], ["ok", "ok", "warn", "ok", "ok", "stop"]),
    ],
)
def test_repeat_guard(calls: list[str], verdicts: list[str]) -> None:
    guard = RepeatGuard(3)
    assert [guard.check("t", {"k": c}) for c in calls] == verdicts


def test_repeat_guard_ignores_key_order() -> None:
    guard = RepeatGuard(2)
    assert guard.check("t", {"a": 1, "b": 2}) == "ok"
    assert guard.check("t", {"b": 2, "a": 1}) == "warn"


def agent_for(world: Env, registry: Registry | None = None, **ctx_kw: Any) -> tuple[Agent, Any]:
    ctx = world.context(**ctx_kw)
    return Agent(ctx, AgentOptions(model="echo"), registry=registry), ctx


def test_scheduled_runs_get_the_long_cap(world: Env) -> None:
    steps = [[{"name": "glob_search", "arguments": {"pattern": f"{i}*"}}] for i in range(120)]
    agent, ctx = agent_for(world, origin="scheduled")
    try:
        result = agent.run(json.dumps({"tool_calls": steps}))
    finally:
        ctx.close()
    assert result.status == "max_iterations" and result.iterations == 100
    assert "max_iterations_scheduled" in str(result.error)
    # Reference 15: interactive turns get the long cap too; a one-shot `fermix ask` (origin cli) the default.
    agent, ctx = agent_for(world, origin="interactive")
    try:
        assert agent.max_iterations == 100
    finally:
        ctx.close()
    agent, ctx = agent_for(world, origin="cli")
    try:
        assert agent.max_iterations == 25
    finally:
        ctx.close()


class InterruptingProvider:
    name = "interrupting"

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        yield TextDelta("partial ans")
        raise KeyboardInterrupt

    def close(self) -> None:
        pass


def test_interrupt_mid_stream_keeps_the_partial_text(world: Env) -> None:
    agent, ctx = agent_for(world)
    agent.provider = InterruptingProvider()
    try:
        result = agent.run("hi")
        assert result.status == "interrupted" and result.response == "partial ans"
        assert run_exit_code(result) == 130
        record = agent.transcript.run_json(result.run_id)
        assert record["status"] == "interrupted" and record["response"] == "partial ans"
        roles = [m["role"] for m in agent.transcript.messages(result.run_id)]
        assert roles == ["user", "assistant"]
    finally:
        ctx.close()


@pytest.mark.parametrize("after_commit", [True, False])
def test_a_stop_signal_as_the_run_is_stored_ends_it_interrupted(
    world: Env, monkeypatch: pytest.MonkeyPatch, after_commit: bool
) -> None:
    """A Ctrl-C or SIGTERM that lands as the run's row is committed (just after, or just before) ends the
    run `interrupted` and returns; it neither escapes the loop (an `agent` session died by SIGINT, -2,
    instead of exiting 143) nor leaves a row `running`."""
    agent, ctx = agent_for(world)
    transcript = agent.transcript
    real = transcript.start_run

    def stopped(*args: Any, **kw: Any) -> str:
        if after_commit:
            real(*args, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(transcript, "start_run", stopped)
    try:
        result = agent.run("hi")
        assert result.status == "interrupted" and run_exit_code(result) == 130
        rows = ctx.state.query("SELECT id, status FROM runs")
    finally:
        ctx.close()
    assert [tuple(r) for r in rows] == ([(result.run_id, "interrupted")] if after_commit else [])


class SlowParams(Params):
    pass


def interrupting_registry() -> Registry:
    reg = Registry()

    def boom(p: Any, ctx: Any) -> Any:
        raise KeyboardInterrupt

    reg.register(
        ToolSpec("stall", "test", "read_only", "Never finishes.", SlowParams, boom, failure_modes=())
    )
    return reg


def test_interrupt_during_a_tool_answers_every_pending_call(world: Env) -> None:
    (world.project / "a.txt").write_text("a")
    agent, ctx = agent_for(world, registry=interrupting_registry())
    prompt = json.dumps(
        {
            "tool_calls": [
                {"name": "file_read", "arguments": {"path": "a.txt"}},
                {"name": "stall"},
                {"name": "stall"},
            ]
        }
    )
    try:
        result = agent.run(prompt)
        assert result.status == "interrupted"
        # The call that was running when Ctrl-C came is "interrupted" (it ran, partly), the next one
        # "cancelled" (it never ran); the record of the running one says so too, not a success.
        assert [(o.name, o.error_code) for o in result.outcomes] == [
            ("file_read", None),
            ("stall", "interrupted"),
            ("stall", "cancelled"),
        ]
        assert "was stopped while it ran" in result.outcomes[1].output
        rows = ctx.state.query("SELECT tool, ok, error_code FROM tool_calls ORDER BY started_at")
        assert [tuple(r) for r in rows] == [("file_read", 1, None), ("stall", 0, "interrupted")]
        history = agent.transcript.history(agent.session_id)
        assert [m.role for m in history] == ["user", "assistant", "tool", "tool", "tool"]
        # The conversation can go on: the next run sees a well-formed history.
        nxt = agent.run("continue")
        assert nxt.status == "ok" and json.loads(nxt.response)["previous_messages"] == 5
    finally:
        ctx.close()


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def model_start(self, iteration: int) -> None:
        self.events.append(f"model{iteration}")

    def text(self, delta: str) -> None:
        if not self.events[-1].startswith("text"):
            self.events.append("text")

    def model_end(self, response: Any) -> None:
        self.events.append("end")

    def tool_start(self, call: Any, name: str, arguments: Any) -> None:
        self.events.append(f"start:{name}")

    def tool_end(self, outcome: Any) -> None:
        self.events.append(f"done:{outcome.name}:{outcome.ok}")


def test_observer_hears_the_run_in_order(world: Env) -> None:
    ctx = world.context()
    recorder = Recorder()
    agent = Agent(ctx, AgentOptions(model="echo"), observer=recorder)
    try:
        agent.run(
            json.dumps({"tool_calls": [{"name": "file_read", "arguments": {"path": "nope"}}], "text": "hm"})
        )
    finally:
        ctx.close()
    assert recorder.events == [
        "model1",
        "text",
        "end",
        "start:file_read",
        "done:file_read:False",
        "model2",
        "text",
        "end",
    ]


class AskParams(Params):
    pass


def confirming_registry() -> Registry:
    reg = Registry()

    def ask_owner(p: Any, ctx: Any) -> dict[str, Any]:
        return {"approved": confirm_with_owner(ctx, "Allow access to /srv?", {"path": "/srv"})}

    reg.register(ToolSpec("ask_owner", "test", "read_only", "Asks the owner.", AskParams, ask_owner))
    return reg


@pytest.mark.parametrize(
    ("answer", "trust", "expected"),
    [(True, "operator", True), (False, "operator", False), (True, "guest", False)],
)
def test_tools_can_ask_the_owner(world: Env, answer: bool, trust: str, expected: bool) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def confirm(question: str, details: Any) -> bool:
        asked.append((question, dict(details)))
        return answer

    ctx = world.context(trust=trust)
    agent = Agent(
        ctx, AgentOptions(model="echo"), registry=confirming_registry(), extras={"confirm": confirm}
    )
    try:
        result = agent.run(json.dumps({"tool_calls": [{"name": "ask_owner"}]}))
    finally:
        ctx.close()
    assert json.loads(result.outcomes[0].output) == {"approved": expected}
    assert asked == ([("Allow access to /srv?", {"path": "/srv"})] if trust == "operator" else [])


def test_without_an_owner_present_the_answer_is_no(world: Env) -> None:
    ctx = world.context()
    agent = Agent(ctx, AgentOptions(model="echo"), registry=confirming_registry())
    try:
        result = agent.run(json.dumps({"tool_calls": [{"name": "ask_owner"}]}))
    finally:
        ctx.close()
    assert json.loads(result.outcomes[0].output) == {"approved": False}


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        ("ok", None, 0),
        ("max_iterations", ToolError("max_iterations", "x"), 1),
        ("loop_detected", ToolError("loop_detected", "x"), 1),
        ("interrupted", ToolError("interrupted", "x"), 130),
        ("error", ToolError("provider_error", "x"), 1),
        ("error", ToolError("blocked_url", "x"), 3),
        ("error", ToolError("invalid_script", "x"), 2),
    ],
)
def test_exit_codes(status: str, error: ToolError | None, code: int) -> None:
    assert run_exit_code(RunResult("r", "s", status, "", 1, Usage(), error=error)) == code


def test_echo_steps_and_repeat() -> None:
    provider = EchoProvider()
    from fermix_cli.agent.messages import Message, ToolCall

    prompt = json.dumps({"tool_calls": [[{"name": "a"}], [{"name": "b", "id": "mine"}]]})
    first = list(provider.stream(ModelRequest("echo", "", [Message("user", prompt)], [])))
    names = [getattr(e, "name", None) for e in first if hasattr(e, "name")]
    assert names == ["a"]
    history = [
        Message("user", prompt),
        Message("assistant", "", [ToolCall("a", "{}", "x")]),
        Message("tool", "r", tool_call_id="x"),
    ]
    second = [e for e in provider.stream(ModelRequest("echo", "", history, [])) if hasattr(e, "name")]
    assert [(e.name, e.wire_id) for e in second] == [("b", "mine")]


def test_tool_calls_table_links_to_messages(world: Env) -> None:
    (world.project / "a.txt").write_text("x")
    agent, ctx = agent_for(world)
    try:
        result = agent.run(
            json.dumps({"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]})
        )
    finally:
        ctx.close()
    db = sqlite3.connect(world.fermix_home / "state.db")
    row = db.execute(
        "SELECT t.tool, t.session_id, t.origin, m.content FROM tool_calls t JOIN messages m ON m.call_id = t.id"
    ).fetchone()
    assert row == ("file_read", result.session_id, "cli", "x")


class SurrogateProvider:
    """A model whose JSON carried `\\ud800` escapes: a lone surrogate in its text, a tool call's name
    and the call's arguments (the OpenAI-compatible wire allows them; Python's json decodes them)."""

    name = "surrogates"

    def __init__(self) -> None:
        self.turn = 0

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        from fermix_cli.agent.messages import Finish, ToolCallEvent

        self.turn += 1
        if self.turn == 1:
            yield TextDelta("looking \ud800")
            yield ToolCallEvent("c1", "file_write", '{"path": "w.txt", "content": "a\ud800b"}')
            yield ToolCallEvent("c2", "file_read\udc80", "{}")
            yield Finish("tool_calls")
        else:
            yield TextDelta("done \udfff")
            yield Finish("stop")

    def close(self) -> None:
        pass


def test_invalid_unicode_from_a_model_is_stored_and_refused_not_a_crash(world: Env) -> None:
    """A lone surrogate used to make storing the turn raise (UnicodeEncodeError): the run died with a
    traceback. Text is shown with U+FFFD; a call's arguments keep the escape, so the tool's input
    check refuses them as text that is not UTF-8 (the model is told, nothing is written)."""
    agent, ctx = agent_for(world, cwd=str(world.project))
    agent.provider = SurrogateProvider()
    try:
        result = agent.run("hi")
        assert result.status == "ok" and result.response == "done \ufffd"
        bad_args, bad_name = result.outcomes
        assert (bad_args.ok, bad_args.error_code) == (False, "invalid_input")
        assert "not valid UTF-8" in bad_args.output
        assert bad_name.ok is False and "file_read\ufffd" in bad_name.output
        texts = [m["content"] for m in agent.transcript.messages(result.run_id)]
        assert texts[1] == "looking \ufffd" and texts[-1] == "done \ufffd"
    finally:
        ctx.close()
    assert not (world.project / "w.txt").exists()


def test_a_time_limit_passing_as_the_run_ends_keeps_its_answer(world: Env) -> None:
    # `fermix ask --timeout`: the limit's stop (a SIGINT to the main thread) sent just as the run's last
    # step returned lands after the loop is done; the finished answer stands, the run is not `timeout`.
    from fermix_cli.core.cancel import TimeLimit

    limit = TimeLimit(3600)
    disarm = limit._disarm

    def late_disarm() -> bool:
        limit._armed = True  # the timer fires in the gap between the run's end and the disarm
        limit._fire()
        return disarm()

    limit._disarm = late_disarm  # type: ignore[method-assign]
    ctx = world.context()
    agent = Agent(ctx, AgentOptions(model="echo"), time_limit=limit)
    try:
        result = agent.run("the whole answer")
    finally:
        ctx.close()
    assert limit.reached
    assert result.status == "ok" and result.error is None
    assert json.loads(result.response)["prompt"] == "the whole answer"  # echo answers with the request
