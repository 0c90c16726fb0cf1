"""Schema profiles (what a grammar-constrained server is sent), context budgets (a request fitted to the
model's window) and a forced first tool choice, seen from the requests a 127.0.0.1 server receives."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.agent.budget import context_size_in, estimate, fit_request
from fermix_cli.agent.messages import Message, ModelRequest, ToolCall, ToolSchema
from fermix_cli.agent.providers.profiles import GRAMMAR_MAX_REPEAT, apply_profile
from fermix_cli.core.errors import ToolError
from tests.agent.replay_server import ReplayServer
from tests.agent.wire_dialects import llama_call, text_reply
from tests.conftest import Env


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    s = ReplayServer()
    try:
        yield s
    finally:
        s.close()


def configure(world: Env, server: ReplayServer, **extra: Any) -> None:
    lines = [
        f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{server.base}/v1"\ndefault_model = "m"',
        *(f"{k} = {json.dumps(v)}" for k, v in extra.items()),
        '\n[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]',
    ]
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text("\n".join(lines) + "\n")


def ask(world: Env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fermix_cli", "ask", "--provider", "local", "--json", *args],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )


def lengths(tools: list[dict[str, Any]]) -> list[int]:
    return [int(n) for n in re.findall(r'"max(?:Length|Items)": (\d+)', json.dumps(tools))]


# ----- schema profiles ---------------------------------------------------------------------------------


def test_a_local_server_gets_grammar_safe_schemas_and_calls_are_validated_as_before(
    world: Env, replay: ReplayServer
) -> None:
    configure(world, replay)
    long_path = "d/" + "x" * 1500  # over the grammar's bound, within file_read's own maxLength
    replay.queue(llama_call("file_read", {"path": long_path}), text_reply("openai", "done"))
    r = ask(world, "read it")
    assert r.returncode == 0, r.stderr + r.stdout
    sent = replay.seen[0]["tools"]
    assert lengths(sent) and max(lengths(sent)) <= GRAMMAR_MAX_REPEAT
    assert not re.search(r'"(pattern|format|minimum|maximum)": [^{]', json.dumps(sent))
    call = json.loads(r.stdout)["tool_calls"][0]
    # Not refused as too long: validation used the tool's own schema (the file just does not exist).
    assert call["name"] == "file_read" and call.get("error_code") != "invalid_params", call


def test_schema_profile_full_sends_the_schemas_unchanged(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, schema_profile="full")
    replay.queue(text_reply("openai", "hi"))
    assert ask(world, "hi").returncode == 0
    assert max(lengths(replay.seen[0]["tools"])) > 2000


def test_invalid_schema_profile_is_a_config_error(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, schema_profile="tiny")
    r = ask(world, "hi")
    assert r.returncode != 0 and "schema_profile" in r.stdout + r.stderr


PROFILE_CASES = [
    ({"type": "string", "maxLength": 4096}, {"type": "string", "maxLength": GRAMMAR_MAX_REPEAT}),
    ({"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 10}),
    ({"type": "string", "pattern": "^a+$", "format": "uri"}, {"type": "string"}),
    ({"type": "integer", "minimum": 1, "maximum": 9, "multipleOf": 2}, {"type": "integer"}),
    (
        {"type": "object", "properties": {"pattern": {"type": "string", "maxLength": 5000}}},
        {"type": "object", "properties": {"pattern": {"type": "string", "maxLength": GRAMMAR_MAX_REPEAT}}},
    ),
    (
        {
            "type": "array",
            "items": {"type": "string", "maxLength": 9999},
            "maxItems": 5000,
            "uniqueItems": True,
        },
        {
            "type": "array",
            "items": {"type": "string", "maxLength": GRAMMAR_MAX_REPEAT},
            "maxItems": GRAMMAR_MAX_REPEAT,
        },
    ),
    (
        {"anyOf": [{"type": "string", "maxLength": 8000}, {"type": "null"}], "default": None},
        {"anyOf": [{"type": "string", "maxLength": GRAMMAR_MAX_REPEAT}, {"type": "null"}], "default": None},
    ),
    ({"type": "string", "enum": ["pattern", "format"]}, {"type": "string", "enum": ["pattern", "format"]}),
    (
        {"$defs": {"P": {"type": "string", "minLength": 3000}}},
        {"$defs": {"P": {"type": "string", "minLength": GRAMMAR_MAX_REPEAT}}},
    ),
]


@pytest.mark.parametrize(("schema", "expected"), PROFILE_CASES)
def test_grammar_profile(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    before = json.dumps(schema)
    assert apply_profile(schema, "grammar") == expected
    assert apply_profile(schema, "full") == schema and json.dumps(schema) == before


# ----- context budgets ---------------------------------------------------------------------------------


def test_a_small_context_gets_the_bridges_and_the_relevant_tools(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, context_window=2048, max_tokens=256)
    replay.queue(text_reply("openai", "ok"))
    r = ask(world, "read the file notes.txt")
    assert r.returncode == 0, r.stderr + r.stdout
    body = replay.seen[0]
    names = [t["function"]["name"] for t in body["tools"]]
    assert {"tool_search", "tool_describe", "tool_call", "file_read"} <= set(names)
    assert len(names) < 10
    system = body["messages"][0]["content"]
    assert "[context]" in system and "tool_search" in system
    # Three characters a token over-counts for JSON and English: the body fits the window's remainder.
    assert len(json.dumps(body, separators=(",", ":"), ensure_ascii=False)) // 3 < 2048 - 256


def test_without_a_context_window_every_tool_is_sent(world: Env, replay: ReplayServer) -> None:
    configure(world, replay)
    replay.queue(text_reply("openai", "ok"))
    assert ask(world, "read the file notes.txt").returncode == 0
    assert len(replay.seen[0]["tools"]) > 15
    assert "[context]" not in replay.seen[0]["messages"][0]["content"]


def test_older_turns_are_dropped_with_a_note(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, context_window=4096, max_tokens=256)
    replay.queue(*(text_reply("openai", "ok " * 1500) for _ in range(3)))
    for prompt in ("first " * 300, "second " * 300, "third question"):
        r = ask(world, "--tools", "", "--continue", prompt)
        assert r.returncode == 0, r.stderr + r.stdout
    last = replay.seen[2]["messages"]
    assert last[-1] == {"role": "user", "content": "third question"}
    assert not any("first first" in str(m.get("content")) for m in last)
    assert "older messages were left out" in last[0]["content"]


def test_a_prompt_that_cannot_fit_is_refused_before_sending(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, context_window=512, max_tokens=128)
    r = ask(world, "--tools", "", "word " * 2000)
    assert r.returncode != 0
    assert json.loads(r.stdout)["error"]["code"] == "context_exceeded"
    assert replay.seen == []


def test_fit_shortens_long_tool_results_in_the_current_turn() -> None:
    call = ToolCall("file_read", "{}", "c1")
    messages = [
        Message("user", "read"),
        Message("assistant", "", [call]),
        Message("tool", "x" * 20_000, tool_call_id="c1", tool_name="file_read"),
    ]
    request = ModelRequest("m", "sys", messages, [ToolSchema("file_read", "Read a file", {})])
    fitted = fit_request(request, 2048, 256)
    assert fitted.results_shortened == 1 and estimate(fitted.request) <= 2048 - 256
    assert "characters left out" in fitted.request.messages[2].content
    assert fitted.request.messages[2].tool_call_id == "c1" and messages[2].content == "x" * 20_000


def test_fit_leaves_a_request_that_fits_alone() -> None:
    request = ModelRequest("m", "sys", [Message("user", "hi")], [ToolSchema("a", "b", {})])
    fitted = fit_request(request, 4096)
    assert fitted.request is request and not fitted.tools_dropped


def test_fit_refuses_what_cannot_fit() -> None:
    with pytest.raises(ToolError) as e:
        fit_request(ModelRequest("m", "s" * 9000, [Message("user", "hi")], []), 1024, 128)
    assert e.value.code == "context_exceeded"


# ----- a forced first tool choice ----------------------------------------------------------------------


def test_tool_choice_forces_the_first_call_only(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, tool_choice="file_read")
    (world.project / "notes.txt").write_text("forty-two\n")
    replay.queue(llama_call("file_read", {"path": "notes.txt"}), text_reply("openai", "It says forty-two."))
    r = ask(world, "what is in notes.txt?")
    assert r.returncode == 0, r.stderr + r.stdout
    assert replay.seen[0]["tool_choice"] == {"type": "function", "function": {"name": "file_read"}}
    assert "tool_choice" not in replay.seen[1]
    out = json.loads(r.stdout)
    assert out["tool_calls"][0]["ok"] and "forty-two" in out["tool_calls"][0]["output"]


def test_tools_left_off_the_list_are_found_with_tool_search(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, context_window=2048, max_tokens=256)
    replay.queue(
        llama_call("tool_search", {"query": "schedule a recurring job"}), text_reply("openai", "found")
    )
    r = ask(world, "read the file notes.txt")
    assert r.returncode == 0, r.stderr + r.stdout
    listed = {t["function"]["name"] for t in replay.seen[0]["tools"]}
    assert "schedule_job" not in listed
    call = json.loads(r.stdout)["tool_calls"][0]
    assert call["ok"], call
    assert "schedule_job" in [m["name"] for m in json.loads(call["output"])["matches"]]


def test_a_refusal_naming_the_context_size_is_fitted_and_retried(world: Env, replay: ReplayServer) -> None:
    # llama-cpp-python's answer to a request longer than its context (HTTP 400, OpenAI's error shape).
    configure(world, replay)
    message = "Requested tokens (6350) exceed context window of 2048"
    error = {
        "error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}
    }
    replay.status.append((400, json.dumps(error)))
    replay.queue(text_reply("openai", "fits now"))
    r = ask(world, "read the file notes.txt")
    assert r.returncode == 0, r.stderr + r.stdout
    assert json.loads(r.stdout)["response"] == "fits now"
    first, second = replay.seen
    assert len(second["tools"]) < len(first["tools"])
    assert "[context]" in second["messages"][0]["content"]


@pytest.mark.parametrize(
    ("message", "size"),
    [
        ("Requested tokens (6350) exceed context window of 2048", 2048),
        ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", 4096),
        ("the request exceeds the available context size (n_ctx: 8192)", 8192),
        ("internal server error", None),
    ],
)
def test_context_size_in_refusals(message: str, size: int | None) -> None:
    assert context_size_in(message) == size
