"""Replies nested deeper than the JSON parser follows are malformed replies, never an internal error.

A 127.0.0.1 server sends each reply in the provider's real wire format (SSE events or a whole body);
200,000 `[` is what makes Python's parser give up with RecursionError instead of ValueError.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent.replay_server import ReplayServer
from tests.agent.test_http_providers import configure
from tests.agent.wire_dialects import anthropic_call_reply, openai_call_reply, text_reply
from tests.conftest import Env

NESTED = "[" * 200_000
KINDS = ["openai", "anthropic"]


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    s = ReplayServer()
    try:
        yield s
    finally:
        s.close()


def ask(world: Env) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "ask", "--provider", "local", "--json", "hi"],
        capture_output=True,
        text=True,
        cwd=world.project,
        env={**world.env, "LOCAL_MODEL_KEY": "sk-test-123"},
        timeout=120,
    )
    out = json.loads(proc.stdout) if proc.stdout.strip() else json.loads(proc.stderr)
    return proc.returncode, out, proc.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_a_nested_stream_event_is_a_provider_error(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind)  # type: ignore[arg-type]
    event = (
        f"event: content_block_delta\ndata: {NESTED}\n\n" if kind == "anthropic" else f"data: {NESTED}\n\n"
    )
    replay.queue([event])
    code, out, err = ask(world)
    assert (code, out["error"]["code"]) == (1, "provider_error"), err
    assert "not JSON" in out["error"]["message"] and "Traceback" not in err


@pytest.mark.parametrize("kind", KINDS)
def test_a_nested_error_event_is_a_provider_error(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind)  # type: ignore[arg-type]
    event = f"event: error\ndata: {NESTED}\n\n" if kind == "anthropic" else f"error: {NESTED}\n\n"
    replay.queue([event])
    code, out, err = ask(world)
    assert (code, out["error"]["code"]) == (1, "provider_error"), err
    assert "Traceback" not in err


@pytest.mark.parametrize("kind", KINDS)
def test_a_nested_whole_body_is_a_provider_error(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind)  # type: ignore[arg-type]
    replay.status.append((200, NESTED))
    code, out, err = ask(world)
    assert (code, out["error"]["code"]) == (1, "provider_error"), err
    assert "not JSON" in out["error"]["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_nested_error_body_keeps_its_status(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind, max_retries=0)  # type: ignore[arg-type]
    replay.status.append((400, NESTED))
    code, out, err = ask(world)
    assert (code, out["error"]["code"]) == (1, "provider_error"), err
    assert "HTTP 400" in out["error"]["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_nested_call_arguments_do_not_break_the_session(world: Env, replay: ReplayServer, kind: str) -> None:
    configure(world, replay, kind)  # type: ignore[arg-type]
    call = anthropic_call_reply if kind == "anthropic" else openai_call_reply
    replay.queue(call("", "file_read", NESTED), text_reply(kind, "Sorry."))
    code, out, err = ask(world)
    assert code == 0, err
    assert out["status"] == "ok" and out["response"] == "Sorry."
    assert [c["ok"] for c in out["tool_calls"]] == [False]
    # The next request still went out, with the broken arguments sent as an empty object.
    assert len(replay.seen) == 2
