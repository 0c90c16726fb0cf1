"""A reasoning effort on the Messages API: `output_config.effort` or a thinking budget, by model, seen on
the wire by a 127.0.0.1 server; where neither can be sent, a warning once instead of silence. (Thinking
with tools, and its blocks going back: test_anthropic_thinking.py.)"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from fermix_cli.agent.providers.anthropic_effort import (
    effort_fields,
    forget_effort_warnings,
    warn_effort_ignored,
)
from fermix_cli.core.registry import default_registry
from tests.agent.model_server import ModelServer, fresh_warnings_server, text
from tests.conftest import Env

EFFORT = {"output_config": {"effort": "high"}}
REFUSED = "a tool_choice forces a tool"


def thinking(budget: int, max_tokens: int) -> dict[str, Any]:
    return {"thinking": {"type": "enabled", "budget_tokens": budget}, "max_tokens": max_tokens}


@pytest.fixture
def server() -> Iterator[ModelServer]:
    yield from fresh_warnings_server()


def configure(world: Env, server: ModelServer, routing: str = "", max_tokens: int | None = None) -> None:
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        f'[fermix_core.providers.claude]\ntype = "anthropic"\nbase_url = "{server.base}"\n'
        + (f"max_tokens = {max_tokens}\n" if max_tokens else "")
        + '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
        + f"[fermix_core.routing]\n{routing}"
    )


@pytest.mark.parametrize(
    ("model", "effort", "refused", "expected"),
    [
        # The effort generation: output_config.effort, whatever thinking rules say; a missing level rounds down.
        ("claude-sonnet-4-6", "high", REFUSED, EFFORT),
        ("claude-sonnet-4-6", "low", None, {"output_config": {"effort": "low"}}),
        ("claude-sonnet-4-6", "max", REFUSED, {"output_config": {"effort": "max"}}),
        ("claude-sonnet-4-6", "xhigh", None, EFFORT),
        ("claude-opus-4-6", "xhigh", None, EFFORT),
        ("claude-opus-4-7", "xhigh", None, {"output_config": {"effort": "xhigh"}}),
        ("claude-opus-4-5-20251101", "max", None, EFFORT),
        ("claude-opus-4-5-20251101", "medium", None, {"output_config": {"effort": "medium"}}),
        ("claude-sonnet-5", "max", None, {"output_config": {"effort": "max"}}),
        ("claude-haiku-5-5", "max", None, EFFORT),
        ("claude-mythos-preview", "xhigh", None, EFFORT),
        ("anthropic/claude-sonnet-4.6", "medium", None, {"output_config": {"effort": "medium"}}),
        # Older models: a thinking budget, and room for the reply above it, unless this request is one
        # the API refuses thinking for (a forced tool_choice, a turn under way that did not think).
        ("claude-sonnet-4-5", "high", None, thinking(10_000, 14_096)),
        ("claude-haiku-4-5-20251001", "low", None, thinking(1024, 5120)),
        ("claude-opus-4-20250514", "max", None, thinking(24_000, 28_096)),
        ("claude-3-7-sonnet-20250219", "medium", None, thinking(4096, 8192)),
        ("claude-sonnet-4-5", "high", REFUSED, {}),
        # Nothing to send: no effort, `none`, a model too old for thinking, a name that says no version.
        ("claude-sonnet-4-6", None, None, {}),
        ("claude-sonnet-4-6", "none", None, {}),
        ("claude-3-5-haiku-latest", "high", None, {}),
        ("local-llm", "high", None, {}),
    ],
)
def test_effort_fields_by_model(model: str, effort: str | None, refused: str | None, expected: Any) -> None:
    got = effort_fields(model, effort, max_tokens=4096, explicit_max_tokens=False, thinking_refused=refused)
    assert got == expected


def test_a_configured_max_tokens_stays_the_ceiling_of_the_thinking_budget() -> None:
    def fields(max_tokens: int) -> dict[str, Any]:
        return effort_fields("claude-sonnet-4-5", "max", max_tokens=max_tokens, explicit_max_tokens=True)

    assert fields(64_000) == {"thinking": {"type": "enabled", "budget_tokens": 24_000}}
    assert fields(8192) == {"thinking": {"type": "enabled", "budget_tokens": 8192 - 1024}}
    assert fields(1500) == {}  # no budget of at least 1024 fits below it


def subagents(world: Env, tasks: int = 1) -> dict[str, Any]:
    ctx = world.context(cwd=str(world.project))
    try:
        args = {"tasks": [{"id": f"t{i}", "task": f"task {i}"} for i in range(tasks)]}
        result: dict[str, Any] = default_registry().invoke("subagents", args, ctx)
        return result
    finally:
        ctx.close()


def test_the_subagent_routes_effort_reaches_the_messages_api(world: Env, server: ModelServer) -> None:
    configure(
        world,
        server,
        'subagent_provider = "claude"\nsubagent_model = "claude-sonnet-4-6"\n'
        'subagent_reasoning_effort = "high"\n',
    )
    server.queue(text("done"))
    out = subagents(world)
    assert out["results"][0]["output"] == "done", out
    [seen] = server.seen
    assert seen.path.endswith("/v1/messages") and seen.body["tools"]  # a worker with tools
    assert seen.body["model"] == "claude-sonnet-4-6"
    assert seen.body["output_config"] == {"effort": "high"}
    assert "thinking" not in seen.body


def test_an_effort_the_model_cannot_take_is_a_warning_once_not_silence(
    world: Env, server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    configure(
        world,
        server,
        'subagent_provider = "claude"\nsubagent_model = "claude-3-5-haiku-latest"\n'
        'subagent_reasoning_effort = "high"\n',
    )
    server.queue(text("one"), text("two"))
    with caplog.at_level(logging.WARNING, logger="fermix.agent.anthropic"):
        out = subagents(world, tasks=2)
    assert sorted(r["output"] for r in out["results"]) == ["one", "two"], out
    assert all("thinking" not in s.body and "output_config" not in s.body for s in server.seen)
    warnings = [r.getMessage() for r in caplog.records if r.name == "fermix.agent.anthropic"]
    assert len(warnings) == 1, warnings
    assert "claude-3-5-haiku-latest" in warnings[0] and "extended thinking" in warnings[0]


def test_a_run_without_tools_on_an_older_model_gets_a_thinking_budget(
    world: Env, server: ModelServer
) -> None:
    configure(world, server)
    server.queue(text("thought it over"))
    ctx = world.context()
    options = AgentOptions(provider="claude", model="claude-sonnet-4-5", tools=[], reasoning_effort="medium")
    agent = Agent(ctx, options)
    try:
        result = agent.run("think")
    finally:
        agent.close()
        ctx.close()
    assert result.response == "thought it over"
    body = server.seen[0].body
    assert "tools" not in body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]


def test_workers_warning_side_by_side_warn_once() -> None:
    """Subagent workers build their requests on threads: a warning still goes out once, not once per thread."""

    class SlowHandler(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            time.sleep(0.05)  # a slow sink keeps the first warner inside the call while the others arrive
            self.messages.append(record.getMessage())

    forget_effort_warnings()
    handler = SlowHandler()
    log = logging.getLogger("fermix.agent.anthropic")
    log.addHandler(handler)
    start = threading.Barrier(6)

    def warn() -> None:
        start.wait()
        warn_effort_ignored("claude-3-5-haiku-latest", "side by side")

    threads = [threading.Thread(target=warn) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        log.removeHandler(handler)
        forget_effort_warnings()
    assert len(handler.messages) == 1, handler.messages
