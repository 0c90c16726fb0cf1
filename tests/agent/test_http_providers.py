"""The openai and anthropic providers against a real 127.0.0.1 server speaking their wire formats (SSE)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from fermix_cli.agent.messages import Message, ModelRequest, TextDelta, ToolCallEvent, ToolSchema, UsageEvent
from fermix_cli.agent.providers import build_provider, choose_provider
from fermix_cli.agent.providers.http import retry_after
from tests.agent.model_server import ModelServer, json_text, status, stream_error, text, tools
from tests.conftest import Env

KINDS = ["openai", "anthropic"]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    s = ModelServer()
    try:
        yield s
    finally:
        s.close()


def configure(world: Env, server: ModelServer, kind: str, *, allow: bool = True, **extra: Any) -> None:
    base = f"{server.base}/v1" if kind == "openai" else server.base
    lines = [
        f'[fermix_core.providers.local]\ntype = "{kind}"\nbase_url = "{base}"\ndefault_model = "test-model"',
        'api_key_env = "LOCAL_MODEL_KEY"',
        *(f"{k} = {json.dumps(v)}" for k, v in extra.items()),
    ]
    if allow:
        lines.append('\n[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]')
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text("\n".join(lines) + "\n")


def ask(world: Env, *args: str) -> Any:
    env_key = {"LOCAL_MODEL_KEY": "sk-test-123"}
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "ask", "--provider", "local", *args],
        capture_output=True,
        text=True,
        cwd=world.project,
        env={**world.env, **env_key},
        timeout=60,
    )
    return proc


# ----- full loops through `fermix ask` --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_full_loop_with_tool_calls_over_sse(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    (world.project / "notes.txt").write_text("the answer is 42\n")
    server.queue(
        tools(("file_read", {"path": "notes.txt"}), ("glob_search", {"pattern": "*.txt"}), text="Reading."),
        text("The file says the answer is 42."),
    )
    proc = ask(world, "--json", "what does notes.txt say?")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "ok"
    assert out["response"] == "The file says the answer is 42."
    assert [c["name"] for c in out["tool_calls"]] == ["file_read", "glob_search"]
    assert out["usage"]["input_tokens"] == 34 and out["usage"]["output_tokens"] == 10
    assert server.violations == []
    second = server.seen[1].body
    if kind == "openai":
        results = [m for m in second["messages"] if m["role"] == "tool"]
        assert [r["tool_call_id"] for r in results] == ["srv_1", "srv_2"]
        assert results[0]["content"] == "the answer is 42"
        assert second["messages"][0]["role"] == "system"
        assert {t["function"]["name"] for t in second["tools"]} >= {"file_read", "glob_search"}
        assert server.seen[0].headers["authorization"] == "Bearer sk-test-123"
        assert second["stream"] is True and second["stream_options"] == {"include_usage": True}
    else:
        blocks = [b for m in second["messages"] for b in m["content"] if b["type"] == "tool_result"]
        assert [b["tool_use_id"] for b in blocks] == ["srv_1", "srv_2"]
        assert blocks[0]["content"] == "the answer is 42" and blocks[0]["is_error"] is False
        assert "You are fermix" in second["system"]
        assert {t["name"] for t in second["tools"]} >= {"file_read", "glob_search"}
        assert "input_schema" in second["tools"][0] and second["max_tokens"] == 4096
        headers = server.seen[0].headers
        assert headers["x-api-key"] == "sk-test-123" and headers["anthropic-version"] == "2023-06-01"


@pytest.mark.parametrize("kind", KINDS)
def test_streamed_text_reaches_the_terminal(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(text("Hello from the local server."))
    proc = ask(world, "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello from the local server.\n"


@pytest.mark.parametrize("kind", KINDS)
def test_tool_errors_and_session_history_round_trip(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(tools(("file_read", {"path": "missing.txt"})), text("No such file."), text("Still here."))
    first = json.loads(ask(world, "--json", "read missing.txt").stdout)
    assert first["tool_calls"][0]["error_code"] == "not_found"
    second = ask(world, "--json", "--session", first["session_id"], "and now?")
    assert second.returncode == 0, second.stderr
    assert server.violations == []
    history = server.seen[2].body["messages"]
    flat = json.dumps(history)
    assert "read missing.txt" in flat and "not_found: " in flat and "No such file." in flat
    if kind == "anthropic":
        tool_result = next(b for m in history for b in m["content"] if b["type"] == "tool_result")
        assert tool_result["is_error"] is True


# ----- retries --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_429_is_retried_after_the_servers_retry_after(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(status(429, '{"error":{"message":"slow down"}}', retry_after="1"), text("ok now"))
    proc = ask(world, "--json", "hi")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["response"] == "ok now"
    assert len(server.seen) == 2
    assert server.seen[1].at - server.seen[0].at >= 0.95


@pytest.mark.parametrize("code", [500, 502, 503, 529])
def test_5xx_is_retried_with_backoff(world: Env, server: ModelServer, code: int) -> None:
    configure(world, server, "openai")
    server.queue(status(code, "upstream trouble"), status(code, "", retry_after="0"), text("recovered"))
    proc = ask(world, "--json", "hi")
    assert proc.returncode == 0, proc.stderr
    assert len(server.seen) == 3
    assert server.seen[1].at - server.seen[0].at >= 0.45  # the first backoff step is 0.5 s


def test_retries_give_up_with_rate_limited(world: Env, server: ModelServer) -> None:
    configure(world, server, "anthropic", max_retries=1)
    server.queue(status(429, '{"error":{"type":"rate_limit_error","message":"quota"}}', retry_after="0"))
    server.queue(status(429, '{"error":{"type":"rate_limit_error","message":"quota"}}', retry_after="0"))
    proc = ask(world, "hi")
    assert proc.returncode == 1
    err = json.loads(proc.stderr)["error"]
    assert err["code"] == "rate_limited" and "quota" in err["message"]
    assert len(server.seen) == 2


def test_a_retry_after_beyond_a_minute_is_not_waited_for(world: Env, server: ModelServer) -> None:
    configure(world, server, "openai")
    server.queue(status(429, "", retry_after="3600"))
    started = time.monotonic()
    proc = ask(world, "--json", "hi")
    assert time.monotonic() - started < 20
    out = json.loads(proc.stdout)
    assert out["error"]["code"] == "rate_limited" and out["error"]["details"]["retry_after"] == 3600
    assert len(server.seen) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_auth_failures_are_not_retried(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(status(401, '{"error":{"message":"invalid x-api-key"}}'))
    proc = ask(world, "hi")
    assert proc.returncode == 1
    err = json.loads(proc.stderr)["error"]
    assert err["code"] == "auth_failed" and "invalid x-api-key" in err["message"]
    assert "sk-test-123" not in proc.stderr
    assert len(server.seen) == 1


def test_client_errors_carry_the_servers_message(world: Env, server: ModelServer) -> None:
    configure(world, server, "openai")
    server.queue(status(404, '{"error":{"message":"model test-model does not exist"}}'))
    proc = ask(world, "hi")
    err = json.loads(proc.stderr)["error"]
    assert (proc.returncode, err["code"]) == (1, "provider_error")
    assert "HTTP 404" in err["message"] and "does not exist" in err["message"]
    # What to check: the URL fermix posted to, the key that sets it, and the model name.
    assert f"POST {server.base}/v1/chat/completions" in err["message"]
    assert "fermix_core.providers.local.base_url" in err["message"] and "/v1" in err["message"]
    assert "default_model" in err["message"]


BAD_GATEWAY = (
    "<!DOCTYPE html>\n<html><head><style>body { font: 12px sans-serif }</style>"
    "<title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center>"
    + "<hr><center>nginx/1.25.3</center>" * 60
    + "</body></html>"
)


@pytest.mark.parametrize("kind", KINDS)
def test_an_html_error_page_is_summed_up_by_its_title(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind, max_retries=0)
    server.queue(status(502, BAD_GATEWAY, content_type="text/html"))
    err = json.loads(ask(world, "hi").stderr)["error"]
    assert err["code"] == "provider_error" and "502 Bad Gateway" in err["message"]
    assert "<" not in err["message"] and len(err["message"]) < 300


WEB_UI = "<!doctype html><html><head><title>Open WebUI</title></head><body><div id=app></div></body></html>"


@pytest.mark.parametrize("kind", KINDS)
def test_a_web_page_instead_of_the_api_names_base_url(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(status(200, WEB_UI, content_type="text/html; charset=utf-8"))
    proc = ask(world, "--json", "hi")
    err = json.loads(proc.stdout)["error"]
    assert (proc.returncode, err["code"]) == (1, "provider_error")
    assert "Open WebUI" in err["message"] and "instead of an event stream" in err["message"]
    assert "fermix_core.providers.local.base_url" in err["message"] and server.base in err["message"]
    assert "empty reply" not in err["message"]


def test_an_error_document_with_http_200_carries_its_message(world: Env, server: ModelServer) -> None:
    # OpenRouter answers some failures (no credits, an upstream refusal) with HTTP 200 and an error body.
    configure(world, server, "openai")
    body = json.dumps({"error": {"code": 402, "message": "Insufficient credits. Add more using the site"}})
    server.queue(status(200, body))
    err = json.loads(ask(world, "--json", "hi").stdout)["error"]
    assert err["code"] == "provider_error" and "Insufficient credits" in err["message"]


def test_broken_call_arguments_do_not_break_the_session(world: Env) -> None:
    # Ollama's /v1 (the server's check) refuses a history whose call arguments are not a JSON object.
    from tests.agent.replay_server import ReplayServer
    from tests.agent.wire_dialects import openai_call_reply, text_reply

    replay = ReplayServer()
    try:
        configure(world, replay, "openai")  # type: ignore[arg-type]
        replay.queue(
            openai_call_reply("", "file_read", '{"path": "a.txt"'),
            openai_call_reply("", "file_read", "[1, 2]"),
            text_reply("openai", "Sorry."),
        )
        out = json.loads(ask(world, "--json", "read a.txt").stdout)
    finally:
        replay.close()
    assert out["status"] == "ok" and out["response"] == "Sorry."
    assert [c["ok"] for c in out["tool_calls"]] == [False, False]
    assert out["tool_calls"][0]["arguments"] == '{"path": "a.txt"'  # the transcript keeps what was sent
    sent = [c for m in replay.seen[2]["messages"] for c in m.get("tool_calls") or []]
    assert [c["function"]["arguments"] for c in sent] == ["{}", "{}"]


def test_whitespace_text_beside_a_call_does_not_break_the_session(world: Env, server: ModelServer) -> None:
    # The Messages API refuses a text block of whitespace only (the server's check), for good: the
    # block would be in every later request of the session.
    configure(world, server, "anthropic")
    (world.project / "a.txt").write_text("A\n")
    server.queue(tools(("file_read", {"path": "a.txt"}), text="\n\n"), text("It says A."))
    proc = ask(world, "--json", "read a.txt")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["response"] == "It says A."
    assert server.violations == []


@pytest.mark.parametrize("kind", KINDS)
def test_errors_inside_the_stream(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(stream_error("overloaded right now"))
    proc = ask(world, "--json", "hi")
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["error"]["code"] == "provider_error"
    assert "overloaded right now" in out["error"]["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_non_streamed_reply_is_understood(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(json_text("plain JSON answer"))
    out = json.loads(ask(world, "--json", "hi").stdout)
    assert out["response"] == "plain JSON answer"
    assert out["usage"] == {"input_tokens": 3, "output_tokens": 2}


# ----- the network guard ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_local_servers_need_an_explicit_allowance(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind, allow=False)
    server.queue(text("should never be sent"))
    proc = ask(world, "hi")
    assert proc.returncode == 3
    err = json.loads(proc.stderr)["error"]
    assert err["code"] == "blocked_url" and "allowed_private_hosts" in err["message"]
    assert server.seen == []


@pytest.mark.parametrize(("kind", "var"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_official_endpoints_need_a_key(world: Env, kind: str, var: str) -> None:
    r = world.run("ask", "--provider", kind, "hi")
    assert r.code == 1
    err = r.error()
    assert err["code"] == "auth_failed" and var in err["message"]


# ----- the provider interface directly ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_provider_stream_events(world: Env, server: ModelServer, kind: str) -> None:
    configure(world, server, kind)
    server.queue(tools(("file_read", {"path": "a.txt", "limit": 2}), text="Let me check."))
    ctx = world.context()
    try:
        choice = choose_provider(ctx.config, provider="local", env={"LOCAL_MODEL_KEY": "k"})
        provider = build_provider(choice, ctx)
        request = ModelRequest(
            "test-model",
            "sys",
            [Message("user", "hi")],
            [ToolSchema("file_read", "Read a file", {"type": "object", "properties": {}})],
        )
        events = list(provider.stream(request))
        provider.close()
    finally:
        ctx.close()
    text_out = "".join(e.text for e in events if isinstance(e, TextDelta))
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    usage = [e for e in events if isinstance(e, UsageEvent)]
    assert text_out == "Let me check."
    assert [(c.wire_id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("srv_1", "file_read", {"path": "a.txt", "limit": 2})
    ]
    assert usage[-1].usage.input_tokens == 17 and usage[-1].usage.output_tokens == 5


def test_the_server_refuses_results_for_calls_it_never_made(server: ModelServer) -> None:
    # The check that makes the tests above meaningful: a wrong id is a 400, as from a real API.
    server.queue(text("unused"))
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "made_up", "type": "function", "function": {"name": "x", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "made_up", "content": "r"},
        ],
    }
    r = httpx.post(f"{server.base}/v1/chat/completions", json=body)
    assert r.status_code == 400 and "never issued" in r.text
    assert server.violations


@pytest.mark.parametrize(
    ("value", "expected"),
    [("3", 3.0), ("0", 0.0), ("-5", 0.0), ("soon", None), ("", None), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)
def test_retry_after_parsing(value: str, expected: float | None) -> None:
    assert retry_after({"retry-after": value} if value else {}) == expected


def test_retry_after_http_date_in_the_future() -> None:
    import email.utils

    now = time.time()
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after({"retry-after": header}, now=now) == pytest.approx(30, abs=1.5)


# ----- an unreachable provider is a failure, not a refusal ------------------------------------------


class _Nowhere:
    def __init__(self, base: str) -> None:
        self.base = base


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("where", ["dns", "port"])
def test_ask_against_an_unreachable_provider_exits_1(world: Env, kind: str, where: str) -> None:
    import socket

    if where == "dns":
        base = "http://model-host.invalid"
    else:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = f"http://127.0.0.1:{probe.getsockname()[1]}"
    configure(world, _Nowhere(base), kind, max_retries=0)  # type: ignore[arg-type]
    proc = ask(world, "hi")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert ("dns_failure" if where == "dns" else "connect_failed") in proc.stderr
    err = json.loads(proc.stderr)["error"]
    assert "Is the server running?" in err["message"] and base in err["message"]
    assert "fermix_core.providers.local.base_url" in err["message"]
