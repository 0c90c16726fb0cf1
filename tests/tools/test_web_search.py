"""web_search: DuckDuckGo's outcomes, every keyed backend in its own wire format, and degrading once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.web.ddg import results_from_page, unwrap
from tests.conftest import Env
from tests.tools.webfakes import (
    DDG_CHALLENGE,
    DDG_CHANGED,
    DDG_NO_RESULTS,
    ENDPOINTS,
    FakeWeb,
    Reply,
    brave_error,
    brave_web,
    configure,
    ddg_page,
    exa_results,
    firecrawl_results,
    html_reply,
    json_reply,
    parallel_results,
    perplexity_results,
    running,
    tavily_results,
)


@pytest.fixture
def fake_web(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    with running(monkeypatch) as server:
        yield server


DDG = ENDPOINTS["duckduckgo_url"]
ROWS = [
    ("https://one.example.org/a", "One <b>result</b>", "First &amp; <b>best</b> snippet"),
    ("https://two.example.org/", "Two", "Second snippet"),
]
DDG_ROWS = [
    ("//duckduckgo.com/l/?uddg=https%3A%2F%2Fddg.example.org%2Fp%3Fx%3D1&rut=9f", "From DDG", "fallback row")
]
FALLBACK = [{"title": "From DDG", "url": "https://ddg.example.org/p?x=1", "snippet": "fallback row"}]
KEY = "test-key-0123456789"


@pytest.fixture
def web(world: Env, fake_web: FakeWeb) -> FakeWeb:
    configure(world, fake_web)
    fake_web.routes[DDG] = html_reply(ddg_page(DDG_ROWS))
    return fake_web


def use(world: Env, web: FakeWeb, backend: str, *, key: str | None = KEY) -> None:
    extra: dict[str, Any] = {"backend": backend}
    if key is not None:
        extra[f"{backend}_api_key"] = key
    configure(world, web, web_search=extra)


# ----- DuckDuckGo ---------------------------------------------------------------------------------


def test_duckduckgo_is_the_default_and_posts_the_form(invoke: Any, web: FakeWeb) -> None:
    rows = [
        (
            "//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fb%3D1%26c%3D2&rut=abc",
            "Ex <b>A</b>",
            "snip &amp; <b>x</b>",
        ),
        ("https://direct.example.net/", "Direct", "plain"),
        ("javascript:alert(1)", "Script", "dropped"),
        ("//duckduckgo.com/l/?uddg=ftp%3A%2F%2Ffiles.example.com%2F", "FTP", "dropped"),
    ]
    ads = (
        ("https://duckduckgo.com/y.js?ad_domain=shop.com&u3=x", "Buy"),
        ("https://shop.example.com/", "Direct ad"),
    )
    web.routes[DDG] = html_reply(ddg_page(rows, ads=ads))
    result = invoke("web_search", {"query": "what is pinning?"})
    assert result["results"] == [
        {"title": "Ex A", "url": "https://example.com/a?b=1&c=2", "snippet": "snip & x"},
        {"title": "Direct", "url": "https://direct.example.net/", "snippet": "plain"},
    ]
    assert result["metadata"] == {"backend": "duckduckgo", "result_count": 2}
    (hit,) = web.hits_on(DDG)
    assert hit.method == "POST" and hit.form() == {"q": ["what is pinning?"]}


def test_duckduckgo_returns_at_most_ten(invoke: Any, web: FakeWeb) -> None:
    web.routes[DDG] = html_reply(ddg_page([(f"https://e.org/{i}", f"T{i}", "s") for i in range(14)]))
    results = invoke("web_search", {"query": "many"})["results"]
    assert [r["url"] for r in results] == [f"https://e.org/{i}" for i in range(10)]


@pytest.mark.parametrize(
    ("reply", "code", "message"),
    [
        (html_reply(DDG_NO_RESULTS, status=202), "rate_limited", "HTTP 202"),
        (html_reply("slow down", status=429), "rate_limited", "HTTP 429"),
        (html_reply(DDG_CHALLENGE), "rate_limited", "bot challenge"),
        (
            html_reply("<html><body>Checking if the site connection is secure</body></html>"),
            "rate_limited",
            "bot challenge",
        ),
        (html_reply(DDG_CHANGED), "parser_changed", "DuckDuckGo result selectors changed"),
        (html_reply("oops", status=500), "network", "HTTP 500"),
        (html_reply("no", status=403), "network", "HTTP 403"),
    ],
)
def test_duckduckgo_failures_are_typed(
    invoke: Any, web: FakeWeb, reply: Reply, code: str, message: str
) -> None:
    web.routes[DDG] = reply
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "q"})
    assert e.value.code == code
    assert message in e.value.message


def test_duckduckgo_no_results_is_an_empty_success(invoke: Any, web: FakeWeb) -> None:
    web.routes[DDG] = html_reply(DDG_NO_RESULTS)
    result = invoke("web_search", {"query": "qqqzzzxxx"})
    assert result["results"] == [] and result["metadata"]["result_count"] == 0


def test_challenge_words_inside_results_are_still_results() -> None:
    page = ddg_page([("https://ml.example.org/", "Anomaly detection", "captcha solvers and anomaly scores")])
    assert results_from_page(page) == [
        {
            "title": "Anomaly detection",
            "url": "https://ml.example.org/",
            "snippet": "captcha solvers and anomaly scores",
        }
    ]


@pytest.mark.parametrize(
    ("href", "url"),
    [
        ("//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.org%2F%3Fq%3D%25C3%25A9&rut=1", "https://a.org/?q=%C3%A9"),
        ("https://duckduckgo.com/l/?uddg=http%3A%2F%2Fb.org%2Fx", "http://b.org/x"),
        ("https://plain.org/page", "https://plain.org/page"),
        ("https://duckduckgo.com/y.js?ad_domain=x.com&u3=https%3A%2F%2Fbing.com", None),
        ("//duckduckgo.com/l/?rut=no-target", None),
        ("https://duckduckgo.com/?q=more", None),
    ],
)
def test_result_links_are_unwrapped(href: str, url: str | None) -> None:
    assert unwrap(href) == url


def test_query_limits_are_checked_before_any_request(invoke: Any, web: FakeWeb) -> None:
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "x" * 1025})
    assert (e.value.code, e.value.message) == ("query_too_long", "max 1024 characters")
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "   "})
    assert e.value.code == "invalid_query"
    assert web.hits == []
    web.routes[DDG] = html_reply(DDG_NO_RESULTS)
    assert invoke("web_search", {"query": "x" * 1024})["results"] == []


def test_unknown_backend_runs_duckduckgo_with_a_warning(world: Env, invoke: Any, web: FakeWeb) -> None:
    configure(world, web, web_search={"backend": "bravee"})
    web.routes[DDG] = html_reply(ddg_page(DDG_ROWS))
    result = invoke("web_search", {"query": "q"})
    assert result["results"] == FALLBACK
    assert result["metadata"]["backend"] == "duckduckgo"
    assert "unknown web_search backend 'bravee'" in result["metadata"]["warning"]
    assert "degraded" not in result["metadata"]


# ----- keyed backends, each in its own format ---------------------------------------------------------


def _brave(rows: list[tuple[str, str, str]]) -> Reply:
    return json_reply(brave_web(rows))


BACKENDS: dict[str, tuple[Callable[[list[tuple[str, str, str]]], Reply], str]] = {
    "brave": (_brave, "GET"),
    "exa": (lambda rows: json_reply(exa_results(rows)), "POST"),
    "firecrawl": (lambda rows: json_reply(firecrawl_results(rows)), "POST"),
    "parallel": (lambda rows: json_reply(parallel_results(rows)), "POST"),
    "perplexity": (lambda rows: json_reply(perplexity_results(rows)), "POST"),
    "tavily": (lambda rows: json_reply(tavily_results(rows)), "POST"),
}


def _auth(backend: str, headers: dict[str, str]) -> str | None:
    if backend == "brave":
        return headers.get("x-subscription-token")
    if backend in ("exa", "parallel"):
        return headers.get("x-api-key")
    bearer = headers.get("authorization", "")
    return bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_each_backend_in_its_wire_format(world: Env, invoke: Any, web: FakeWeb, backend: str) -> None:
    use(world, web, backend)
    reply, method = BACKENDS[backend]
    path = ENDPOINTS[f"{backend}_url"]
    rows = [(u, t, s) for u, t, s in ROWS] + [("mailto:x@example.org", "Mail", "dropped")]
    web.routes[path] = reply(rows)
    result = invoke("web_search", {"query": "pinned connections"})
    titles = [r["title"] for r in result["results"]]
    assert titles == ["One result", "Two"]
    assert [r["url"] for r in result["results"]] == [ROWS[0][0], ROWS[1][0]]
    assert result["results"][0]["snippet"].startswith("First & best snippet")
    assert result["metadata"] == {"backend": backend, "result_count": 2}
    (hit,) = web.hits_on(path)
    assert hit.method == method
    assert _auth(backend, hit.headers) == KEY
    assert web.hits_on(DDG) == []
    if method == "GET":
        assert hit.query["q"] == ["pinned connections"] and hit.query["count"] == ["10"]
    else:
        body = hit.json()
        expected = {
            "exa": {"query": "pinned connections", "numResults": 10},
            "firecrawl": {"query": "pinned connections", "limit": 10},
            "parallel": {"objective": "pinned connections", "search_queries": ["pinned connections"]},
            "perplexity": {"query": "pinned connections", "max_results": 10},
            "tavily": {"query": "pinned connections", "max_results": 10},
        }[backend]
        assert expected.items() <= body.items()


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_key_may_come_from_the_environment(
    world: Env, invoke: Any, web: FakeWeb, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(world, web, backend, key=None)
    env_name = {"brave": "BRAVE_API_KEY"}.get(backend, f"{backend.upper()}_API_KEY")
    monkeypatch.setenv(env_name, "from-env")
    web.routes[ENDPOINTS[f"{backend}_url"]] = BACKENDS[backend][0](ROWS)
    assert invoke("web_search", {"query": "q"})["metadata"]["backend"] == backend
    (hit,) = web.hits_on(ENDPOINTS[f"{backend}_url"])
    assert _auth(backend, hit.headers) == "from-env"


def test_brave_search_api_key_env_and_config_precedence(
    world: Env, invoke: Any, web: FakeWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ENDPOINTS["brave_url"]
    web.routes[path] = _brave(ROWS)
    use(world, web, "brave", key=None)
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "second-name")
    invoke("web_search", {"query": "q"})
    use(world, web, "brave", key="from-config")
    monkeypatch.setenv("BRAVE_API_KEY", "from-env")
    invoke("web_search", {"query": "q"})
    assert [h.headers["x-subscription-token"] for h in web.hits_on(path)] == ["second-name", "from-config"]


def test_brave_without_a_web_block_is_an_empty_success(world: Env, invoke: Any, web: FakeWeb) -> None:
    use(world, web, "brave")
    web.routes[ENDPOINTS["brave_url"]] = json_reply({"type": "search", "query": {"original": "zzqx"}})
    result = invoke("web_search", {"query": "zzqx"})
    assert result["results"] == [] and "degraded" not in result["metadata"]
    assert web.hits_on(DDG) == []


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_empty_results_do_not_degrade(world: Env, invoke: Any, web: FakeWeb, backend: str) -> None:
    use(world, web, backend)
    web.routes[ENDPOINTS[f"{backend}_url"]] = BACKENDS[backend][0]([])
    result = invoke("web_search", {"query": "q"})
    assert result["results"] == []
    assert result["metadata"] == {"backend": backend, "result_count": 0}
    assert web.hits_on(DDG) == []


# ----- what degrades and what does not ----------------------------------------------------------------


def _ddg_hits(web: FakeWeb) -> int:
    return len(web.hits_on(DDG))


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_missing_key_is_auth_failed_without_any_request(
    world: Env, invoke: Any, web: FakeWeb, backend: str
) -> None:
    use(world, web, backend, key=None)
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "q"})
    assert e.value.code == "auth_failed"
    assert f"{backend}_api_key" in e.value.message and "_API_KEY" in e.value.message
    assert web.hits == []


@pytest.mark.parametrize(
    ("backend", "reply", "code"),
    [
        ("brave", brave_error(401, "UNAUTHORIZED", "Invalid token"), "auth_failed"),
        (
            "brave",
            brave_error(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid"),
            "auth_failed",
        ),
        ("brave", brave_error(422, "VALIDATION", "Unable to validate request parameter(s)"), "invalid_query"),
        (
            "exa",
            json_reply({"requestId": "r", "error": "Invalid API key", "tag": "INVALID_API_KEY"}, 401),
            "auth_failed",
        ),
        ("exa", json_reply({"requestId": "r", "error": "query is invalid"}, 400), "invalid_query"),
        (
            "tavily",
            json_reply({"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401),
            "auth_failed",
        ),
        (
            "firecrawl",
            json_reply({"success": False, "error": "Unauthorized: Invalid token"}, 401),
            "auth_failed",
        ),
        (
            "perplexity",
            json_reply({"error": {"message": "Forbidden", "type": "forbidden"}}, 403),
            "auth_failed",
        ),
        ("parallel", json_reply({"error": {"message": "Invalid API key"}}, 401), "auth_failed"),
    ],
)
def test_auth_and_query_failures_never_degrade(
    world: Env, invoke: Any, web: FakeWeb, backend: str, reply: Reply, code: str
) -> None:
    use(world, web, backend)
    web.routes[ENDPOINTS[f"{backend}_url"]] = reply
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "q"})
    assert e.value.code == code
    assert e.value.details["status"] == reply.status
    assert "fallback" not in e.value.details
    assert _ddg_hits(web) == 0


DEGRADING = [
    (
        "brave",
        json_reply({"error": {"code": "QUOTA_LIMITED", "detail": "out of credits"}}, 402),
        "provider_error",
    ),
    (
        "exa",
        json_reply({"error": "You have run out of credits", "tag": "NO_MORE_CREDITS"}, 402),
        "provider_error",
    ),
    (
        "tavily",
        json_reply({"detail": {"error": "This request exceeds your plan's set usage limit."}}, 432),
        "provider_error",
    ),
    ("tavily", json_reply({"detail": {"error": "Internal error"}}, 500), "provider_error"),
    ("firecrawl", json_reply({"success": False, "error": "Payment required"}, 402), "provider_error"),
    ("firecrawl", json_reply({"success": False, "error": "upstream search failed"}), "provider_error"),
    ("perplexity", json_reply({"error": {"message": "rate limit"}}, 429), "rate_limited"),
    ("parallel", html_reply("<html>Bad gateway</html>", status=502), "provider_error"),
    ("exa", json_reply({"answer": "moved to /v2"}), "parser_changed"),
    ("brave", Reply(200, b"<html>maintenance</html>", {"Content-Type": "text/html"}), "parser_changed"),
    ("tavily", json_reply({"results": "none"}), "parser_changed"),
    ("brave", Reply(200, b"[" * 200_000, {"Content-Type": "application/json"}), "parser_changed"),
]


@pytest.mark.parametrize(("backend", "reply", "code"), DEGRADING)
def test_broken_backend_degrades_once_to_duckduckgo(
    world: Env, invoke: Any, web: FakeWeb, backend: str, reply: Reply, code: str
) -> None:
    use(world, web, backend)
    web.routes[ENDPOINTS[f"{backend}_url"]] = reply
    result = invoke("web_search", {"query": "pinning"})
    assert result["results"] == FALLBACK
    meta = result["metadata"]
    assert meta["backend"] == "duckduckgo" and meta["degraded"] is True
    assert meta["primary_backend"] == backend
    assert meta["fallback_reason"].startswith(code + ": ")
    assert meta["result_count"] == 1
    assert len(web.hits_on(ENDPOINTS[f"{backend}_url"])) == 1 and _ddg_hits(web) == 1


def test_unreachable_backend_degrades_with_connect_failed(world: Env, invoke: Any, web: FakeWeb) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    configure(
        world,
        web,
        web_search={
            "backend": "tavily",
            "tavily_api_key": KEY,
            "tavily_url": f"http://127.0.0.1:{dead}/search",
        },
    )
    result = invoke("web_search", {"query": "q"})
    assert result["metadata"]["fallback_reason"].startswith("connect_failed: could not connect")
    assert result["results"] == FALLBACK


def test_slow_backend_degrades_with_a_read_timeout(world: Env, web: FakeWeb) -> None:
    from fermix_cli.core.net.guarded import guarded_client
    from fermix_cli.core.registry import default_registry

    use(world, web, "tavily")
    web.routes[ENDPOINTS["tavily_url"]] = Reply(200, b"{}", {"Content-Type": "application/json"}, delay=1.5)
    ctx = world.context(http_factory=lambda **o: guarded_client(**{**o, "read_timeout": 0.5}))
    try:
        meta = default_registry().invoke("web_search", {"query": "q"}, ctx)["metadata"]
    finally:
        ctx.close()
    assert meta["degraded"] is True and meta["fallback_reason"].startswith("timeout: read timeout")


def test_backend_redirects_are_followed_through_the_guard(world: Env, invoke: Any, web: FakeWeb) -> None:
    use(world, web, "brave")
    web.routes[ENDPOINTS["brave_url"]] = Reply(307, b"", {"Location": "/brave/v2/search?q=moved"})
    web.routes["/brave/v2/search"] = _brave(ROWS)
    result = invoke("web_search", {"query": "q"})
    assert result["metadata"] == {"backend": "brave", "result_count": 2}
    assert web.hits_on("/brave/v2/search")[0].headers["x-subscription-token"] == KEY  # same origin keeps it
    web.routes[ENDPOINTS["brave_url"]] = Reply(302, b"", {"Location": "http://169.254.169.254/latest/"})
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "q"})
    assert e.value.code == "blocked_url"


def test_oversized_provider_answer_degrades(world: Env, invoke: Any, web: FakeWeb) -> None:
    use(world, web, "exa")
    web.routes[ENDPOINTS["exa_url"]] = Reply(
        200, b"[" + b"0," * 600_000 + b"0]", {"Content-Type": "application/json"}
    )
    meta = invoke("web_search", {"query": "q"})["metadata"]
    assert meta["degraded"] is True and meta["fallback_reason"].startswith(
        "provider_error: exa sent a response larger"
    )


def test_when_duckduckgo_fails_too_the_original_error_returns(world: Env, invoke: Any, web: FakeWeb) -> None:
    use(world, web, "brave")
    web.routes[ENDPOINTS["brave_url"]] = brave_error(429, "RATE_LIMITED", "Request rate limit exceeded")
    web.routes[DDG] = html_reply(DDG_CHANGED)
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "q"})
    assert e.value.code == "rate_limited"
    assert e.value.message.startswith(
        "brave is rate limiting requests (HTTP 429): Request rate limit exceeded"
    )
    assert e.value.details["fallback"] == "duckduckgo_failed"
    assert e.value.details["fallback_error"]["code"] == "parser_changed"
    assert _ddg_hits(web) == 1


def test_the_key_is_never_repeated_in_an_error(world: Env, invoke: Any, web: FakeWeb) -> None:
    use(world, web, "exa")
    web.routes[ENDPOINTS["exa_url"]] = json_reply({"error": f"key {KEY} is not valid"}, 401)
    with pytest.raises(ToolError) as e:
        invoke("web_search", {"query": "q"})
    assert KEY not in json.dumps(e.value.to_dict())
    assert "key *** is not valid" in e.value.message


@pytest.mark.parametrize(
    ("body", "key", "detail"),
    [
        (b'{"error": "rate limit exceeded"}', "x", "rate limit exceeded"),
        (b'{"error": "bad key x given"}', "x", "bad key *** given"),
        (b'{"error": "key sk-abcdefgh12 invalid"}', "sk-abcdefgh12", "key *** invalid"),
        (b'{"error": "tokensk-abcdefgh12x"}', "sk-abcdefgh12", "token***x"),
    ],
)
def test_provider_detail_redacts_keys_without_mangling_words(body: bytes, key: str, detail: str) -> None:
    from fermix_cli.tools.web.providers import provider_detail

    assert provider_detail(body, key) == detail


# ----- the real CLI ------------------------------------------------------------------------------


def test_cli_search_prints_results_and_text_is_the_array(world: Env, web: FakeWeb) -> None:
    r = world.tool("web_search", {"query": "pinning"})
    assert r.code == 0, r.stderr
    assert r.json()["results"] == FALLBACK
    r = world.run("tool", "web_search", "--query", "pinning", "--text")
    assert r.code == 0 and json.loads(r.stdout) == FALLBACK


def test_cli_degraded_search_and_exit_codes(
    world: Env, web: FakeWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, web, web_search={"backend": "perplexity"})
    monkeypatch.setenv("PERPLEXITY_API_KEY", KEY)
    web.routes[ENDPOINTS["perplexity_url"]] = json_reply({"error": {"message": "upstream"}}, 503)
    r = world.tool("web_search", {"query": "q"})
    assert r.code == 0, r.stderr
    meta = r.json()["metadata"]
    assert (meta["degraded"], meta["primary_backend"]) == (True, "perplexity")
    web.routes[ENDPOINTS["perplexity_url"]] = json_reply({"error": {"message": "bad key"}}, 401)
    r = world.tool("web_search", {"query": "q"})
    assert r.code == 1 and r.error()["code"] == "auth_failed"
    r = world.tool("web_search", {"query": "x" * 1025})
    assert r.code == 2 and r.error()["code"] == "query_too_long"
