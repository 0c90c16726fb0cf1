"""A tool result that carries an image (a screenshot) reaches the model as an image block: a user message
of `image_url` parts after the tool messages (Chat Completions), an image block inside the `tool_result`
(Messages API); a model without vision gets a line naming the file instead. Checked end to end through
the loop against the 127.0.0.1 model server, which refuses malformed image content as the APIs do."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from fermix_cli.agent.messages import Message
from fermix_cli.agent.providers.anthropic import wire_messages as anthropic_wire
from fermix_cli.agent.providers.images import MAX_INLINE
from fermix_cli.agent.providers.openai import wire_messages as openai_wire
from fermix_cli.core.registry import Params, Registry, ToolSpec
from tests.agent.model_server import ModelServer, text, tools
from tests.conftest import Env

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    s = ModelServer()
    try:
        yield s
    finally:
        s.close()


def configure(world: Env, server: ModelServer, kind: str, **extra: Any) -> None:
    base = f"{server.base}/v1" if kind == "openai" else server.base
    lines = [
        f'[fermix_core.providers.local]\ntype = "{kind}"\nbase_url = "{base}"\ndefault_model = "m"',
        *(f"{k} = {json.dumps(v)}" for k, v in extra.items()),
        '\n[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]',
    ]
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text("\n".join(lines) + "\n")


class SnapParams(Params):
    pass


def snapping_registry(image: Path) -> Registry:
    reg = Registry()
    reg.register(
        ToolSpec(
            "snap",
            "test",
            "read_only",
            "Takes a picture.",
            SnapParams,
            lambda p, ctx: {"path": str(image)},
            images=lambda result: [result["path"]],
        )
    )
    return reg


def run_snap(world: Env, server: ModelServer, image: Path) -> list[dict[str, Any]]:
    server.queue(tools(("snap", {})), text("I see a pixel"))
    ctx = world.context(origin="interactive")
    agent = Agent(ctx, AgentOptions(provider="local", tools=["snap"]), registry=snapping_registry(image))
    try:
        result = agent.run("look")
    finally:
        agent.close()
        ctx.close()
    assert result.status == "ok", result.error
    assert server.violations == []
    return server.seen[1].body["messages"]  # type: ignore[no-any-return]


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "shot.png"
    path.write_bytes(PNG)
    return path


def test_openai_gets_the_image_in_a_user_message_after_the_tool_results(
    world: Env, server: ModelServer, image: Path
) -> None:
    configure(world, server, "openai", vision=True)
    messages = run_snap(world, server, image)
    tool = next(m for m in messages if m["role"] == "tool")
    assert isinstance(tool["content"], str) and str(image) in tool["content"]
    follow = messages[messages.index(tool) + 1]
    assert follow["role"] == "user"
    parts = [p for p in follow["content"] if p["type"] == "image_url"]
    assert parts[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_anthropic_gets_an_image_block_inside_the_tool_result(
    world: Env, server: ModelServer, image: Path
) -> None:
    configure(world, server, "anthropic")
    messages = run_snap(world, server, image)
    result = next(b for m in messages for b in m["content"] if b.get("type") == "tool_result")
    kinds = [b["type"] for b in result["content"]]
    assert kinds == ["text", "image"]
    source = result["content"][1]["source"]
    assert source == {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}


def test_a_model_without_vision_gets_the_file_named_in_text(
    world: Env, server: ModelServer, image: Path
) -> None:
    configure(world, server, "openai")  # a local OpenAI-compatible server: no vision unless configured
    messages = run_snap(world, server, image)
    assert not any(isinstance(m["content"], list) for m in messages)
    tool = next(m for m in messages if m["role"] == "tool")
    assert f"[image file: {image} — not sent: this model takes no images]" in tool["content"]


def test_only_the_newest_images_travel_and_a_missing_file_is_named() -> None:
    history = [Message("user", "go")]
    for n in range(MAX_INLINE + 2):
        history.append(Message("assistant", "", tool_calls=[]))
        history.append(
            Message("tool", f"r{n}", tool_call_id=f"c{n}", tool_name="snap", images=[f"/nope/{n}.png"])
        )
    out = anthropic_wire(history)
    texts = [b["content"] for m in out for b in m["content"] if b.get("type") == "tool_result"]
    assert "an older image, not sent again" in texts[0] and "an older image" in texts[1]
    assert all("not sent: unreadable" in t for t in texts[2:])
    assert openai_wire("", history, vision=True)[-1]["role"] == "tool"  # nothing loaded: no image message


def test_images_after_the_last_tool_message_close_the_request(tmp_path: Path) -> None:
    shot = tmp_path / "a.png"
    shot.write_bytes(PNG)
    history = [
        Message("user", "go"),
        Message("tool", "one", tool_call_id="c1", tool_name="snap", images=[str(shot)]),
        Message("tool", "two", tool_call_id="c2", tool_name="snap", images=[str(shot)]),
        Message("assistant", "done"),
    ]
    out = openai_wire("", history, vision=True)
    assert [m["role"] for m in out] == ["user", "tool", "tool", "user", "assistant"]
    assert [p["type"] for p in out[3]["content"]] == ["text", "image_url", "text", "image_url"]
