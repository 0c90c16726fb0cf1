"""subagents' /ultra mode: its caps at dispatch, the schema a model is shown turn by turn, the
`fermix agent` command that turns it on and off, and workers that never inherit it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from fermix_cli.agent.subagents.tools import REGULAR, ULTRA, ULTRA_MODE
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env
from tests.subagents.test_subagents import script


def run(world: Env, args: dict[str, Any], *, ultra: bool) -> Any:
    ctx = world.context(cwd=str(world.project))
    ctx.extras[ULTRA_MODE] = ultra
    try:
        return default_registry().invoke("subagents", args, ctx)
    finally:
        ctx.close()


def tasks(n: int, task: str = "task") -> list[dict[str, str]]:
    return [{"id": f"t{i}", "task": f"{task} {i}"} for i in range(n)]


def test_the_reference_s_caps_per_mode() -> None:
    assert (REGULAR.max_tasks, REGULAR.default_concurrency, REGULAR.max_concurrency) == (10, 4, 8)
    assert (REGULAR.worker_iterations, REGULAR.result_budget) == (100, 60_000)
    assert (ULTRA.max_tasks, ULTRA.default_concurrency, ULTRA.max_concurrency) == (50, 12, 12)
    assert (ULTRA.worker_iterations, ULTRA.result_budget) == (40, 300_000)


def test_ultra_takes_up_to_50_tasks_and_12_at_once(world: Env) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "done"}]}])
    out = run(world, {"tasks": tasks(50), "max_concurrency": 12}, ultra=True)
    assert out["summary"]["completed"] == 50
    with pytest.raises(ToolError) as e:
        run(world, {"tasks": tasks(11)}, ultra=False)
    assert e.value.message == "Too many tasks: 11 (max 10)."


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"tasks": tasks(51)}, "Too many tasks: 51 (max 50)."),
        ({"tasks": tasks(1), "max_concurrency": 13}, "max_concurrency 13 is out of range (1..12)."),
        ({"tasks": tasks(1), "timeout_seconds": 901}, "timeout_seconds 901 is out of range (5..900)."),
    ],
)
def test_ultra_limits_are_refused_in_the_reference_s_words(
    world: Env, args: dict[str, Any], message: str
) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "done"}]}])
    with pytest.raises(ToolError) as e:
        run(world, args, ultra=True)
    assert (e.value.code, e.value.message) == ("invalid_input", message)


def test_ultra_runs_12_workers_at_once_by_default(world: Env) -> None:
    script(world, [{"contains": "task", "responses": [{"delay": 1.5, "text": "done"}]}])
    t0 = time.monotonic()
    out = run(world, {"tasks": tasks(12)}, ultra=True)
    elapsed = time.monotonic() - t0
    assert out["summary"]["completed"] == 12
    assert elapsed < 3.5  # one wave of 12, not the three waves of 4 regular mode takes (4.5 s)


def test_ultra_workers_stop_at_40_model_calls(world: Env) -> None:
    turns = [
        {"text": f"step {i}", "tool_calls": [{"name": "tool_help", "arguments": {"name": f"x{i}"}}]}
        for i in range(60)
    ]
    script(world, [{"contains": "task", "responses": turns}])
    (result,) = run(world, {"tasks": tasks(1)}, ultra=True)["results"]
    assert (result["status"], result["iterations"]) == ("failed", 40)
    assert result["error"]["code"] == "max_iterations"
    assert "subagent worker in /ultra mode" in result["error"]["message"]


def test_ultra_s_result_budget_is_300000_bytes(world: Env) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "x" * 100_000}]}])
    regular = run(world, {"tasks": tasks(2)}, ultra=False)["results"]
    ultra = run(world, {"tasks": tasks(2)}, ultra=True)["results"]
    assert [(len(r["output"]), r["truncated"]) for r in regular] == [(30_000, True)] * 2
    assert [(len(r["output"]), r["truncated"]) for r in ultra] == [(100_000, False)] * 2


def test_the_schema_a_model_sees_follows_the_mode_turn_by_turn(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference's per-turn `dynamic_parameters`: /ultra's caps in the schema of the next turn."""
    from fermix_cli.agent.assemble import Agent, AgentOptions
    from fermix_cli.agent.providers.mock import MockProvider

    shown: list[dict[str, Any]] = []
    stream = MockProvider.stream

    def spy(self: MockProvider, request: Any) -> Any:
        shown.extend(t.parameters for t in request.tools if t.name == "subagents")
        return stream(self, request)

    monkeypatch.setattr(MockProvider, "stream", spy)
    script(world, [{"contains": "turn", "responses": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}])
    ctx = world.context(cwd=str(world.project), origin="interactive")
    agent = Agent(ctx, AgentOptions())
    try:
        agent.run("turn 1")
        agent.set_extra(ULTRA_MODE, True)
        agent.run("turn 2")
        agent.set_extra(ULTRA_MODE, False)
        agent.run("turn 3")
    finally:
        agent.close()
        ctx.close()
    limits = [
        (s["properties"]["tasks"]["maxItems"], s["properties"]["max_concurrency"]["maximum"],
         s["properties"]["max_concurrency"]["default"])
        for s in shown
    ]  # fmt: skip
    assert limits == [(10, 8, 4), (50, 12, 12), (10, 8, 4)]
    published = json.loads(world.run("tool", "subagents", "--schema").stdout)
    assert published["properties"]["tasks"]["maxItems"] == 10  # a script's call is never in /ultra


def test_workers_do_not_inherit_ultra_mode(world: Env) -> None:
    from fermix_cli.agent.delegate import Delegation, derive_child
    from fermix_cli.agent.subagents.tools import caps_for

    ctx = world.context()
    ctx.extras[ULTRA_MODE] = True
    try:
        child = derive_child(ctx, Delegation(origin="subagent", label="w", prompt="p"), default_registry())
        assert caps_for(ctx) is ULTRA and caps_for(child) is REGULAR
    finally:
        ctx.close()


def test_the_agent_s_ultra_command_turns_it_on_and_off(world: Env) -> None:
    """`fermix agent`: /ultra lets the next turns fan out 11 tasks; /ultra off brings back the 10-task cap."""
    fan = {"tool_calls": [{"name": "subagents", "arguments": {"tasks": tasks(11)}}]}
    script(
        world,
        [
            {"contains": "main job", "responses": [fan, {"text": "first"}, fan, {"text": "second"}]},
            {"contains": "task", "responses": [{"text": "done"}]},
        ],
    )
    lines = ["/ultra", "main job", "/ultra off", "again", "/ultra maybe", ""]
    r = world.run("agent", input="\n".join(lines))
    assert r.code == 0, r.stderr
    assert "ultra mode on until /ultra off: subagents: up to 50 tasks, 12 at once" in r.stdout
    assert "ultra mode off: subagents: up to 10 tasks, 4 at once" in r.stdout
    assert "usage: /ultra [on|off]" in r.stdout
    session = r.stdout.split(" · session ", 1)[1].split()[0]
    first, second = world.run("logs", "--json", "--session", session).json()
    (ultra_call,) = first["tool_calls"]
    assert ultra_call["ok"] and json.loads(ultra_call["output"])["summary"]["completed"] == 11
    (regular_call,) = second["tool_calls"]
    assert not regular_call["ok"] and "Too many tasks: 11 (max 10)." in regular_call["output"]


def test_tool_help_documents_the_mode_s_limits(world: Env) -> None:
    """A model in /ultra that asks tool_help about subagents reads the limits it is held to."""
    for ultra, most in ((False, 10), (True, 50)):
        ctx = world.context()
        ctx.extras[ULTRA_MODE] = ultra
        try:
            out = default_registry().invoke("tool_help", {"name": "subagents"}, ctx)
        finally:
            ctx.close()
        assert out["input_schema"]["properties"]["tasks"]["maxItems"] == most
        assert f"at most {most}" in out["markdown"]
