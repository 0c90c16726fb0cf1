"""generate_image against 127.0.0.1 stand-ins speaking each backend's documented wire format."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from fermix_cli.core.replyport import INBOUND, REPLY_PORT, InboundFile
from tests.channels.standins import multipart
from tests.conftest import Env
from tests.tools.media.images import JPEG, png
from tests.tools.media.test_channel_tools import FakePort
from tests.tools.webfakes import FakeWeb, Reply, json_reply

OUT = png(3, 2, (0, 0, 255, 255))
B64 = base64.b64encode(OUT).decode()
NESTED = b"[" * 200_000
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
PATHS = {
    "openai_gen": "/oa/v1/images/generations",
    "openai_edit": "/oa/v1/images/edits",
    "xai_gen": "/x/v1/images/generations",
    "xai_edit": "/x/v1/images/edits",
    "codex": "/codex/responses",
}


def google_path(model: str) -> str:
    return f"/g/v1beta/models/{model}:generateContent"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    for name in ("OPENAI_API_KEY", "XAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    web = FakeWeb()
    try:
        yield web
    finally:
        web.close()


def configure(world: Env, web: FakeWeb, backend: str | None, **extra: Any) -> None:
    section: dict[str, Any] = {
        "openai_url": web.url("/oa/v1"),
        "xai_url": web.url("/x/v1"),
        "google_url": web.url("/g/v1beta"),
        "codex_url": web.url("/codex"),
        "openai_api_key": "oa-key",
        "xai_api_key": "x-key",
        "google_api_key": "g-key",
        **extra,
    }
    section = {k: v for k, v in section.items() if v is not None}
    if backend is not None:
        section["backend"] = backend
    data = {
        "fermix_core": {"net": {"allowed_private_hosts": ["127.0.0.1"]}, "tools": {"generate_image": section}}
    }
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(tomli_w.dumps(data))


def generate(world: Env, args: dict[str, Any], **extras: Any) -> Any:
    ctx = world.context(clock=lambda: NOW, extras=extras)
    try:
        return default_registry().invoke("generate_image", args, ctx)
    finally:
        ctx.close()


def refused(world: Env, args: dict[str, Any], **extras: Any) -> ToolError:
    with pytest.raises(ToolError) as e:
        generate(world, args, **extras)
    return e.value


def images_reply() -> Reply:
    return json_reply({"created": 1, "data": [{"b64_json": B64, "revised_prompt": "a blue square"}]})


def google_reply() -> Reply:
    return json_reply(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "Here it is"},
                            {"inlineData": {"mimeType": "image/png", "data": B64}},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )


def sse(events: list[dict[str, Any]]) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    return Reply(200, body, {"Content-Type": "text/event-stream"})


def codex_login(world: Env) -> None:
    auth = world.home / ".codex" / "auth.json"
    auth.parent.mkdir(parents=True, exist_ok=True)
    auth.write_text(json.dumps({"tokens": {"access_token": "codex-token", "account_id": "acct-1"}}))


def codex_reply() -> Reply:
    item = {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": B64}
    return sse(
        [
            {"type": "response.created", "response": {"id": "r1"}},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": "r1", "status": "completed"}},
        ]
    )


@pytest.mark.parametrize("backend", ["openai", "xai", "google", "openai_codex"])
def test_generate_on_each_backend(world: Env, server: FakeWeb, backend: str) -> None:
    configure(world, server, backend)
    server.routes.update(
        {
            PATHS["openai_gen"]: images_reply(),
            PATHS["xai_gen"]: images_reply(),
            google_path("gemini-3.1-flash-image"): google_reply(),
            PATHS["codex"]: codex_reply(),
        }
    )
    if backend == "openai_codex":
        codex_login(world)
    out = generate(world, {"prompt": "a blue square", "size": "1024x1024"})
    assert out["backend"] == backend and out["sent"] is False and out["format"] == "png"
    path = Path(out["path"])
    assert path.parent == world.fermix_home / "media" and path.read_bytes() == OUT
    [hit] = server.hits
    body = hit.json()
    if backend == "openai":
        assert hit.path == PATHS["openai_gen"] and hit.headers["authorization"] == "Bearer oa-key"
        assert body == {"model": "gpt-image-2", "prompt": "a blue square", "n": 1, "size": "1024x1024"}
    elif backend == "xai":
        assert hit.path == PATHS["xai_gen"] and hit.headers["authorization"] == "Bearer x-key"
        assert body["model"] == "grok-imagine-image-2.0" and body["response_format"] == "b64_json"
        assert body["aspect_ratio"] == "1:1" and body["prompt"] == "a blue square"
    elif backend == "google":
        assert hit.headers["x-goog-api-key"] == "g-key"
        assert body["contents"][0]["parts"] == [{"text": "a blue square"}]
        assert "IMAGE" in body["generationConfig"]["responseModalities"]
    else:
        assert (
            hit.headers["authorization"] == "Bearer codex-token"
            and hit.headers["chatgpt-account-id"] == "acct-1"
        )
        assert body["model"] == "gpt-5.2" and body["stream"] is True
        assert body["tools"] == [
            {"type": "image_generation", "model": "gpt-image-2", "output_format": "png", "size": "1024x1024"}
        ]
        assert body["input"][0]["content"] == [{"type": "input_text", "text": "a blue square"}]


def test_results_never_overwrite(world: Env, server: FakeWeb) -> None:
    configure(world, server, "openai")
    server.routes[PATHS["openai_gen"]] = images_reply()
    first = generate(world, {"prompt": "one"})["path"]
    second = generate(world, {"prompt": "two"})["path"]
    assert first != second and Path(first).exists() and Path(second).exists()
    assert Path(second).name == Path(first).stem + "-2.png"


def test_openai_edit_with_mask_is_multipart(world: Env, server: FakeWeb) -> None:
    configure(world, server, "openai", model="gpt-image-1.5")
    server.routes[PATHS["openai_edit"]] = images_reply()
    (world.project / "src.png").write_bytes(png(2, 2))
    (world.project / "mask.png").write_bytes(png(2, 2, (0, 0, 0, 0)))
    out = generate(
        world, {"prompt": "add a hat", "operation": "edit", "input_image": "src.png", "mask": "mask.png"}
    )
    assert out["model"] == "gpt-image-1.5" and out["operation"] == "edit"
    [hit] = server.hits
    parts = multipart(hit)
    assert parts["image"][1] == png(2, 2) and parts["mask"][1] == png(2, 2, (0, 0, 0, 0))
    assert parts["prompt"][1] == b"add a hat" and parts["model"][1] == b"gpt-image-1.5"


def test_xai_edit_sends_a_data_url(world: Env, server: FakeWeb) -> None:
    configure(world, server, "xai")
    server.routes[PATHS["xai_edit"]] = images_reply()
    (world.project / "src.jpg").write_bytes(JPEG)
    generate(
        world, {"prompt": "pencil sketch", "operation": "edit", "input_image": str(world.project / "src.jpg")}
    )
    image = server.hits[0].json()["image"]
    assert image == {"url": "data:image/jpeg;base64," + base64.b64encode(JPEG).decode(), "type": "image_url"}


def test_xai_b64_json_given_as_a_data_uri_is_decoded(world: Env, server: FakeWeb) -> None:
    configure(world, server, "xai")
    # xAI's documented response example carries the image as a data URI inside b64_json.
    server.routes[PATHS["xai_gen"]] = json_reply({"data": [{"b64_json": "data:image/png;base64," + B64}]})
    assert Path(generate(world, {"prompt": "a blue square"})["path"]).read_bytes() == OUT


def test_edit_of_the_image_sent_in_chat(world: Env, server: FakeWeb) -> None:
    configure(world, server, "google", model="gemini-2.5-flash-image")
    server.routes[google_path("gemini-2.5-flash-image")] = google_reply()
    inbox = world.fermix_home / "media" / "inbound"
    inbox.mkdir(parents=True)
    first, last = inbox / "a.png", inbox / "b.jpg"
    first.write_bytes(png())
    last.write_bytes(JPEG)
    port = FakePort()
    files = [
        InboundFile(str(first), "image", "image/png"),
        InboundFile(str(world.project), "document", "text/plain"),
        InboundFile(str(last), "image", "image/jpeg"),
    ]
    out = generate(
        world,
        {"prompt": "brighter", "operation": "edit", "input_image": "inbound:last"},
        **{REPLY_PORT: port, INBOUND: files},
    )
    parts = server.hits[0].json()["contents"][0]["parts"]
    assert parts[1] == {"inline_data": {"mime_type": "image/jpeg", "data": base64.b64encode(JPEG).decode()}}
    assert out["sent"] is True and port.sent[0]["kind"] == "image" and port.sent[0]["data"] == OUT
    generate(world, {"prompt": "x", "operation": "edit", "input_image": "inbound:1"}, **{INBOUND: files})
    assert server.hits[1].json()["contents"][0]["parts"][1]["inline_data"]["mime_type"] == "image/png"
    e = refused(world, {"prompt": "x", "operation": "edit", "input_image": "inbound:3"}, **{INBOUND: files})
    assert e.code == "no_inbound_image"
    e = refused(world, {"prompt": "x", "operation": "edit", "input_image": "inbound:last"})
    assert e.code == "no_inbound_image"


def test_refused_prompts_are_typed(world: Env, server: FakeWeb) -> None:
    configure(world, server, "openai")
    server.routes[PATHS["openai_gen"]] = json_reply(
        {
            "error": {
                "code": "moderation_blocked",
                "message": "Your request was rejected by the safety system.",
                "type": "image_generation_user_error",
            }
        },
        status=400,
    )
    assert refused(world, {"prompt": "bad"}).code == "prompt_refused"
    configure(world, server, "google")
    route = google_path("gemini-3.1-flash-image")
    server.routes[route] = json_reply({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})
    assert refused(world, {"prompt": "bad"}).code == "prompt_refused"
    server.routes[route] = json_reply(
        {"candidates": [{"content": {"parts": []}, "finishReason": "IMAGE_SAFETY"}]}
    )
    assert refused(world, {"prompt": "bad"}).details["reason"] == "IMAGE_SAFETY"
    configure(world, server, "openai_codex")
    codex_login(world)
    server.routes[PATHS["codex"]] = sse(
        [
            {
                "type": "response.failed",
                "response": {"error": {"code": "moderation_blocked", "message": "blocked"}},
            }
        ]
    )
    assert refused(world, {"prompt": "bad"}).code == "prompt_refused"
    assert not (world.fermix_home / "media").exists() or not any((world.fermix_home / "media").iterdir())


GOOGLE_ROUTE = google_path("gemini-3.1-flash-image")


@pytest.mark.parametrize(
    ("backend", "route", "reply"),
    [
        ("google", GOOGLE_ROUTE, json_reply({"candidates": [{"content": "oops"}]})),
        ("google", GOOGLE_ROUTE, json_reply({"candidates": [{"content": [1]}]})),
        ("google", GOOGLE_ROUTE, json_reply({"candidates": [{"content": {"parts": [1, "x"]}}]})),
        ("google", GOOGLE_ROUTE, json_reply({"candidates": [{"content": {"parts": 7}}]})),
        ("google", GOOGLE_ROUTE, json_reply({"candidates": "none"})),
        ("google", GOOGLE_ROUTE, json_reply([1, 2])),
        ("openai", PATHS["openai_gen"], json_reply({"data": "oops"})),
        ("openai", PATHS["openai_gen"], json_reply({"data": [1]})),
        ("xai", PATHS["xai_gen"], json_reply({"data": [{"b64_json": 5}]})),
        (
            "openai_codex",
            PATHS["codex"],
            sse([{"type": "response.completed", "response": "oops"}]),
        ),
        ("openai_codex", PATHS["codex"], sse([{"type": "response.failed", "response": [1]}])),
        # Nested deeper than the JSON parser follows (RecursionError, not ValueError): still malformed.
        ("openai", PATHS["openai_gen"], Reply(200, NESTED, {"Content-Type": "application/json"})),
        ("openai", PATHS["openai_gen"], Reply(500, NESTED, {"Content-Type": "application/json"})),
        ("openai_codex", PATHS["codex"], Reply(500, NESTED, {"Content-Type": "application/json"})),
        (
            "openai_codex",
            PATHS["codex"],
            Reply(
                200,
                b"event: response.completed\ndata: " + NESTED + b"\n\n",
                {"Content-Type": "text/event-stream"},
            ),
        ),
        (
            "openai_codex",
            PATHS["codex"],
            sse(
                [
                    {
                        "type": "response.output_item.done",
                        "item": {"type": "image_generation_call", "result": [1]},
                    }
                ]
            ),
        ),
    ],
)
def test_a_malformed_answer_is_a_provider_error(
    world: Env, server: FakeWeb, backend: str, route: str, reply: Reply
) -> None:
    configure(world, server, backend)
    if backend == "openai_codex":
        codex_login(world)
    server.routes[route] = reply
    e = refused(world, {"prompt": "a fox"})
    assert (e.code, e.details["backend"]) == ("provider_error", backend)


@pytest.mark.parametrize("backend", ["openai", "xai", "google"])
def test_rate_limits_are_typed(world: Env, server: FakeWeb, backend: str) -> None:
    configure(world, server, backend)
    limited = json_reply(
        {"error": {"code": 429, "message": "Too many requests", "status": "RESOURCE_EXHAUSTED"}},
        429,
        {"retry-after": "30"},
    )
    for path in (PATHS["openai_gen"], PATHS["xai_gen"], google_path("gemini-3.1-flash-image")):
        server.routes[path] = limited
    e = refused(world, {"prompt": "p"})
    assert (e.code, e.details["retry_after"], e.details["backend"]) == ("rate_limited", 30, backend)


def test_configuration_and_capability_refusals_send_nothing(world: Env, server: FakeWeb) -> None:
    configure(world, server, None)
    assert refused(world, {"prompt": "p"}).code == "image_generation_not_configured"
    configure(world, server, "xai")
    (world.project / "m.png").write_bytes(png())
    e = refused(world, {"prompt": "p", "operation": "edit", "input_image": "m.png", "mask": "m.png"})
    assert (e.code, e.details["operation"]) == ("unsupported_operation", "mask")
    e = refused(world, {"prompt": "p", "model": "gpt-image-2"})
    assert e.code == "unsupported_model" and e.details["models"] == [
        "grok-imagine-image-2.0",
        "grok-imagine-image-quality",
    ]
    assert refused(world, {"prompt": "p", "operation": "edit"}).code == "missing_input_image"
    assert refused(world, {"prompt": "p", "input_image": "m.png"}).code == "invalid_input"
    (world.project / "lie.png").write_bytes(JPEG)
    e = refused(world, {"prompt": "p", "operation": "edit", "input_image": "lie.png"})
    assert e.code == "image_signature_mismatch"
    assert refused(world, {"prompt": "p", "size": "1000x999"}).code == "unsupported_size"
    configure(world, server, "openai", openai_api_key=None)
    assert refused(world, {"prompt": "p"}).code == "image_backend_not_configured"
    configure(world, server, "openai_codex")
    assert refused(world, {"prompt": "p"}).code == "codex_login_missing"
    assert refused(world, {"prompt": "p", "model": "gpt-image-1.5"}).code == "unsupported_model"
    assert server.hits == []


def test_codex_refused_login_asks_for_a_new_login(world: Env, server: FakeWeb) -> None:
    configure(world, server, "openai_codex")
    codex_login(world)  # no refresh token: a 401 cannot be recovered from
    server.routes[PATHS["codex"]] = json_reply({"detail": "Unauthorized"}, 401)
    assert refused(world, {"prompt": "p"}).code == "codex_login_expired"
    server.routes[PATHS["codex"]] = json_reply({"detail": "Forbidden"}, 403)
    assert refused(world, {"prompt": "p"}).code == "codex_not_entitled"


def test_the_cli_reports_an_unconfigured_backend(world: Env, server: FakeWeb) -> None:
    configure(world, server, None)
    r = world.tool("generate_image", {"prompt": "a cat"})
    assert r.code == 1 and r.error()["code"] == "image_generation_not_configured"
