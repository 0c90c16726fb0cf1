"""web_fetch against a local server: HTML as text, JSON verbatim, charsets, redirects, caps, time, the guard."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.guarded import guarded_client
from tests.conftest import Env
from tests.tools.webfakes import FakeWeb, Reply, configure, html_reply, json_reply, running


@pytest.fixture
def fake_web(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    with running(monkeypatch) as server:
        yield server


MiB = 1_048_576

ARTICLE = "".join(
    f"<p>Paragraph {i} of the article explains how the guarded client pins every connection to the "
    f"address it checked, so a second DNS answer cannot redirect it.</p>"
    for i in range(80)
)
BIG_PAGE = (
    "<!DOCTYPE html><html><head><title>Pinning</title></head><body>"
    '<nav><a href="/">Home</a> | <a href="/shop">Shop</a> | <a href="/login">Log in</a></nav>'
    f"<main><article><h1>Connection pinning</h1>{ARTICLE}</article></main>"
    "<footer>Copyright 2026 Example Corp. All rights reserved. Cookie settings.</footer></body></html>"
)


@pytest.fixture
def web(world: Env, fake_web: FakeWeb) -> FakeWeb:
    configure(world, fake_web)
    return fake_web


def test_substantial_html_becomes_readable_text_without_boilerplate(invoke: Any, web: FakeWeb) -> None:
    assert len(BIG_PAGE) > 10_000
    web.routes["/article"] = html_reply(BIG_PAGE)
    result = invoke("web_fetch", {"url": web.url("/article")})
    assert result["status"] == 200 and result["format"] == "markdown"
    assert result["content_type"] == "text/html; charset=utf-8"
    text = result["text"]
    assert "Paragraph 0 of the article" in text and "Paragraph 79 of the article" in text
    assert "Cookie settings" not in text and "Log in" not in text
    assert "<p>" not in text
    assert result["url"] == result["final_url"] == web.url("/article")
    assert result["truncated"] is False


def test_short_html_keeps_headings_links_and_lists(invoke: Any, web: FakeWeb) -> None:
    web.routes["/short"] = html_reply(
        "<html><head><title>T</title><script>alert(1)</script></head><body><h2>Install</h2>"
        '<p>Run <code>pip install x</code>, see <a href="https://docs.example.org/x">the docs</a>.</p>'
        "<ul><li>one</li><li>two</li></ul></body></html>"
    )
    text = invoke("web_fetch", {"url": web.url("/short")})["text"]
    assert (
        text
        == "## Install\n\nRun `pip install x`, see [the docs](https://docs.example.org/x).\n\n- one\n- two"
    )


def test_a_short_page_with_an_unclosed_head_keeps_its_text(invoke: Any, web: FakeWeb) -> None:
    web.routes["/nohead"] = html_reply("<html><head><title>T</title><p>Opening hours: 9 to 5</p>")
    result = invoke("web_fetch", {"url": web.url("/nohead")})
    assert result["text"] == "Opening hours: 9 to 5"
    assert "empty" not in result and "note" not in result


def test_a_page_without_readable_text_says_so(world: Env, invoke: Any, web: FakeWeb) -> None:
    web.routes["/app"] = html_reply(
        '<html><head><title>App</title></head><body><div id="root"></div><script src="/app.js"></script>'
    )
    result = invoke("web_fetch", {"url": web.url("/app")})
    assert result["text"] == "" and result["empty"] is True and result["truncated"] is False
    assert "JavaScript" in result["note"] and "browser tool" in result["note"]
    r = world.tool("web_fetch", {"url": web.url("/app")}, "--text")
    assert r.code == 0 and "no readable text" in r.stdout and "browser tool" in r.stdout


@pytest.mark.parametrize("content_type", ["application/json", "application/problem+json; charset=utf-8"])
def test_json_comes_back_verbatim(invoke: Any, web: FakeWeb, content_type: str) -> None:
    body = b'{"b": 1,\n  "a": [1, 2.50, "\\u00e9"],   "html": "<p>x</p>"}'
    web.routes["/api"] = Reply(200, body, {"Content-Type": content_type})
    result = invoke("web_fetch", {"url": web.url("/api")})
    assert result["format"] == "json"
    assert result["text"] == body.decode()


def test_invalid_utf8_is_replaced(invoke: Any, web: FakeWeb) -> None:
    web.routes["/bytes"] = Reply(200, b"caf\xe9 \xff\xfe ok", {"Content-Type": "text/plain; charset=utf-8"})
    result = invoke("web_fetch", {"url": web.url("/bytes")})
    assert result["text"] == "caf\ufffd \ufffd\ufffd ok"
    assert result["format"] == "text"


def test_declared_charsets_are_honoured(invoke: Any, web: FakeWeb) -> None:
    web.routes["/latin"] = Reply(
        200, "café".encode("latin-1"), {"Content-Type": "text/plain; charset=iso-8859-1"}
    )
    web.routes["/meta"] = Reply(
        200,
        '<html><head><meta charset="windows-1252"></head><body><p>naïve “quotes”</p></body></html>'.encode(
            "cp1252"
        ),
        {"Content-Type": "text/html"},
    )
    assert invoke("web_fetch", {"url": web.url("/latin")})["text"] == "café"
    assert invoke("web_fetch", {"url": web.url("/meta")})["text"] == "naïve “quotes”"


def test_a_byte_order_mark_overrides_the_declared_charset(invoke: Any, web: FakeWeb) -> None:
    web.routes["/bom"] = Reply(
        200, "\ufeff<p>naïve café</p>".encode(), {"Content-Type": "text/html; charset=iso-8859-1"}
    )
    web.routes["/meta16"] = Reply(
        200, '<meta charset="utf-16"><p>naïve café</p>'.encode(), {"Content-Type": "text/html"}
    )
    assert invoke("web_fetch", {"url": web.url("/bom")})["text"] == "naïve café"
    assert invoke("web_fetch", {"url": web.url("/meta16")})["text"] == "naïve café"


@pytest.mark.parametrize("charset", ["idna", "punycode", "undefined"])
def test_a_charset_whose_codec_refuses_to_replace_falls_back_to_utf8(
    invoke: Any, web: FakeWeb, charset: str
) -> None:
    """A server may name any codec: one that exists but cannot replace what it cannot decode (idna,
    punycode, undefined) falls back as an unknown name does, never an internal error; declared in the
    header (UTF-8 with U+FFFD) or in a <meta> tag."""
    body = b"<html><body><p>hi \xff</p></body></html>"
    web.routes["/header"] = Reply(200, body, {"Content-Type": f"text/html; charset={charset}"})
    web.routes["/meta"] = Reply(
        200, f'<html><head><meta charset="{charset}"></head><body><p>hi \xff</p></body></html>'.encode(),
        {"Content-Type": "text/html"},
    )  # fmt: skip
    assert invoke("web_fetch", {"url": web.url("/header")})["text"] == "hi \ufffd"
    assert invoke("web_fetch", {"url": web.url("/meta")})["text"].startswith("hi ")  # no internal error


def test_decoding_a_guarded_response_s_text_never_raises() -> None:
    import httpx

    from fermix_cli.core.net.response import decode_text

    for charset in ("idna", "punycode", "undefined", "nonsense"):
        headers = httpx.Headers({"content-type": f"text/html; charset={charset}"})
        assert decode_text(b"ok \xff", headers) == "ok \ufffd"


def test_redirect_chain_is_followed_and_reported(invoke: Any, web: FakeWeb) -> None:
    web.routes["/a"] = Reply(301, b"", {"Location": "/b"})
    web.routes["/b"] = Reply(302, b"", {"Location": web.url("/c")})
    web.routes["/c"] = Reply(307, b"", {"Location": "d"})
    web.routes["/d"] = html_reply("<p>landed</p>")
    result = invoke("web_fetch", {"url": web.url("/a")})
    assert result["text"] == "landed"
    assert result["url"] == web.url("/a") and result["final_url"] == web.url("/d")
    assert result["redirects"] == [web.url("/a"), web.url("/b"), web.url("/c")]


def test_five_redirects_pass_and_a_sixth_is_refused(invoke: Any, web: FakeWeb) -> None:
    for i in range(6):
        web.routes[f"/r{i}"] = Reply(302, b"", {"Location": f"/r{i + 1}"})
    web.routes["/r6"] = html_reply("<p>end</p>")
    assert invoke("web_fetch", {"url": web.url("/r1")})["text"] == "end"  # r1..r5 redirect: five hops
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": web.url("/r0")})
    assert (e.value.code, e.value.message) == ("redirect_limit", "exceeded 5 redirects")
    assert not web.hits_on("/r6")[1:]  # the sixth target was never requested by the refused call


def test_redirect_to_a_private_address_is_refused(world: Env, invoke: Any, fake_web: FakeWeb) -> None:
    configure(world, fake_web)
    fake_web.routes["/hop"] = Reply(302, b"", {"Location": "http://10.0.0.5/admin"})
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": fake_web.url("/hop")})
    assert e.value.code == "blocked_url"
    assert "10.0.0.5" in e.value.message


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_oversized_body_is_too_large(invoke: Any, web: FakeWeb, chunked: bool) -> None:
    big = b"x" * (MiB + 1)
    reply = Reply(200, big, {"Content-Type": "text/plain"})
    if chunked:
        reply = Reply(
            200,
            b"",
            {"Content-Type": "text/plain"},
            chunks=[big[i : i + 65536] for i in range(0, len(big), 65536)],
        )
    web.routes["/big"] = reply
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": web.url("/big")})
    assert (e.value.code, e.value.message) == ("too_large", "response body exceeded 1048576 bytes")


def test_a_body_of_exactly_one_mib_is_read_and_its_text_capped(invoke: Any, web: FakeWeb) -> None:
    web.routes["/mib"] = Reply(200, b"y" * MiB, {"Content-Type": "text/plain"})
    result = invoke("web_fetch", {"url": web.url("/mib")})
    assert result["truncated"] is True
    assert result["text_bytes"] == MiB and len(result["text"]) == 100_000


def test_json_is_never_cut(invoke: Any, web: FakeWeb) -> None:
    body = json.dumps({"items": ["z" * 1000] * 500}).encode()
    assert 100_000 < len(body) < MiB
    web.routes["/json"] = Reply(200, body, {"Content-Type": "application/json"})
    result = invoke("web_fetch", {"url": web.url("/json")})
    assert result["text"] == body.decode() and result["truncated"] is False


def test_web_fetch_asks_the_guard_for_the_specs_limits(world: Env, web: FakeWeb) -> None:
    web.routes["/ok"] = html_reply("<p>ok</p>")
    seen: dict[str, Any] = {}

    def spy(**options: Any) -> Any:
        seen.update(options)
        return guarded_client(**options)

    from fermix_cli.core.registry import default_registry

    ctx = world.context(http_factory=spy)
    try:
        default_registry().invoke("web_fetch", {"url": web.url("/ok")}, ctx)
    finally:
        ctx.close()
    assert seen["max_body"] == MiB and seen["max_redirects"] == 5
    assert seen["connect_timeout"] == 3.0 and seen["read_timeout"] == 15.0
    assert tuple(seen["allowed_private_hosts"]) == ("127.0.0.1",)


def test_a_server_slower_than_the_receive_timeout_fails_with_network(world: Env, web: FakeWeb) -> None:
    web.routes["/slow"] = Reply(200, b"late", {"Content-Type": "text/plain"}, delay=1.5)

    def short(**options: Any) -> Any:
        return guarded_client(**{**options, "read_timeout": 0.5})

    from fermix_cli.core.registry import default_registry

    ctx = world.context(http_factory=short)
    try:
        with pytest.raises(ToolError) as e:
            default_registry().invoke("web_fetch", {"url": web.url("/slow")}, ctx)
    finally:
        ctx.close()
    assert e.value.code == "timeout"
    assert e.value.message.startswith("read timeout")


def test_a_slow_but_timely_server_is_read(invoke: Any, web: FakeWeb) -> None:
    web.routes["/drip"] = Reply(
        200, b"", {"Content-Type": "text/plain"}, delay=0.3, chunks=[b"a", b"b", b"c"], chunk_delay=0.2
    )
    assert invoke("web_fetch", {"url": web.url("/drip")})["text"] == "abc"


def test_private_address_is_refused_without_an_allowance(world: Env, invoke: Any, fake_web: FakeWeb) -> None:
    configure(world, fake_web, allow_local=False)
    fake_web.routes["/x"] = html_reply("<p>secret</p>")
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": fake_web.url("/x")})
    assert e.value.code == "blocked_url"
    assert "127.0.0.1" in e.value.message and "allowed_private_hosts" in e.value.message
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": f"http://localhost:{fake_web.port}/x"})
    assert e.value.code == "blocked_url"
    assert fake_web.hits == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("", "empty_url"),
        ("http://exa mple.com/", "url_has_whitespace"),
        ("ftp://example.com/", "unsupported_scheme"),
    ],
)
def test_url_syntax_is_checked_first(invoke: Any, web: FakeWeb, url: str, reason: str) -> None:
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": url})
    assert e.value.code == "blocked_url" and e.value.details["reason"] == reason
    assert web.hits == []


def test_final_status_outside_2xx_is_a_network_error(invoke: Any, web: FakeWeb) -> None:
    web.routes["/gone"] = html_reply("<p>not here</p>", status=404)
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": web.url("/gone")})
    assert (e.value.code, e.value.message) == ("network", "HTTP 404")


def test_binary_bodies_are_refused(invoke: Any, web: FakeWeb) -> None:
    web.routes["/img"] = Reply(200, b"\x89PNG\r\n\x1a\n\x00\x00", {"Content-Type": "image/png"})
    web.routes["/blob"] = Reply(200, b"\x00\x01\x02", {"Content-Type": "application/octet-stream"})
    web.routes["/raw"] = Reply(200, b"plain words", {"Content-Type": "application/octet-stream"})
    for path in ("/img", "/blob"):
        with pytest.raises(ToolError) as e:
            invoke("web_fetch", {"url": web.url(path)})
        assert e.value.code == "unsupported_content"
    assert invoke("web_fetch", {"url": web.url("/raw")})["text"] == "plain words"


def test_a_body_nested_too_deep_to_parse_is_text_not_an_internal_error(invoke: Any, web: FakeWeb) -> None:
    """An undeclared body that opens like JSON but nests past what the parser follows is shown as text."""
    web.routes["/deep"] = Reply(200, b"[" * 200_000, {"Content-Type": "application/octet-stream"})
    result = invoke("web_fetch", {"url": web.url("/deep")})
    assert result["format"] == "text" and result["text"].startswith("[[[[")


def test_a_binary_body_declared_as_html_is_refused(invoke: Any, web: FakeWeb) -> None:
    web.routes["/fake"] = Reply(
        200, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50, {"Content-Type": "text/html"}
    )
    with pytest.raises(ToolError) as e:
        invoke("web_fetch", {"url": web.url("/fake")})
    assert e.value.code == "unsupported_content"


# ----- the real CLI ------------------------------------------------------------------------------


def test_cli_fetch_json_out_and_text_for_models(world: Env, web: FakeWeb) -> None:
    web.routes["/page"] = html_reply("<h1>Title</h1><p>Body text.</p>")
    r = world.tool("web_fetch", {"url": web.url("/page")})
    assert r.code == 0, r.stderr
    assert r.json()["text"] == "# Title\n\nBody text."
    r = world.tool("web_fetch", {"url": web.url("/page")}, "--text")
    assert r.code == 0 and r.stdout == "# Title\n\nBody text.\n"


def test_cli_refusals_exit_3_and_failures_exit_1(world: Env, fake_web: FakeWeb) -> None:
    configure(world, fake_web, allow_local=False)
    r = world.run("tool", "web_fetch", "--url", fake_web.url("/x"))
    assert r.code == 3 and r.stdout == ""
    assert r.error()["code"] == "blocked_url"
    configure(world, fake_web)
    fake_web.routes["/big"] = Reply(200, b"x" * (MiB + 10), {"Content-Type": "text/plain"})
    r = world.run("tool", "web_fetch", "--url", fake_web.url("/big"))
    assert r.code == 1
    assert r.error() == {
        "code": "too_large",
        "message": "response body exceeded 1048576 bytes",
        "details": {"limit": MiB, "url": fake_web.url("/big")},
    }


def test_trafilatura_is_imported_only_for_html(world: Env, web: FakeWeb) -> None:
    web.routes["/json"] = json_reply({"a": 1})
    web.routes["/html"] = html_reply(BIG_PAGE)
    probe = (
        "import sys; sys.argv=['fermix','tool','web_fetch','--url',sys.argv[1]];"
        "from fermix_cli.__main__ import main; rc=main();"
        "print('LOADED', [m for m in ('trafilatura','typer','rich') if m in sys.modules]); sys.exit(rc)"
    )
    runs = {}
    for path in ("/json", "/html"):
        proc = subprocess.run(
            [os.sys.executable, "-c", probe, web.url(path)],
            capture_output=True, text=True, env=world.env, cwd=world.project,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        runs[path] = proc.stdout.strip().splitlines()[-1]
    assert runs == {"/json": "LOADED []", "/html": "LOADED ['trafilatura']"}


def test_listing_tools_imports_no_http_client(world: Env) -> None:
    probe = (
        "import sys; sys.argv=['fermix','tool','list','--json'];"
        "from fermix_cli.__main__ import main; rc=main();"
        "print('LOADED', [m for m in ('httpx','httpcore','trafilatura','typer','rich') if m in sys.modules]);"
        "sys.exit(rc)"
    )
    proc = subprocess.run(
        [os.sys.executable, "-c", probe], capture_output=True, text=True, env=world.env, cwd=world.project
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "LOADED []"
    assert {"web_fetch", "web_search"} <= {t["name"] for t in json.loads(proc.stdout.splitlines()[0])}
