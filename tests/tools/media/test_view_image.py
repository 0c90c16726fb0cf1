"""view_image against vision-model stand-ins on 127.0.0.1, one per API format, and every refusal."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from fermix_cli.core.errors import ToolError
from tests.conftest import Env
from tests.tools.media.images import GIF, JPEG, WEBP, png
from tests.tools.webfakes import FakeWeb, Hit, Reply, json_reply

KEY = "vision-key-0123456789"


class Outcome:
    """An in-process call's result or ToolError, shaped like the CLI's (code, json, error)."""

    def __init__(self, result: Any = None, error: ToolError | None = None) -> None:
        self.result, self.err = result, error
        self.code = 0 if error is None else int(error.exit_class)

    def json(self) -> Any:
        return self.result

    def error(self) -> dict[str, Any]:
        assert self.err is not None, self.result
        return self.err.to_dict()

    @property
    def stderr(self) -> str:
        return "" if self.err is None else json.dumps(self.err.to_dict())


def view(world: Env, args: dict[str, Any], **ctx: Any) -> Outcome:
    from fermix_cli.core.registry import default_registry

    context = world.context(**ctx)
    try:
        return Outcome(default_registry().invoke("view_image", args, context))
    except ToolError as e:
        return Outcome(error=e)
    finally:
        context.close()


@pytest.fixture
def server() -> Iterator[FakeWeb]:
    web = FakeWeb()
    try:
        yield web
    finally:
        web.close()


def configure(world: Env, web: FakeWeb, kind: str | None, *, view: dict[str, Any] | None = None) -> None:
    """config.toml with a chat provider and (unless `kind` is None) a vision provider at the stand-in."""
    providers: dict[str, Any] = {
        # The chat model lives here too: view_image must never send it anything.
        "chat": {"type": "openai", "base_url": web.url("/chat/v1"), "api_key": "chat-key"},
    }
    section: dict[str, Any] = dict(view or {})
    if kind == "responses":
        providers["vis"] = {"type": "openai", "base_url": web.url("/oa/v1"), "api_key": KEY}
        section["vision_model"] = {"provider": "vis", "model": "gpt-vision", "api": "responses"}
    elif kind == "messages":
        providers["vis"] = {"type": "anthropic", "base_url": web.url("/an"), "api_key": KEY}
        section["vision_model"] = {"provider": "vis", "model": "claude-vision"}
    elif kind == "chat_completions":
        providers["vis"] = {"type": "openai", "base_url": web.url("/local/v1"), "api_key": KEY}
        section["vision_model"] = {"provider": "vis", "model": "llava"}
    data = {
        "fermix_core": {
            "net": {"allowed_private_hosts": ["127.0.0.1"]},
            "providers": providers,
            "agent": {"provider": "chat", "model": "chat-model"},
        },
        "capabilities": {"tools": {"view_image": section}} if section else {},
    }
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(tomli_w.dumps(data))


def answer(kind: str, text: str) -> Reply:
    if kind == "responses":
        return json_reply(
            {
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
            }
        )
    if kind == "messages":
        return json_reply(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
            }
        )
    return json_reply(
        {
            "id": "c1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        }
    )


ROUTES = {
    "responses": "/oa/v1/responses",
    "messages": "/an/v1/messages",
    "chat_completions": "/local/v1/chat/completions",
}


def image_in(hit: Hit, kind: str) -> tuple[str, bytes, str]:
    """(mime, bytes, prompt) as the stand-in received them, read per the API's documented shape."""
    body = hit.json()
    if kind == "responses":
        content = body["input"][0]["content"]
        prompt = next(c["text"] for c in content if c["type"] == "input_text")
        url = next(c["image_url"] for c in content if c["type"] == "input_image")
    elif kind == "messages":
        content = body["messages"][0]["content"]
        prompt = next(c["text"] for c in content if c["type"] == "text")
        src = next(c["source"] for c in content if c["type"] == "image")
        assert src["type"] == "base64"
        return src["media_type"], base64.b64decode(src["data"]), prompt
    else:
        content = body["messages"][0]["content"]
        prompt = next(c["text"] for c in content if c["type"] == "text")
        url = next(c["image_url"]["url"] for c in content if c["type"] == "image_url")
    head, _, data = url.partition(",")
    assert head.endswith(";base64") and head.startswith("data:")
    return head[5:-7], base64.b64decode(data), prompt


@pytest.mark.parametrize("kind", ["responses", "messages", "chat_completions"])
def test_each_api_format_gets_the_image_and_answers(world: Env, server: FakeWeb, kind: str) -> None:
    configure(world, server, kind)
    server.routes[ROUTES[kind]] = answer(kind, "A red square.")
    image = world.project / "shot.PNG"
    image.write_bytes(png(2, 2))
    r = view(world, {"path": str(image), "prompt": "What colour is it?"})
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["text"] == "A red square." and out["api"] == kind and out["format"] == "png"
    [hit] = server.hits
    assert hit.path == ROUTES[kind]
    mime, data, prompt = image_in(hit, kind)
    assert (mime, data, prompt) == ("image/png", png(2, 2), "What colour is it?")
    model = hit.json()["model"]
    assert (
        model == {"responses": "gpt-vision", "messages": "claude-vision", "chat_completions": "llava"}[kind]
    )
    if kind == "messages":
        assert hit.headers["x-api-key"] == KEY and hit.headers["anthropic-version"] == "2023-06-01"
        assert hit.json()["max_tokens"] >= 1
    else:
        assert hit.headers["authorization"] == f"Bearer {KEY}"


def test_the_cli_prints_the_answer_and_exit_codes(world: Env, server: FakeWeb) -> None:
    configure(world, server, "chat_completions")
    server.routes[ROUTES["chat_completions"]] = answer("chat_completions", "A red square.")
    image = world.project / "shot.png"
    image.write_bytes(png())
    text = world.run(
        "tool", "view_image", "--text", "--json", json.dumps({"path": str(image), "prompt": "x"})
    )
    assert (text.code, text.stdout.strip()) == (0, "A red square.")
    r = world.tool("view_image", {"path": "shot.png", "prompt": "x"})
    assert (r.code, r.error()["code"]) == (2, "path_not_absolute")


@pytest.mark.parametrize(
    ("name", "data", "mime"),
    [
        ("a.jpg", JPEG, "image/jpeg"),
        ("b.JPEG", JPEG, "image/jpeg"),
        ("c.gif", GIF, "image/gif"),
        ("d.WebP", WEBP, "image/webp"),
    ],
)
def test_every_supported_format(world: Env, server: FakeWeb, name: str, data: bytes, mime: str) -> None:
    configure(world, server, "chat_completions")
    server.routes[ROUTES["chat_completions"]] = answer("chat_completions", "ok")
    (world.project / name).write_bytes(data)
    r = view(world, {"path": str(world.project / name), "prompt": "describe"})
    assert r.code == 0, r.stderr
    assert image_in(server.hits[0], "chat_completions")[:2] == (mime, data)


def test_no_vision_model_is_refused_and_the_chat_model_gets_nothing(world: Env, server: FakeWeb) -> None:
    configure(world, server, None)
    image = world.project / "x.png"
    image.write_bytes(png())
    r = view(world, {"path": str(image), "prompt": "what is it"})
    assert r.code == 1 and r.error()["code"] == "no_vision_model"
    assert "vision_model" in r.error()["message"]
    assert server.hits == []


@pytest.mark.parametrize(
    ("name", "data", "code", "exit_code"),
    [
        ("lie.png", JPEG, "image_signature_mismatch", 1),
        ("lie.jpg", png(), "image_signature_mismatch", 1),
        ("lie.gif", b"not an image at all", "image_signature_mismatch", 1),
        ("lie.webp", b"RIFF\x00\x00\x00\x00WAVEfmt ", "image_signature_mismatch", 1),
        ("notes.txt", png(), "unsupported_image_type", 1),
        ("noext", png(), "unsupported_image_type", 1),
        ("empty.png", b"", "image_signature_mismatch", 1),
    ],
)
def test_lying_and_unsupported_files_never_leave(
    world: Env, server: FakeWeb, name: str, data: bytes, code: str, exit_code: int
) -> None:
    configure(world, server, "responses")
    (world.project / name).write_bytes(data)
    r = view(world, {"path": str(world.project / name), "prompt": "p"})
    assert (r.code, r.error()["code"]) == (exit_code, code), r.stderr
    assert server.hits == []


def test_max_image_bytes_is_enforced_at_the_exact_byte(world: Env, server: FakeWeb) -> None:
    data = png(4, 4)
    configure(world, server, "responses", view={"max_image_bytes": len(data) - 1})
    server.routes[ROUTES["responses"]] = answer("responses", "fine")
    image = world.project / "big.png"
    image.write_bytes(data)
    r = view(world, {"path": str(image), "prompt": "p"})
    assert r.error()["code"] == "image_too_large" and r.error()["details"]["bytes"] == len(data)
    assert server.hits == []
    configure(world, server, "responses", view={"max_image_bytes": len(data)})
    assert view(world, {"path": str(image), "prompt": "p"}).code == 0


@pytest.mark.parametrize("value", [0, 20 * 1024 * 1024 + 1])
def test_max_image_bytes_range_is_checked(world: Env, server: FakeWeb, value: int) -> None:
    configure(world, server, "responses", view={"max_image_bytes": value})
    (world.project / "a.png").write_bytes(png())
    r = view(world, {"path": str(world.project / "a.png"), "prompt": "p"})
    assert r.code != 0 and "max_image_bytes" in r.stderr


def test_relative_missing_directory_and_outside_paths(world: Env, server: FakeWeb, tmp_path: Path) -> None:
    configure(world, server, "responses")
    (world.project / "a.png").write_bytes(png())
    r = view(world, {"path": "a.png", "prompt": "p"})
    assert (r.code, r.error()["code"]) == (2, "path_not_absolute")
    r = view(world, {"path": str(world.project / "gone.png"), "prompt": "p"})
    assert r.error()["code"] == "not_found"
    (world.project / "dir.png").mkdir()
    r = view(world, {"path": str(world.project / "dir.png"), "prompt": "p"})
    assert r.error()["code"] == "not_regular_file"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "o.png").write_bytes(png())
    r = view(world, {"path": str(outside / "o.png"), "prompt": "p"})
    assert r.code == 3 and r.error()["code"] == "outside_root"
    assert server.hits == []


def test_symlinks_are_canonicalised_and_the_target_judged(
    world: Env, server: FakeWeb, tmp_path: Path
) -> None:
    configure(world, server, "responses")
    server.routes[ROUTES["responses"]] = answer("responses", "seen")
    (world.project / "real.png").write_bytes(png())
    (world.project / "link.png").symlink_to(world.project / "real.png")
    r = view(world, {"path": str(world.project / "link.png"), "prompt": "p"})
    assert r.code == 0 and r.json()["path"] == str((world.project / "real.png").resolve())
    secret = tmp_path / "secret.png"
    secret.write_bytes(png())
    (world.project / "escape.png").symlink_to(secret)
    r = view(world, {"path": str(world.project / "escape.png"), "prompt": "p"})
    assert r.code == 3 and r.error()["code"] == "outside_root"
    assert len(server.hits) == 1


def test_absolute_paths_false_keeps_to_the_working_directory(world: Env, server: FakeWeb) -> None:
    configure(world, server, "responses", view={"absolute_paths": False})
    server.routes[ROUTES["responses"]] = answer("responses", "inside")
    sub = world.project / "sub"
    sub.mkdir()
    (world.project / "top.png").write_bytes(png())
    (sub / "in.png").write_bytes(png())
    assert view(world, {"path": str(sub / "in.png"), "prompt": "p"}, cwd=str(sub)).code == 0
    r = view(world, {"path": str(world.project / "top.png"), "prompt": "p"}, cwd=str(sub))
    assert r.code == 3 and r.error()["code"] == "absolute_path_denied"


def test_provider_refusals_are_typed(world: Env, server: FakeWeb) -> None:
    configure(world, server, "messages")
    image = world.project / "a.png"
    image.write_bytes(png())
    route = ROUTES["messages"]
    server.routes[route] = json_reply(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        status=429,
        headers={"retry-after": "7"},
    )
    r = view(world, {"path": str(image), "prompt": "p"})
    assert r.error()["code"] == "rate_limited" and r.error()["details"]["retry_after"] == 7
    server.routes[route] = json_reply(
        {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}, 401
    )
    r = view(world, {"path": str(image), "prompt": "p"})
    assert r.error()["code"] == "auth_failed" and KEY not in r.stderr
    server.routes[route] = json_reply({"id": "m", "content": []})
    assert view(world, {"path": str(image), "prompt": "p"}).error()["code"] == "provider_error"
    # Bodies nested deeper than the JSON parser follows are malformed answers too, on success or failure.
    for status in (200, 400):
        server.routes[route] = Reply(status, b"[" * 200_000, {"Content-Type": "application/json"})
        assert view(world, {"path": str(image), "prompt": "p"}).error()["code"] == "provider_error"


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("responses", {"output": 5}),
        ("responses", {"output": [{"type": "message", "content": 5}]}),
        ("messages", {"content": 5}),
        ("chat_completions", {"choices": {"0": {"message": {"content": "hi"}}}}),
        ("chat_completions", {"choices": 5}),
    ],
)
def test_a_malformed_answer_is_a_provider_error(
    world: Env, server: FakeWeb, kind: str, body: dict[str, Any]
) -> None:
    configure(world, server, kind)
    image = world.project / "a.png"
    image.write_bytes(png())
    server.routes[ROUTES[kind]] = json_reply(body)
    r = view(world, {"path": str(image), "prompt": "p"})
    assert r.error()["code"] == "provider_error" and "carries no text" in r.error()["message"]


def test_unusable_vision_providers_are_refused(world: Env, server: FakeWeb) -> None:
    (world.project / "a.png").write_bytes(png())
    for vm, code in [
        ({"provider": "nowhere", "model": "m"}, "vision_model_unavailable"),
        ({"provider": "echo", "model": "m"}, "vision_model_unavailable"),
    ]:
        configure(world, server, None, view={"vision_model": vm})
        r = view(world, {"path": str(world.project / "a.png"), "prompt": "p"})
        assert r.error()["code"] == code, r.stderr
    assert server.hits == []


def test_answer_is_capped_at_64_kib(world: Env, server: FakeWeb) -> None:
    configure(world, server, "responses")
    server.routes[ROUTES["responses"]] = answer("responses", "é" * 40_000)
    (world.project / "a.png").write_bytes(png())
    out = view(world, {"path": str(world.project / "a.png"), "prompt": "p"}).json()
    assert out["truncated"] is True and len(out["text"].encode()) == 65_536


def test_view_image_is_offered_in_the_coding_toolset_only() -> None:
    from fermix_cli.core.registry import default_registry

    spec = default_registry().get("view_image")
    assert spec.toolsets == frozenset({"coding"}) and (spec.policy_class, spec.owner_only) == (
        "read_only",
        True,
    )


def test_a_refusal_imports_no_http_stack(world: Env, server: FakeWeb) -> None:
    configure(world, server, None)
    (world.project / "a.png").write_bytes(png())
    args = json.dumps({"path": str(world.project / "a.png"), "prompt": "p"})
    r, loaded = world.imports_of(["tool", "view_image", "--json", args], ["httpx", "typer", "pydantic"])
    assert r.code == 1 and loaded == []
