"""How a reply ends, over 127.0.0.1 in each wire format: cut off by the output limit (continued, then
`reply_truncated`), stopped by a filter, cut off mid-stream (no end marker), or ended by an error the
server reports inside its stream (llama.cpp's `error:` field). A reply that did not end by itself is
never reported as complete, and a tool call it carries never runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.agent.providers.sse import SSEEvent, iter_sse
from tests.agent.replay_server import ReplayServer
from tests.agent.wire_dialects import anthropic_call_reply, openai_call_reply, text_reply
from tests.conftest import Env

KINDS = ["openai", "anthropic"]
CUT = {"openai": "length", "anthropic": "max_tokens"}


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    s = ReplayServer()
    try:
        yield s
    finally:
        s.close()


def configure(world: Env, server: ReplayServer, kind: str, **extra: Any) -> None:
    base = f"{server.base}/v1" if kind == "openai" else server.base
    lines = [
        f'[fermix_core.providers.local]\ntype = "{kind}"\nbase_url = "{base}"\ndefault_model = "m"',
        "max_retries = 0",
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


def last_logged_run(world: Env) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "logs", "--json", "-n", "1"],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[-1]  # type: ignore[no-any-return]


def completion(text: str, finish: str) -> str:
    """A non-streamed Chat Completions document."""
    message = {"role": "assistant", "content": text}
    return json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": finish}]})


# ----- cut off by the output limit ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_reply_is_continued_and_joined(world: Env, replay: ReplayServer, kind: str) -> None:
    from fermix_cli.agent.loop import CONTINUE_PROMPT

    configure(world, replay, kind)
    replay.queue(text_reply(kind, "The first half, ", CUT[kind]), text_reply(kind, "and the second half."))
    r = ask(world, "tell me")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "ok" and out["response"] == "The first half, and the second half."
    assert len(replay.seen) == 2
    sent = json.dumps(replay.seen[1]["messages"][-2:])
    assert "The first half, " in sent and CONTINUE_PROMPT in sent
    # The session goes on with the joined reply, without the request for more.
    replay.queue(text_reply(kind, "ok"))
    session = ["--session", out["session_id"], "and then?"]
    assert ask(world, *session).returncode == 0
    history = json.dumps(replay.seen[2]["messages"])
    assert "The first half, and the second half." in history and CONTINUE_PROMPT not in history


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_still_cut_after_two_continuations_fails(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind)
    replay.queue(*(text_reply(kind, f"part {i}. ", CUT[kind]) for i in range(3)))
    r = ask(world, "write a long essay")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "error" and out["response"] == "part 0. part 1. part 2. "
    err = out["error"]
    assert err["code"] == "reply_truncated" and err["details"]["continuations"] == 2
    assert err["details"]["finish_reason"] == CUT[kind]
    assert "fermix_core.providers.local.max_tokens" in err["message"]
    assert len(replay.seen) == 3
    logged = last_logged_run(world)
    assert logged["status"] == "error" and logged["error"]["code"] == "reply_truncated"
    assert logged["response"] == "part 0. part 1. part 2. "


def test_a_non_streamed_completion_cut_by_length_is_not_complete(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, "openai")
    replay.status += [(200, completion(f"piece {i} ", "length")) for i in range(3)]
    r = ask(world, "hi")
    out = json.loads(r.stdout)
    assert (r.returncode, out["status"], out["error"]["code"]) == (1, "error", "reply_truncated")
    assert out["response"] == "piece 0 piece 1 piece 2 "


@pytest.mark.parametrize(("kind", "reason"), [("openai", "content_filter"), ("anthropic", "refusal")])
def test_a_filtered_reply_is_not_ok(world: Env, replay: ReplayServer, kind: str, reason: str) -> None:
    configure(world, replay, kind)
    replay.queue(text_reply(kind, "Here is how to", reason))
    r = ask(world, "hi")
    out = json.loads(r.stdout)
    assert (r.returncode, out["status"], out["error"]["code"]) == (1, "error", "content_filtered")
    assert out["response"] == "Here is how to" and len(replay.seen) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_call_cut_by_the_output_limit_never_runs(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind)
    args = '{"path": "out.txt", "content": "the beginning of a long'
    cut = (
        openai_call_reply("Writing it.", "file_write", args, "length")
        if kind == "openai"
        else anthropic_call_reply("Writing it.", "file_write", args, "max_tokens")
    )
    replay.queue(cut, text_reply(kind, "I will write it in parts."))
    r = ask(world, "write out.txt")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert not (world.project / "out.txt").exists()
    call = out["tool_calls"][0]
    assert call["name"] == "file_write" and call["ok"] is False and "cut off" in call["output"]
    assert out["response"] == "I will write it in parts."
    assert "cut off by the output length limit" in json.dumps(replay.seen[1]["messages"])


# ----- a stream that stops before its end ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_without_its_end_is_interrupted(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind)
    args = '{"path": "made.txt", "content": "x"}'
    unterminated = (
        openai_call_reply("Making the file.", "file_write", args, finish=None)
        if kind == "openai"
        else anthropic_call_reply("Making the file.", "file_write", args, stop=None)
    )
    replay.queue(unterminated)
    r = ask(world, "make made.txt")
    out = json.loads(r.stdout)
    assert (r.returncode, out["status"], out["error"]["code"]) == (1, "error", "network")
    assert "stopped before it was complete" in out["error"]["message"]
    assert out["response"] == "Making the file." and out["tool_calls"] == []
    assert not (world.project / "made.txt").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_a_text_stream_cut_before_any_finish_is_interrupted(
    world: Env, replay: ReplayServer, kind: str
) -> None:
    configure(world, replay, kind)
    stream = text_reply(kind, "Half an answ")
    replay.queue(stream[:-2] if kind == "openai" else stream[:-3])  # no finish, no [DONE] / message_stop
    out = json.loads(ask(world, "hi").stdout)
    assert out["status"] == "error" and out["error"]["code"] == "network"
    assert out["response"] == "Half an answ"


@pytest.mark.parametrize("kind", KINDS)
def test_a_finish_without_the_last_marker_is_complete(world: Env, replay: ReplayServer, kind: str) -> None:
    # Lenient: a finish_reason (message_delta's stop_reason) says the reply is whole even when the
    # connection closes before `data: [DONE]` (message_stop).
    configure(world, replay, kind)
    replay.queue(text_reply(kind, "Whole answer.")[:-1])
    r = ask(world, "hi")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["response"] == "Whole answer."


# ----- an error inside the stream (llama.cpp's server) ----------------------------------------------------


def llama_error(message: str) -> str:
    error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
    return f"error: {json.dumps(error)}\n\n"


def test_an_error_field_after_partial_text_fails_with_its_message(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, "openai")
    stream = text_reply("openai", "The answer is")
    replay.queue([stream[0], llama_error("slot unavailable: the model crashed"), "data: [DONE]\n\n"])
    r = ask(world, "hi")
    out = json.loads(r.stdout)
    assert (r.returncode, out["status"], out["error"]["code"]) == (1, "error", "provider_error")
    assert "the model crashed" in out["error"]["message"]
    assert out["response"] == "The answer is"


def test_an_error_field_naming_the_context_size_is_fitted_and_retried(
    world: Env, replay: ReplayServer
) -> None:
    configure(world, replay, "openai")
    too_long = "the request exceeds the available context size, try increasing it (n_ctx: 2048)"
    replay.queue([llama_error(too_long), "data: [DONE]\n\n"], text_reply("openai", "fits now"))
    r = ask(world, "read the file notes.txt")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["response"] == "fits now"
    first, second = replay.seen
    assert len(second["tools"]) < len(first["tools"])


def test_anthropics_own_error_event_keeps_its_type(world: Env, replay: ReplayServer) -> None:
    configure(world, replay, "anthropic")
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    replay.queue([f"event: error\ndata: {json.dumps(error)}\n\n"])
    out = json.loads(ask(world, "hi").stdout)
    assert out["error"]["code"] == "provider_error" and "overloaded_error" in out["error"]["message"]
    assert out["error"]["details"]["type"] == "overloaded_error"


@pytest.mark.parametrize(
    ("lines", "events"),
    [
        (["data: a", ""], [SSEEvent("message", "a")]),
        (
            ['error: {"message":"x"}', "", "data: [DONE]", ""],
            [SSEEvent("error", '{"message":"x"}'), SSEEvent("message", "[DONE]")],
        ),
        (["event: error", 'data: {"type":"error"}', ""], [SSEEvent("error", '{"type":"error"}')]),
        (["error: at the end"], [SSEEvent("error", "at the end")]),
        (["id: 3", "retry: 10", ": comment", "data: b", ""], [SSEEvent("message", "b")]),
    ],
)
def test_iter_sse(lines: list[str], events: list[SSEEvent]) -> None:
    assert list(iter_sse(lines)) == events
