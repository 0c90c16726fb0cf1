"""generate_image's openai_codex backend against a stand-in for the ChatGPT/Codex backend and token server."""

from __future__ import annotations

import base64
import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env
from tests.tools.media.codexstandin import RESPONSES, TOKEN, CodexBackend, image_events, sse
from tests.tools.media.images import png
from tests.tools.media.test_generate_image import NOW, configure
from tests.tools.webfakes import FakeWeb, Hit, Reply, json_reply

OUT = png(4, 3, (255, 0, 0, 255))
B64 = base64.b64encode(OUT).decode()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    web = FakeWeb()
    try:
        yield web
    finally:
        web.close()


@pytest.fixture
def backend(world: Env, server: FakeWeb) -> CodexBackend:
    configure(world, server, "openai_codex", codex_refresh_url=server.url(TOKEN))
    return CodexBackend(server, NOW, B64)


def auth_path(world: Env) -> Path:
    return world.home / ".codex" / "auth.json"


def generate(world: Env, args: dict[str, Any]) -> Any:
    ctx = world.context(clock=lambda: NOW)
    try:
        return default_registry().invoke("generate_image", args, ctx)
    finally:
        ctx.close()


def refused(world: Env, args: dict[str, Any]) -> ToolError:
    with pytest.raises(ToolError) as e:
        generate(world, args)
    return e.value


def test_a_generate_request_carries_the_codex_headers_and_body(world: Env, backend: CodexBackend) -> None:
    backend.write_login(auth_path(world))
    out = generate(world, {"prompt": "a red square", "size": "1536x1024"})
    assert Path(out["path"]).read_bytes() == OUT and out["revised_prompt"] == "a blue square"
    [hit] = backend.web.hits
    assert hit.path == RESPONSES
    assert hit.headers["authorization"] == f"Bearer {backend.access}"
    assert hit.headers["chatgpt-account-id"] == "acct-1"
    assert hit.headers["originator"] == "fermix" and hit.headers["session_id"]
    body = hit.json()
    assert body["tools"] == [
        {"type": "image_generation", "model": "gpt-image-2", "output_format": "png", "size": "1536x1024"}
    ]
    assert body["tool_choice"] == {"type": "image_generation"}
    assert (body["store"], body["stream"], body["parallel_tool_calls"]) == (False, True, False)
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a red square"}]}
    ]


def test_an_edit_sends_the_source_as_an_input_image(world: Env, backend: CodexBackend) -> None:
    backend.write_login(auth_path(world))
    (world.project / "src.png").write_bytes(png(2, 2))
    generate(world, {"prompt": "add a hat", "operation": "edit", "input_image": "src.png"})
    content = backend.web.hits[0].json()["input"][0]["content"]
    assert content[1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64," + base64.b64encode(png(2, 2)).decode(),
    }


def test_the_account_id_can_come_from_the_id_token(world: Env, backend: CodexBackend) -> None:
    backend.write_login(auth_path(world), account_in_tokens=False)
    generate(world, {"prompt": "p"})
    assert backend.web.hits[0].headers["chatgpt-account-id"] == "acct-1"


def test_codex_home_names_the_login_file(
    world: Env, backend: CodexBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = world.root / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    backend.write_login(elsewhere / "auth.json")
    assert generate(world, {"prompt": "p"})["backend"] == "openai_codex"


def test_an_expired_login_is_renewed_and_written_back(world: Env, backend: CodexBackend) -> None:
    backend.expire_access()
    path = auth_path(world)
    backend.write_login(path)
    generate(world, {"prompt": "p"})
    token_hit, image_hit = backend.web.hits
    assert token_hit.path == TOKEN and image_hit.path == RESPONSES
    assert token_hit.json() == {
        "client_id": "app_EMoamEEZ73f0CkXaXp7hrann",
        "grant_type": "refresh_token",
        "refresh_token": "rt-0",
    }
    saved = json.loads(path.read_text())
    assert saved["tokens"]["access_token"] == backend.access and saved["tokens"]["refresh_token"] == "rt-1"
    assert saved["tokens"]["account_id"] == "acct-1" and saved["last_refresh"] == "2026-03-01T12:00:00Z"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    generate(world, {"prompt": "again"})  # the renewed token is used as it is: no second renewal
    assert [h.path for h in backend.web.hits] == [TOKEN, RESPONSES, RESPONSES]


def test_a_401_renews_once_and_retries(world: Env, backend: CodexBackend) -> None:
    backend.write_login(auth_path(world))
    backend.access = backend._access(3600)  # the server no longer takes the token in the file
    generate(world, {"prompt": "p"})
    assert [h.path for h in backend.web.hits] == [RESPONSES, TOKEN, RESPONSES]


def test_a_login_renewed_meanwhile_by_the_codex_cli_is_reused(world: Env, backend: CodexBackend) -> None:
    path = auth_path(world)
    backend.write_login(path)
    backend.access = backend._access(3600)
    serve = backend.responses

    def codex_cli_renews_during_the_first_call(hit: Hit) -> Reply:
        reply = serve(hit)
        if reply.status == 401:
            backend.write_login(path)  # the Codex CLI wrote a fresh token meanwhile
        return reply

    backend.web.routes[RESPONSES] = codex_cli_renews_during_the_first_call
    generate(world, {"prompt": "p"})
    assert [h.path for h in backend.web.hits] == [RESPONSES, RESPONSES]


def test_a_revoked_login_asks_for_codex_login_and_changes_nothing(world: Env, backend: CodexBackend) -> None:
    backend.expire_access()
    path = auth_path(world)
    backend.write_login(path)
    before = path.read_bytes()
    backend.revoked = True
    e = refused(world, {"prompt": "p"})
    assert e.code == "codex_login_expired" and "codex login" in e.message
    assert path.read_bytes() == before and [h.path for h in backend.web.hits] == [TOKEN]
    assert not (world.fermix_home / "media").exists()


def test_a_used_refresh_token_is_a_permanent_failure(world: Env, backend: CodexBackend) -> None:
    backend.expire_access()
    backend.write_login(auth_path(world))
    backend.used.add("rt-0")
    e = refused(world, {"prompt": "p"})
    assert e.code == "codex_login_expired" and "refresh_token_reused" in e.message


def test_an_api_key_login_points_to_the_openai_backend(world: Env, backend: CodexBackend) -> None:
    path = auth_path(world)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"auth_mode": "apikey", "OPENAI_API_KEY": "sk-test"}))
    e = refused(world, {"prompt": "p"})
    assert e.code == "codex_login_missing" and 'backend = "openai"' in e.message
    assert backend.web.hits == []


def test_the_plan_usage_limit_is_a_rate_limit_with_its_reset(world: Env, backend: CodexBackend) -> None:
    backend.write_login(auth_path(world))
    resets = int(NOW.timestamp()) + 120
    backend.answer = json_reply(
        {"error": {"type": "usage_limit_reached", "plan_type": "plus", "resets_at": resets}}, 429
    )
    e = refused(world, {"prompt": "p"})
    assert (e.code, e.details["retry_after"], e.details["resets_at"]) == ("rate_limited", 120, resets)
    backend.answer = json_reply({"error": {"type": "usage_not_included"}}, 429)
    assert refused(world, {"prompt": "p"}).code == "codex_not_entitled"
    backend.answer = json_reply({"detail": "Forbidden"}, 403)
    assert refused(world, {"prompt": "p"}).code == "codex_not_entitled"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (
            {"code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 12.5s."},
            "rate_limited",
        ),
        ({"code": "usage_not_included", "message": "not in your plan"}, "codex_not_entitled"),
        ({"code": "insufficient_quota", "message": "quota"}, "codex_not_entitled"),
        (
            {"code": "moderation_blocked", "message": "Your request was rejected by the safety system."},
            "prompt_refused",
        ),
        ({"code": "server_error", "message": "boom"}, "provider_error"),
    ],
)
def test_a_failed_response_in_the_stream_is_typed(
    world: Env, backend: CodexBackend, error: dict[str, str], code: str
) -> None:
    backend.write_login(auth_path(world))
    backend.answer = sse(
        [
            {"type": "response.created", "response": {"id": "resp_1"}},
            {"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "error": error}},
        ]
    )
    e = refused(world, {"prompt": "p"})
    assert e.code == code
    if code == "rate_limited":
        assert e.details["retry_after"] == 12.5


def test_the_image_may_come_only_in_the_completed_response(world: Env, backend: CodexBackend) -> None:
    backend.write_login(auth_path(world))
    done = next(e for e in image_events(B64) if e["type"] == "response.output_item.done")["item"]
    backend.answer = sse(
        [
            {"type": "response.created", "response": {"id": "resp_1"}},
            {"type": "response.completed", "response": {"id": "resp_1", "output": [done]}},
        ]
    )
    assert Path(generate(world, {"prompt": "p"})["path"]).read_bytes() == OUT


def test_a_refused_forced_tool_choice_is_retried_with_auto(world: Env, backend: CodexBackend) -> None:
    backend.write_login(auth_path(world))
    backend.forced_tool_choice_ok = False
    assert Path(generate(world, {"prompt": "p"})["path"]).read_bytes() == OUT
    forced, auto = (h.json()["tool_choice"] for h in backend.web.hits)
    assert (forced, auto) == ({"type": "image_generation"}, "auto")
    backend.events = [e for e in backend.events if e["type"] != "response.output_item.done"]
    backend.events[-1] = {"type": "response.completed", "response": {"id": "resp_1", "output": []}}
    assert refused(world, {"prompt": "p"}).code == "provider_error"  # no image: never a silent success
