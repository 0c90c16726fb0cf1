"""Provider conformance: every documented dialect's stream of tool calls, replayed over 127.0.0.1, is
assembled into the same calls (names once, arguments whole, ids kept, usage when reported)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.agent.messages import (
    Message,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolSchema,
    UsageEvent,
)
from fermix_cli.agent.providers import build_provider, choose_provider
from fermix_cli.agent.providers.calls import ToolCallAssembler
from fermix_cli.agent.providers.openai import wire_messages
from tests.agent.replay_server import ReplayServer, split_mid_character
from tests.agent.wire_dialects import CALLS, DIALECTS, REPORTS_USAGE, STREAMS_TEXT, TEXT, text_reply
from tests.conftest import Env


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    s = ReplayServer()
    try:
        yield s
    finally:
        s.close()


def kind_of(dialect: str) -> str:
    return "anthropic" if dialect == "anthropic" else "openai"


def configure(world: Env, server: ReplayServer, kind: str, **extra: Any) -> None:
    base = f"{server.base}/v1" if kind == "openai" else server.base
    lines = [
        f'[fermix_core.providers.local]\ntype = "{kind}"\nbase_url = "{base}"\ndefault_model = "m"',
        *(f"{k} = {json.dumps(v)}" for k, v in extra.items()),
        '\n[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]',
    ]
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text("\n".join(lines) + "\n")


def arguments(raw: str) -> Any:
    return json.loads(raw) if raw.strip() else {}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_dialect_assembles_the_same_calls(world: Env, replay: ReplayServer, dialect: str) -> None:
    configure(world, replay, kind_of(dialect))
    replay.queue(DIALECTS[dialect]())
    ctx = world.context()
    provider = build_provider(choose_provider(ctx.config, provider="local", env={}), ctx)
    try:
        request = ModelRequest("m", "sys", [Message("user", "hi")], [ToolSchema("file_read", "Read", {})])
        events = list(provider.stream(request))
    finally:
        provider.close()
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, arguments(c.arguments)) for c in calls] == CALLS
    assert all(c.wire_id for c in calls) and len({c.wire_id for c in calls}) == len(CALLS)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == (TEXT if STREAMS_TEXT.get(dialect, True) else "")
    usage = [e.usage for e in events if isinstance(e, UsageEvent)]
    if REPORTS_USAGE.get(dialect, True):
        assert (usage[-1].input_tokens, usage[-1].output_tokens) == (120, 30)
    else:
        assert all(u.input_tokens == 0 for u in usage)


@pytest.mark.parametrize("dialect", ["llama_cpp_python", "ollama", "anthropic"])
def test_fermix_ask_runs_the_calls_each_dialect_streams(
    world: Env, replay: ReplayServer, dialect: str
) -> None:
    # Black box: the calls reach the real tools by their real names (no `file_readfile_read...`).
    kind = kind_of(dialect)
    configure(world, replay, kind)
    (world.project / "notes").mkdir()
    (world.project / "notes" / "naïve 😀.txt").write_text("line one\nline two\nline three\n")
    replay.queue(DIALECTS[dialect](), text_reply(kind, "Read it."))
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "ask", "--provider", "local", "--json", "read my notes"],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = json.loads(proc.stdout)
    assert out["status"] == "ok" and out["response"] == "Read it."
    assert [c["name"] for c in out["tool_calls"]] == [name for name, _ in CALLS]
    assert all(c.get("error_code") != "unknown_tool" for c in out["tool_calls"])
    first = out["tool_calls"][0]
    assert first["ok"] and "line one" in first["output"] and "line three" not in first["output"]
    # The follow-up request: the assistant turn with calls has "" (never null) content in Chat Completions.
    follow_up = replay.seen[1]["messages"]
    if kind == "openai":
        assistant = next(m for m in follow_up if m["role"] == "assistant")
        assert assistant["content"] == "" or assistant["content"] == TEXT
        assert assistant["content"] is not None
        ids = [c["id"] for c in assistant["tool_calls"]]
        assert [m["tool_call_id"] for m in follow_up if m["role"] == "tool"] == ids


def test_assistant_turn_with_calls_sends_an_empty_string_not_null() -> None:
    call = ToolCall("file_read", '{"path": "a"}', "call_1")
    wire = wire_messages("", [Message("user", "hi"), Message("assistant", "", [call])])
    assert wire[1]["content"] == "" and wire[1]["tool_calls"][0]["function"]["name"] == "file_read"


# ----- the assembly rules, fragment by fragment -------------------------------------------------------


def assemble(*fragments: dict[str, Any]) -> list[tuple[str | None, str, str]]:
    a = ToolCallAssembler()
    for f in fragments:
        a.add(f)
    return [(e.wire_id, e.name, e.arguments) for e in a.events()]


def fn(name: str | None = None, arguments: Any = None, **top: Any) -> dict[str, Any]:
    f: dict[str, Any] = {}
    if name is not None:
        f["name"] = name
    if arguments is not None:
        f["arguments"] = arguments
    return {**top, "function": f}


RULES = [
    (
        "name once",
        [fn("a", "", index=0, id="1"), fn(None, '{"x"', index=0), fn(None, ": 1}", index=0)],
        [("1", "a", '{"x": 1}')],
    ),
    (
        "name repeated",
        [fn("file_read", "{", index=0, id="1"), fn("file_read", "}", index=0, id="1")],
        [("1", "file_read", "{}")],
    ),
    ("name repeated without id", [fn("ab", "{", index=0), fn("ab", "}", index=0)], [(None, "ab", "{}")]),
    (
        "name in pieces",
        [fn("file_", "", index=0, id="1"), fn("read", "{}", index=0)],
        [("1", "file_read", "{}")],
    ),
    (
        "cumulative name",
        [fn("file", "", index=0, id="1"), fn("file_read", "{}", index=0)],
        [("1", "file_read", "{}")],
    ),
    ("object arguments", [fn("a", {"k": "é"}, id="1")], [("1", "a", '{"k": "é"}')]),
    (
        "no index, new ids",
        [fn("a", "{}", id="1"), fn("b", "{}", id="2")],
        [("1", "a", "{}"), ("2", "b", "{}")],
    ),
    ("no index, continued", [fn("a", "{", id="1"), fn(None, "}")], [("1", "a", "{}")]),
    ("no index, no ids, two names", [fn("a", "{}"), fn("b", "{}")], [(None, "a", "{}"), (None, "b", "{}")]),
    (
        "index reused with new id",
        [fn("a", "{}", index=0, id="1"), fn("b", "{}", index=0, id="2")],
        [("1", "a", "{}"), ("2", "b", "{}")],
    ),
    (
        "interleaved",
        [
            fn("a", "", index=0, id="1"),
            fn("b", "", index=1, id="2"),
            fn(None, "[1", index=1),
            fn(None, "[0", index=0),
            fn(None, "]", index=0),
            fn(None, "]", index=1),
        ],
        [("1", "a", "[0]"), ("2", "b", "[1]")],
    ),
    (
        "surrogates split",
        [fn("a", '"\ud83d', index=0, id="1"), fn(None, '\ude00"', index=0)],
        [("1", "a", '"😀"')],
    ),
    ("empty arguments", [fn("a", "", index=0, id="1")], [("1", "a", "")]),
    ("junk ignored", ["x", fn(None, None, index=0)], []),  # type: ignore[list-item]
]


@pytest.mark.parametrize(("case", "fragments", "expected"), RULES, ids=[r[0] for r in RULES])
def test_assembly_rules(case: str, fragments: list[dict[str, Any]], expected: list[Any]) -> None:
    assert assemble(*fragments) == expected


def test_split_mid_character_cuts_inside_a_character() -> None:
    pieces = split_mid_character("data: é\n\n".encode())
    assert len(pieces) == 2 and b"".join(pieces) == "data: é\n\n".encode()
    with pytest.raises(UnicodeDecodeError):
        pieces[0].decode()
