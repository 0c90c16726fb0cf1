"""Extended thinking with tools on the Messages API, against a 127.0.0.1 server that signs its thinking
blocks and refuses (HTTP 400, the API's error document) a follow-up whose assistant turn lacks them or
changed them (tests/agent/thinking_ledger.py): each reply's thinking and redacted_thinking blocks go back
unmodified, first, with its tool results, streamed or not, and from the transcript when a session resumes;
thinking text never reaches the reply, the tool output or another provider."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from fermix_cli.agent.loop import RunResult
from fermix_cli.agent.messages import Message, TextDelta, ToolCall
from fermix_cli.agent.providers.anthropic import parse_stream
from fermix_cli.agent.providers.openai import wire_messages as openai_wire
from fermix_cli.agent.providers.sse import iter_sse
from fermix_cli.core.registry import default_registry
from tests.agent.model_server import ModelServer, fresh_warnings_server, redacted, text, thought, tools
from tests.conftest import Env

MODEL = "claude-sonnet-4-5"  # takes effort only as extended thinking with a token budget
PLAN = "The user wants notes.txt; I will read it before answering."
SECRET = "a redacted line of reasoning"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    yield from fresh_warnings_server()


def configure(world: Env, server: ModelServer, *, routing: str = "", provider: str = "") -> None:
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        f'[fermix_core.providers.claude]\ntype = "anthropic"\nbase_url = "{server.base}"\n{provider}'
        f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{server.base}/v1"\n'
        'default_model = "test-model"\n'
        '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
        f"[fermix_core.routing]\n{routing}"
    )
    (world.project / "notes.txt").write_text("the answer is 42\n")


class Heard:
    """What a person watching the run sees streamed."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def model_start(self, iteration: int) -> None:
        pass

    def text(self, delta: str) -> None:
        self.shown.append(delta)

    def model_end(self, response: Any) -> None:
        pass

    def tool_start(self, call: Any, name: str, arguments: Any) -> None:
        pass

    def tool_end(self, outcome: Any) -> None:
        pass


def run_agent(
    world: Env,
    prompt: str,
    *,
    session: str | None = None,
    model: str = MODEL,
    effort: str | None = "high",
    max_iterations: int | None = None,
    heard: Heard | None = None,
) -> RunResult:
    ctx = world.context(cwd=str(world.project))
    options = AgentOptions(
        provider="claude",
        model=model,
        tools=["file_read"],
        reasoning_effort=effort,
        session=session,
        max_iterations=max_iterations,
    )
    agent = Agent(ctx, options, observer=heard)
    try:
        return agent.run(prompt)
    finally:
        agent.close()
        ctx.close()


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


def issued(server: ModelServer, reply: int) -> list[dict[str, Any]]:
    """The thinking blocks the server sent with its `reply`-th thinking reply, exactly as sent."""
    return [json.loads(key) for key in server.thinking.replies[reply]]


# ----- a run with tools thinks, and its thinking goes back with the tool results -----------------------


@pytest.mark.parametrize("streamed", [True, False], ids=["sse", "json"])
def test_thinking_goes_back_unmodified_before_the_tool_use(
    world: Env, server: ModelServer, streamed: bool
) -> None:
    configure(world, server)
    server.queue(
        tools(
            ("file_read", {"path": "notes.txt"}),
            text="Reading.",
            thinking=(thought(PLAN), redacted(SECRET)),
            streamed=streamed,
        ),
        text("The file says the answer is 42.", streamed=streamed),
    )
    heard = Heard()
    result = run_agent(world, "what does notes.txt say?", heard=heard)

    assert server.violations == []
    assert result.status == "ok", result.error
    assert result.response == "The file says the answer is 42."
    first, second = (s.body for s in server.seen)
    assert first["tools"] and first["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert first["max_tokens"] > 10_000
    assert second["thinking"] == first["thinking"]
    [turn] = assistant_turns(second)
    assert turn[:2] == issued(server, 0)  # first, byte for byte: signature and redacted data included
    assert [b["type"] for b in turn] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert turn[3]["id"] == "srv_1"
    # Thinking is for the model only: not the reply, not what was streamed, not a tool's output.
    assert PLAN not in "".join(heard.shown) and PLAN not in result.response
    assert (
        all(PLAN not in o.output for o in result.outcomes) and result.outcomes[0].output == "the answer is 42"
    )


def test_the_subagent_routes_effort_thinks_with_tools(world: Env, server: ModelServer) -> None:
    configure(
        world,
        server,
        routing=f'subagent_provider = "claude"\nsubagent_model = "{MODEL}"\nsubagent_reasoning_effort = "low"\n',
    )
    server.queue(tools(("file_read", {"path": "notes.txt"}), thinking=(thought(PLAN),)), text("It says 42."))
    ctx = world.context(cwd=str(world.project))
    try:
        out = default_registry().invoke("subagents", {"tasks": [{"id": "t", "task": "read notes.txt"}]}, ctx)
    finally:
        ctx.close()
    assert server.violations == []
    assert out["results"][0]["output"] == "It says 42.", out
    assert PLAN not in json.dumps(out)
    first, second = (s.body for s in server.seen)
    assert first["tools"] and first["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert assistant_turns(second)[0][0] == issued(server, 0)[0]


def test_a_long_tool_loop_keeps_every_replys_blocks(world: Env, server: ModelServer) -> None:
    configure(world, server)
    server.queue(
        tools(("file_read", {"path": "notes.txt"}), thinking=(thought(PLAN),)),
        tools(("file_read", {"path": "notes.txt", "limit": 1})),  # no new thinking mid-turn (not interleaved)
        text("42, twice."),
    )
    result = run_agent(world, "read it twice")
    assert server.violations == [] and result.response == "42, twice."
    third = server.seen[2].body
    assert "thinking" in third
    turns = assistant_turns(third)
    assert turns[0][0] == issued(server, 0)[0] and [b["type"] for b in turns[1]] == ["tool_use"]


# ----- the server is strict, as the API is -------------------------------------------------------------


def post(server: ModelServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.base}/v1/messages", json=body, timeout=10)


def test_the_server_refuses_a_turn_without_its_thinking_or_with_a_changed_signature(
    server: ModelServer,
) -> None:
    # What makes the tests above mean something: each of these is a 400 from the real API too.
    server.queue(
        tools(("file_read", {"path": "a"}), thinking=(thought(PLAN), redacted(SECRET)), streamed=False)
    )
    base = {
        "model": MODEL,
        "max_tokens": 14_096,
        "thinking": {"type": "enabled", "budget_tokens": 10_000},
        "tools": [{"name": "file_read", "description": "d", "input_schema": {"type": "object"}}],
    }
    ask = {"role": "user", "content": [{"type": "text", "text": "read a"}]}
    reply = post(server, {**base, "messages": [ask]}).json()
    thinking, hidden, call = reply["content"]
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "x"}]}

    def follow_up(*blocks: dict[str, Any], **extra: Any) -> httpx.Response:
        server.queue(text("done"))
        return post(
            server,
            {**base, **extra, "messages": [ask, {"role": "assistant", "content": list(blocks)}, answer]},
        )

    refused = follow_up(call)
    assert refused.status_code == 400
    doc = refused.json()
    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in doc["error"]["message"]
    changed = {**thinking, "signature": thinking["signature"][:-4] + "AAA="}
    assert (
        "Invalid `signature` in `thinking` block"
        in follow_up(changed, hidden, call).json()["error"]["message"]
    )
    edited = {**thinking, "thinking": thinking["thinking"] + " (edited)"}
    assert follow_up(edited, hidden, call).status_code == 400
    assert follow_up(thinking, call).status_code == 400  # a redacted block filtered out
    assert follow_up(call, thinking, hidden).status_code == 400  # not first
    forced = follow_up(thinking, hidden, call, tool_choice={"type": "any"})
    assert "tool_choice forces tool use" in forced.json()["error"]["message"]
    server.queue(text("done"))
    assert follow_up(thinking, hidden, call).status_code == 200
    # Without thinking enabled the turn may go on without the blocks, as the API allows.
    server.replies.clear()
    server.queue(text("done"))
    no_thinking = {k: v for k, v in base.items() if k != "thinking"}
    plain = post(server, {**no_thinking, "messages": [ask, {"role": "assistant", "content": [call]}, answer]})
    assert plain.status_code == 200


# ----- resumed sessions ---------------------------------------------------------------------------------


def interrupted_turn(world: Env, server: ModelServer) -> str:
    """A session whose last turn stopped after a thinking reply asked for a tool (the iteration cap)."""
    server.queue(tools(("file_read", {"path": "notes.txt"}), thinking=(thought(PLAN), redacted(SECRET))))
    result = run_agent(world, "what does notes.txt say?", max_iterations=1)
    assert result.status == "max_iterations" and server.violations == []
    return result.session_id


def test_a_resumed_session_sends_the_stored_blocks_back(world: Env, server: ModelServer) -> None:
    configure(world, server)
    session = interrupted_turn(world, server)
    server.queue(text("It says 42."))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fermix_cli",
            "ask",
            "--json",
            "--provider",
            "claude",
            "-m",
            MODEL,
            "-s",
            session,
            "go on",
        ],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["response"] == "It says 42."
    assert server.violations == []
    [turn] = assistant_turns(server.seen[1].body)
    assert turn[:2] == issued(server, 0) and turn[2]["type"] == "tool_use"


def test_a_resumed_turn_under_way_thinks_again_with_the_stored_blocks(
    world: Env, server: ModelServer
) -> None:
    configure(world, server)
    session = interrupted_turn(world, server)
    server.queue(text("It says 42."))
    result = run_agent(world, "go on", session=session)
    assert server.violations == [] and result.response == "It says 42."
    body = server.seen[1].body
    assert body["thinking"]["type"] == "enabled"  # the server refuses this without the stored blocks
    assert assistant_turns(body)[0][:2] == issued(server, 0)


def test_blocks_go_back_only_to_the_model_that_wrote_them(world: Env, server: ModelServer) -> None:
    configure(world, server)
    session = interrupted_turn(world, server)
    server.queue(text("It says 42."))
    result = run_agent(world, "go on", session=session, model="claude-opus-4-1")
    assert server.violations == [] and result.response == "It says 42."
    body = server.seen[1].body
    # Another model's signature is not valid: its blocks stay home, and the turn under way ends unthinking.
    assert [b["type"] for b in assistant_turns(body)[0]] == ["tool_use"]
    assert "thinking" not in body


def test_other_providers_never_see_thinking() -> None:
    from fermix_cli.agent.messages import OpaqueBlock

    block = OpaqueBlock("claude", MODEL, {"type": "thinking", "thinking": PLAN, "signature": "sig"})
    call = ToolCall("file_read", "{}", "srv_1")
    history = [Message("user", "hi"), Message("assistant", "ok", [call], opaque_blocks=[block])]
    history.append(Message("tool", "42", tool_call_id="srv_1", tool_name="file_read"))
    wire = json.dumps(openai_wire("sys", history))
    assert PLAN not in wire and "sig" not in wire


# ----- when the API refuses thinking, the budget stays off ------------------------------------------------


def test_a_forced_tool_choice_runs_its_turn_without_thinking(
    world: Env, server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    configure(world, server, provider='tool_choice = "file_read"\n')
    server.queue(tools(("file_read", {"path": "notes.txt"}), thinking=(thought(PLAN),)), text("42."))
    with caplog.at_level(logging.WARNING, logger="fermix.agent.anthropic"):
        result = run_agent(world, "read notes.txt")
    assert server.violations == [] and result.response == "42."
    forced, answered = (s.body for s in server.seen)
    assert forced["tool_choice"] == {"type": "tool", "name": "file_read"} and "thinking" not in forced
    assert "thinking" not in answered  # the turn started without thinking, so it ends without
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and "forces a tool" in warnings[0] and "started without thinking" in warnings[1]


# ----- the stream ----------------------------------------------------------------------------------------


def sse(*events: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for e in events:
        lines += [f"event: {e['type']}", f"data: {json.dumps(e)}", ""]
    return lines


def test_a_thinking_block_cut_before_its_signature_is_not_kept() -> None:
    from fermix_cli.agent.messages import OpaqueEvent

    events = sse(
        {"type": "message_start", "message": {"usage": {"input_tokens": 5}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": PLAN}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    )
    out = list(parse_stream(iter_sse(events), "claude"))
    assert not [e for e in out if isinstance(e, OpaqueEvent)]
    assert not [e for e in out if isinstance(e, TextDelta)]


def test_a_block_written_after_a_tool_call_goes_back_after_it() -> None:
    # Interleaved thinking (a beta header, or a proxy that turns it on): the order the model wrote stays.
    from fermix_cli.agent.messages import OpaqueBlock
    from fermix_cli.agent.providers.anthropic import wire_messages

    def block(n: int, after: int, model: str = MODEL) -> OpaqueBlock:
        return OpaqueBlock(
            "claude", model, {"type": "thinking", "thinking": f"t{n}", "signature": f"s{n}"}, after
        )

    calls = [ToolCall("file_read", '{"path": "a"}', "srv_1"), ToolCall("file_read", '{"path": "b"}', "srv_2")]
    reply = Message(
        "assistant", "Both.", calls, opaque_blocks=[block(1, 0), block(2, 1), block(3, 0, "other")]
    )
    [_, turn] = wire_messages([Message("user", "hi"), reply], provider="claude", model=MODEL)
    shown = [b.get("thinking") or b.get("text") or b.get("id") for b in turn["content"]]
    assert shown == ["t1", "Both.", "srv_1", "t2", "srv_2"]  # t3 is another model's: it stays home
