"""send_attachment and react through a reply port: in the loop, in the terminal's outbox, and refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from fermix_cli.channels.outbox import OutboxPort, outbox_dir
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from fermix_cli.core.replyport import REPLY_PORT
from tests.conftest import Env
from tests.tools.media.images import png


class FakePort:
    """A chat channel's port that records what it was asked to deliver."""

    platform = "fake"

    def __init__(self, reactions: frozenset[str] | None = frozenset({"👍", "❤", "🔥"})) -> None:
        self.reactions = reactions
        self.sent: list[dict[str, Any]] = []
        self.reacted: list[str] = []

    def send_attachment(self, data: bytes, **kw: Any) -> dict[str, Any]:
        self.sent.append({"data": data, **kw})
        return {"message_id": len(self.sent)}

    def react(self, emoji: str) -> dict[str, Any]:
        self.reacted.append(emoji)
        return {"message_id": 7}


def call(world: Env, name: str, args: dict[str, Any], port: Any = None, **kw: Any) -> Any:
    extras = {} if port is None else {REPLY_PORT: port}
    ctx = world.context(extras=extras, **kw)
    try:
        return default_registry().invoke(name, args, ctx)
    finally:
        ctx.close()


def run_agent(world: Env, port: Any, steps: list[list[dict[str, Any]]], **kw: Any) -> tuple[Any, list[str]]:
    ctx = world.context(extras={REPLY_PORT: port}, origin="interactive", **kw)
    agent = Agent(ctx, AgentOptions(model="echo"))
    try:
        loop = agent.open()
        offered = [s.name for s in loop._schemas]
        return agent.run(json.dumps({"tool_calls": steps})), offered
    finally:
        agent.close()
        ctx.close()


def test_a_reaction_alone_ends_the_turn_without_another_model_call(world: Env) -> None:
    port = FakePort()
    result, offered = run_agent(world, port, [[{"name": "react", "arguments": {"emoji": "👍"}}]])
    assert "react" in offered and "send_attachment" in offered
    assert port.reacted == ["👍"]
    assert (result.status, result.iterations, result.response) == ("ok", 1, "")


def test_other_calls_still_get_a_model_turn(world: Env) -> None:
    (world.project / "a.txt").write_text("hello")
    port = FakePort()
    steps = [
        [
            {"name": "react", "arguments": {"emoji": "🔥"}},
            {"name": "file_read", "arguments": {"path": "a.txt"}},
        ]
    ]
    result, _ = run_agent(world, port, steps)
    assert result.iterations == 2 and port.reacted == ["🔥"]
    assert [o.ok for o in result.outcomes] == [True, True]


def test_one_channel_call_per_model_step(world: Env) -> None:
    (world.project / "a.txt").write_text("first")
    (world.project / "b.txt").write_text("second")
    port = FakePort()
    steps = [
        [
            {"name": "send_attachment", "arguments": {"path": "a.txt"}},
            {"name": "send_attachment", "arguments": {"path": "b.txt"}},
            {"name": "react", "arguments": {"emoji": "👍"}},
        ],
        [{"name": "send_attachment", "arguments": {"path": "b.txt"}}],
        [{"name": "react", "arguments": {"emoji": "👍"}}],
    ]
    result, _ = run_agent(world, port, steps)
    # Step 1 delivers only its first channel call; the model is told to call the others again.
    first, second, reaction, retried, reacted = result.outcomes
    assert first.ok and not second.ok and not reaction.ok
    for refused in (second, reaction):
        assert refused.error_code == "channel_call_limit"
        assert (
            "call it again next step" in refused.output and "send_attachment already used" in refused.output
        )
    # The next steps may each make one again; the reaction alone ends the turn.
    assert retried.ok and reacted.ok
    assert [s["data"] for s in port.sent] == [b"first", b"second"] and port.reacted == ["👍"]
    assert (result.status, result.iterations) == ("ok", 3)


def test_outside_a_model_loop_every_call_is_its_own_step(world: Env) -> None:
    (world.project / "a.txt").write_text("x")
    port = FakePort()
    ctx = world.context(extras={REPLY_PORT: port})
    try:
        for _ in range(2):
            default_registry().invoke("send_attachment", {"path": "a.txt"}, ctx)
        default_registry().invoke("react", {"emoji": "👍"}, ctx)
    finally:
        ctx.close()
    assert len(port.sent) == 2 and port.reacted == ["👍"]


def test_a_refused_reaction_goes_back_to_the_model(world: Env) -> None:
    port = FakePort()
    result, _ = run_agent(world, port, [[{"name": "react", "arguments": {"emoji": "🦄"}}]])
    assert result.iterations == 2 and port.reacted == []
    assert result.outcomes[0].error_code == "emoji_not_allowed"


def test_react_schema_is_narrowed_to_the_channel_set(world: Env) -> None:
    port = FakePort(frozenset({"👍", "👌"}))
    ctx = world.context(extras={REPLY_PORT: port}, origin="interactive")
    agent = Agent(ctx, AgentOptions(model="echo"))
    try:
        schema = next(s for s in agent.open()._schemas if s.name == "react")
    finally:
        agent.close()
        ctx.close()
    assert schema.parameters["properties"]["emoji"]["enum"] == ["👌", "👍"]
    assert "enum" not in default_registry().get("react").input_schema()["properties"]["emoji"]


def test_terminal_offers_send_attachment_but_not_react(world: Env) -> None:
    port = OutboxPort(world.context().paths, lambda line: None)
    _, offered = run_agent(world, port, [])
    assert "send_attachment" in offered and "react" not in offered
    _, offered = run_agent(world, None, [])
    assert "send_attachment" not in offered and "react" not in offered
    with pytest.raises(ToolError) as e:
        call(world, "react", {"emoji": "👍"}, port)
    assert e.value.code == "reactions_unsupported"


def test_without_a_channel_both_are_refused(world: Env) -> None:
    (world.project / "a.txt").write_text("x")
    for name, args in (("send_attachment", {"path": "a.txt"}), ("react", {"emoji": "👍"})):
        with pytest.raises(ToolError) as e:
            call(world, name, args)
        assert e.value.code == "no_active_channel"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"path": "https://example.org/a.png"}, "url_refused"),
        ({"path": "file:///etc/passwd"}, "url_refused"),
        ({"path": "data:image/png;base64,AAAA"}, "url_refused"),
        ({"path": "missing.txt"}, "not_found"),
        ({"path": "."}, "not_regular_file"),
        ({"path": "a.txt", "kind": "image"}, "not_an_image"),
        ({"path": "a.txt", "filename": "../x"}, "invalid_filename"),
        ({"path": "a.txt", "mime_type": "not a type"}, "invalid_mime_type"),
        ({"path": "/etc/hostname"}, "protected_path"),
        ({"path": "OUTSIDE"}, "outside_root"),
    ],
)
def test_send_attachment_refusals(world: Env, args: dict[str, Any], code: str) -> None:
    (world.project / "a.txt").write_text("x")
    (world.root / "o.txt").write_text("x")
    if args["path"] == "OUTSIDE":
        args = {"path": str(world.root / "o.txt")}
    port = FakePort()
    with pytest.raises(ToolError) as e:
        call(world, "send_attachment", args, port)
    assert e.value.code == code
    assert port.sent == []


def test_send_attachment_details_reach_the_port(world: Env) -> None:
    (world.project / "pic.png").write_bytes(png())
    port = FakePort()
    out = call(
        world,
        "send_attachment",
        {"path": "pic.png", "kind": "image", "caption": "look", "filename": "p.png"},
        port,
    )
    assert out["mime_type"] == "image/png" and out["platform"] == "fake" and out["message_id"] == 1
    sent = port.sent[0]
    assert (sent["kind"], sent["caption"], sent["filename"], sent["data"]) == (
        "image",
        "look",
        "p.png",
        png(),
    )
    assert sent["source"] == str((world.project / "pic.png").resolve())


def test_outbox_copies_never_overwrite(world: Env) -> None:
    (world.project / "r.txt").write_text("one")
    lines: list[str] = []
    port = OutboxPort(world.context().paths, lines.append)
    first = call(world, "send_attachment", {"path": "r.txt"}, port)["outbox_path"]
    (world.project / "r.txt").write_text("two")
    second = call(world, "send_attachment", {"path": "r.txt", "caption": "again"}, port)["outbox_path"]
    assert Path(first).name == "r.txt" and Path(second).name == "r-2.txt"
    assert Path(first).read_text() == "one" and Path(second).read_text() == "two"
    assert lines == [f"attachment: {first}", f"attachment: {second} (again)"]


def test_fermix_ask_prints_the_outbox_path(world: Env) -> None:
    (world.project / "note.txt").write_text("for you")
    prompt = json.dumps({"tool_calls": [{"name": "send_attachment", "arguments": {"path": "note.txt"}}]})
    r = world.run("ask", "-m", "echo", prompt)
    assert r.code == 0, r.stderr
    copy = outbox_dir(world.context().paths) / "note.txt"
    assert f"attachment: {copy}" in r.stderr and copy.read_text() == "for you"
