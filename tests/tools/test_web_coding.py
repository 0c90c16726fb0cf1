"""The coding `web` tool: Exa search, direct open, and cached `web:<ref>` snapshots in state.db."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env
from tests.tools.webfakes import (
    ENDPOINTS,
    FakeWeb,
    Reply,
    configure,
    exa_results,
    html_reply,
    json_reply,
    running,
)

EXA = "/exa/search"
KEY = "exa-key-42"
NOW = datetime(2026, 3, 15, 18, 30, tzinfo=UTC)


@pytest.fixture
def fake_web(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    with running(monkeypatch) as server:
        yield server


@pytest.fixture
def web(world: Env, fake_web: FakeWeb, monkeypatch: pytest.MonkeyPatch) -> FakeWeb:
    configure(world, fake_web)
    monkeypatch.setenv("EXA_API_KEY", KEY)
    fake_web.routes[EXA] = json_reply(
        exa_results(
            [
                (
                    "https://doc.rust-lang.org/book/",
                    "The Rust Book",
                    "Chapter 1. " + "Ownership rules. " * 200,
                ),
                ("https://blog.rust-lang.org/", "Rust Blog", "Announcing Rust 1.80"),
                ("https://x.example.org/?token=abc", "Leaky", "dropped"),
                ("http://10.1.2.3/internal", "Private", "dropped"),
                ("https://www.rust-lang.org/", "Rust", "A language empowering everyone"),
            ]
        )
    )
    return fake_web


def rows(world: Env) -> list[tuple[str, int]]:
    db = sqlite3.connect(world.fermix_home / "state.db")
    try:
        return db.execute("SELECT ref, seq FROM web_snapshots ORDER BY seq").fetchall()
    finally:
        db.close()


# ----- search ------------------------------------------------------------------------------------


def test_search_sends_the_contract_request_to_exa(invoke: Any, web: FakeWeb) -> None:
    result = invoke(
        "web",
        {
            "operation": "search",
            "query": "  Rust official release notes ",
            "limit": 3,
            "domainFilter": [" Rust-Lang.org ", "-old.rust-lang.org"],
            "recencyFilter": "month",
        },
        clock=lambda: NOW,
    )
    (hit,) = web.hits_on(EXA)
    assert hit.method == "POST" and hit.headers["x-api-key"] == KEY
    assert hit.json() == {
        "query": "Rust official release notes",
        "numResults": 3,
        "type": "auto",
        "contents": {"text": {"maxCharacters": 10000}},
        "includeDomains": ["rust-lang.org"],
        "excludeDomains": ["old.rust-lang.org"],
        "startPublishedDate": "2026-02-13T00:00:00.000Z",
    }
    assert result["backend"] == "exa" and result["query"] == "Rust official release notes"
    assert [r["url"] for r in result["results"]] == [
        "https://doc.rust-lang.org/book/",
        "https://blog.rust-lang.org/",
        "https://www.rust-lang.org/",
    ]
    assert result["dropped_results"] == 2
    first = result["results"][0]
    assert first["reference"].startswith("web:") and len(first["reference"]) == 20
    assert first["excerpt"].startswith("Chapter 1. Ownership rules.") and len(first["excerpt"]) <= 1000
    assert "published" not in json.dumps(result).lower()


@pytest.mark.parametrize(
    ("recency", "date"),
    [("day", "2026-03-14"), ("week", "2026-03-08"), ("month", "2026-02-13"), ("year", "2025-03-15")],
)
def test_recency_maps_to_start_published_date(invoke: Any, web: FakeWeb, recency: str, date: str) -> None:
    invoke("web", {"operation": "search", "query": "q", "recencyFilter": recency}, clock=lambda: NOW)
    assert web.hits_on(EXA)[0].json()["startPublishedDate"] == f"{date}T00:00:00.000Z"


def test_search_defaults_to_five_and_omits_absent_filters(invoke: Any, web: FakeWeb) -> None:
    invoke(
        "web",
        {"operation": "search", "query": "q", "limit": None, "domainFilter": None, "recencyFilter": None},
    )
    body = web.hits_on(EXA)[0].json()
    assert body["numResults"] == 5
    assert not {"includeDomains", "excludeDomains", "startPublishedDate"} & body.keys()


def test_search_result_references_open_without_network(invoke: Any, web: FakeWeb) -> None:
    result = invoke("web", {"operation": "search", "query": "rust book"})
    web.close()  # nothing may be fetched from here on
    opened = invoke("web", {"operation": "open", "reference": result["results"][0]["reference"]})
    assert opened["cached"] is True and opened["source"] == "exa"
    assert opened["url"] == "https://doc.rust-lang.org/book/" and opened["title"] == "The Rust Book"
    assert opened["text"].startswith("Chapter 1. Ownership rules.") and len(opened["text"]) > 1000


@pytest.mark.parametrize(
    ("args", "code", "field"),
    [
        ({"query": "   "}, "invalid_query", "query"),
        ({}, "invalid_query", "query"),
        ({"query": "q" * 513}, "invalid_query", "query"),
        ({"query": "q", "limit": 0}, "invalid_input", "limit"),
        ({"query": "q", "limit": 11}, "invalid_input", "limit"),
        ({"query": "q", "domainFilter": ["a.org"] * 21}, "invalid_input", "domainFilter"),
        ({"query": "q", "domainFilter": ["https://a.org"]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": ["ok.org", "a.org:443"]}, "invalid_input", "domainFilter[1]"),
        ({"query": "q", "domainFilter": ["a.org/docs"]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": ["a .org"]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": ["a..org"]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": ["a.org."]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": [""]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": ["-"]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": ["-a.org", "-b-.org"]}, "invalid_input", "domainFilter[1]"),
        (
            {"query": "q", "domainFilter": ["-x.org"]} | {"domainFilter": ["x.-org"]},
            "invalid_input",
            "domainFilter[0]",
        ),
        ({"query": "q", "domainFilter": ["bücher.de"]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": ["a_b.org"]}, "invalid_input", "domainFilter[0]"),
        ({"query": "q", "domainFilter": [("l" * 64) + ".org"]}, "invalid_input", "domainFilter[0]"),
        (
            {"query": "q", "domainFilter": [".".join(["a" * 63] * 4) + ".org"]},
            "invalid_input",
            "domainFilter[0]",
        ),
        ({"query": "q", "url": "https://a.org/"}, "invalid_input", "url"),
        ({"query": "q", "reference": "web:0123456789abcdef"}, "invalid_input", "reference"),
    ],
)
def test_search_input_rules(invoke: Any, web: FakeWeb, args: dict[str, Any], code: str, field: str) -> None:
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "search", **args})
    assert (e.value.code, e.value.details.get("field")) == (code, field)
    assert web.hits == []


def test_search_limits_that_pass(invoke: Any, web: FakeWeb) -> None:
    invoke("web", {"operation": "search", "query": "q" * 512, "limit": 10, "domainFilter": ["a.org"] * 20})
    invoke(
        "web",
        {
            "operation": "search",
            "query": "q",
            "limit": 1,
            "domainFilter": [("l" * 63) + ".org", "x-y.a1.org"],
        },
    )
    assert [h.json()["numResults"] for h in web.hits_on(EXA)] == [10, 1]


def test_search_without_exa_key_fails_and_never_falls_back(
    world: Env, invoke: Any, fake_web: FakeWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A key in config does not count: the contract makes EXA_API_KEY environment-only.
    configure(world, fake_web, web_search={"exa_api_key": "in-config", "backend": "exa"})
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "search", "query": "q"})
    assert e.value.code == "auth_failed"
    assert "EXA_API_KEY" in e.value.message and "openai-codex" in e.value.message
    assert fake_web.hits == []


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (json_reply({"error": "Invalid API key"}, 401), "auth_failed"),
        (json_reply({"error": "slow down"}, 429), "rate_limited"),
        (json_reply({"error": "You have run out of credits"}, 402), "provider_error"),
        (json_reply({"data": []}), "parser_changed"),
        (Reply(200, b"[" + b"0," * 1_100_000 + b"0]", {"Content-Type": "application/json"}), "too_large"),
    ],
)
def test_exa_failures_do_not_fall_back(invoke: Any, web: FakeWeb, reply: Reply, code: str) -> None:
    web.routes[EXA] = reply
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "search", "query": "q"})
    assert e.value.code == code
    if code == "auth_failed":
        assert e.value.message.endswith("check the EXA_API_KEY environment variable")
    assert [h.path for h in web.hits] == [EXA]
    assert not web.hits_on(ENDPOINTS["duckduckgo_url"])


def test_search_output_stays_within_48_kib(invoke: Any, web: FakeWeb) -> None:
    long_url = "https://docs.example.org/" + "p" * 1900
    web.routes[EXA] = json_reply(
        exa_results([(f"{long_url}{i}", "€" * 300, '"€\\' * 400) for i in range(10)])
    )
    result = invoke("web", {"operation": "search", "query": "q", "limit": 10})
    size = len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode())
    assert size <= 48 * 1024
    assert result["truncated"] is True and result["truncated_by"] == ["output_cap"]
    assert result["result_count"] == len(result["results"]) and result["results"]


# ----- open --------------------------------------------------------------------------------------


def test_open_reads_a_page_and_caches_it(world: Env, invoke: Any, web: FakeWeb) -> None:
    web.routes["/doc"] = html_reply(
        "<html><head><title>Guide</title></head><body><h1>Intro</h1><p>Hello.</p></body></html>"
    )
    result = invoke("web", {"operation": "open", "url": web.url("/doc")})
    assert result == {
        "operation": "open",
        "cached": False,
        "reference": result["reference"],
        "url": web.url("/doc"),
        "status": 200,
        "title": "Guide",
        "content_type": "text/html",
        "text": "# Intro\n\nHello.",
        "truncated": False,
        "truncated_by": [],
    }
    assert [r for r, _ in rows(world)] == [result["reference"]]


@pytest.mark.parametrize(
    ("content_type", "body", "text"),
    [
        ("application/json", b'{"a":  [1, 2]}', '{"a":  [1, 2]}'),
        ("text/plain; charset=utf-8", b"line one\nline two\xff", "line one\nline two\ufffd"),
        ("text/markdown", b"# Title\n\n*kept as written*", "# Title\n\n*kept as written*"),
    ],
)
def test_open_returns_text_json_and_markdown_as_they_are(
    invoke: Any, web: FakeWeb, content_type: str, body: bytes, text: str
) -> None:
    web.routes["/f"] = Reply(200, body, {"Content-Type": content_type})
    assert invoke("web", {"operation": "open", "url": web.url("/f")})["text"] == text


def test_cached_open_makes_no_request(invoke: Any, web: FakeWeb) -> None:
    web.routes["/doc"] = html_reply("<p>version one</p>")
    first = invoke("web", {"operation": "open", "url": web.url("/doc")})
    web.routes["/doc"] = html_reply("<p>version two</p>")
    hits = len(web.hits)
    again = invoke("web", {"operation": "open", "reference": first["reference"]})
    bare = invoke("web", {"operation": "open", "reference": first["reference"].removeprefix("web:")})
    assert len(web.hits) == hits
    assert again["text"] == bare["text"] == "version one" and again["cached"] is True
    fresh = invoke("web", {"operation": "open", "url": web.url("/doc")})
    assert fresh["text"] == "version two" and fresh["reference"] != first["reference"]
    assert invoke("web", {"operation": "open", "reference": first["reference"]})["text"] == "version one"


def test_unknown_or_malformed_reference_fails_without_network(invoke: Any, web: FakeWeb) -> None:
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", "reference": "web:0123456789abcdef"})
    assert e.value.code == "not_found" and "open the public URL again" in e.value.message
    for bad in ("web:xyz", "https://example.com/", "web:0123456789ABCDEF"):
        with pytest.raises(ToolError) as e:
            invoke("web", {"operation": "open", "reference": bad})
        assert e.value.code == "invalid_input"
    assert web.hits == []


def open_pages(world: Env, web: FakeWeb, numbers: range) -> list[str]:
    """Open /p?n=N for each number in one context (as one agent session would) and return the references."""
    web.routes["/p"] = lambda hit: html_reply(f"<p>page {hit.query['n'][0]}</p>")
    ctx = world.context()
    try:
        return [
            default_registry().invoke("web", {"operation": "open", "url": web.url(f"/p?n={n}")}, ctx)[
                "reference"
            ]
            for n in numbers
        ]
    finally:
        ctx.close()


def test_the_newest_64_snapshots_are_kept(world: Env, invoke: Any, web: FakeWeb) -> None:
    refs = open_pages(world, web, range(66))
    assert len(set(refs)) == 66
    kept = [r for r, _ in rows(world)]
    assert kept == refs[2:]
    hits = len(web.hits)
    for old in refs[:2]:
        with pytest.raises(ToolError) as e:
            invoke("web", {"operation": "open", "reference": old})
        assert e.value.code == "not_found"
    assert invoke("web", {"operation": "open", "reference": refs[2]})["text"] == "page 2"
    assert len(web.hits) == hits


def test_reopening_the_same_page_refreshes_it_instead_of_duplicating(
    world: Env, invoke: Any, web: FakeWeb
) -> None:
    first = open_pages(world, web, range(64))[0]
    assert invoke("web", {"operation": "open", "url": web.url("/p?n=0")})["reference"] == first
    invoke("web", {"operation": "open", "url": web.url("/p?n=64")})
    kept = [r for r, _ in rows(world)]
    assert len(kept) == 64 and first in kept and kept[-2] == first


def test_redirects_are_refused_not_followed(world: Env, invoke: Any, web: FakeWeb) -> None:
    """The contract: URL open rejects redirects; a public target is named so the model can open it."""
    web.routes["/old"] = Reply(301, b"", {"Location": "/new?x=1"})
    web.routes["/new"] = html_reply("<p>new</p>")
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", "url": web.url("/old")})
    assert (e.value.code, e.value.details["reason"], e.value.details["status"]) == (
        "blocked_url",
        "redirect",
        301,
    )
    assert e.value.details["location"] == web.url("/new?x=1") and web.url("/new?x=1") in e.value.message
    assert web.hits_on("/new") == []
    r = world.tool("web", {"operation": "open", "url": web.url("/old")})
    assert r.code == 3 and r.stdout == "" and "does not follow redirects" in r.stderr


@pytest.mark.parametrize(
    ("location", "refused"),
    [
        ("http://admin:hunter2@169.254.169.254/latest/meta-data/", "userinfo"),
        ("http://169.254.169.254/latest/meta-data/?token=hunter2", "non_global_address"),
        ("https://docs.example.org/page?api_key=hunter2", "sensitive_parameter"),
    ],
)
def test_a_redirect_to_a_url_web_cannot_open_is_refused_and_redacted(
    invoke: Any, web: FakeWeb, location: str, refused: str
) -> None:
    web.routes["/old"] = Reply(302, b"", {"Location": location})
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", "url": web.url("/old")})
    assert (e.value.code, e.value.details["reason"]) == ("blocked_url", "redirect")
    assert e.value.details["location_refused"] == refused
    assert "hunter2" not in e.value.message and "hunter2" not in str(e.value.details)
    assert "***" in e.value.details["location"]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://user:pass@docs.example.org/", "userinfo"),
        ("https://docs.example.org/page?access_token=s3cr3tvalue", "sensitive_parameter"),
        ("https://docs.example.org/page?lang=en&API-Key=s3cr3tvalue", "sensitive_parameter"),
        ("https://docs.example.org/cb#id_token=s3cr3tvalue", "sensitive_parameter"),
        ("https://bucket.example.org/o?X-Amz-Signature=s3cr3tvalue", "sensitive_parameter"),
        ("https://docs.example.org/" + "a" * 2030, "url_too_long"),
        ("http://localhost:8080/", "blocked_name"),
        ("http://169.254.169.254/latest/meta-data/", "non_global_address"),
        ("file:///etc/passwd", "unsupported_scheme"),
    ],
)
def test_open_refuses_non_public_or_credentialed_urls(
    invoke: Any, web: FakeWeb, url: str, reason: str
) -> None:
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", "url": url})
    assert e.value.code == "blocked_url" and e.value.details["reason"] == reason
    assert "s3cr3tvalue" not in e.value.message
    assert web.hits == []


def test_credentials_in_the_url_are_sent_to_a_shell_command_not_to_headers(world: Env, web: FakeWeb) -> None:
    r = world.tool("web", {"operation": "open", "url": "https://user:pw@docs.example.org/"})
    assert r.code == 3
    err = r.error()
    assert (err["code"], err["details"]["reason"]) == ("blocked_url", "userinfo")
    assert err["message"] == (
        "the URL carries credentials (user:password@); web opens only public, unauthenticated pages — "
        "remove them, or use a shell command (curl) for authenticated requests"
    )
    assert "headers" not in err["message"] and "pw" not in json.dumps(err["details"])
    assert web.hits == []


def test_open_of_a_private_address_needs_the_allowance(world: Env, invoke: Any, fake_web: FakeWeb) -> None:
    configure(world, fake_web, allow_local=False)
    fake_web.routes["/x"] = html_reply("<p>x</p>")
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", "url": fake_web.url("/x")})
    assert e.value.code == "blocked_url"
    assert fake_web.hits == []


def test_open_applies_download_budget_snapshot_and_output_limits(
    world: Env, invoke: Any, web: FakeWeb
) -> None:
    web.routes["/huge"] = Reply(200, b"a" * (600 * 1024), {"Content-Type": "text/plain"})
    big = invoke("web", {"operation": "open", "url": web.url("/huge")})
    assert big["truncated_by"] == ["download_limit", "text_budget"] and len(big["text"]) == 20_000
    web.routes["/wide"] = Reply(200, ("€" * 19_000).encode(), {"Content-Type": "text/plain; charset=utf-8"})
    wide = invoke("web", {"operation": "open", "url": web.url("/wide")})
    assert wide["truncated_by"] == ["snapshot_limit"] and len(wide["text"].encode()) == 39_999
    # Text that JSON escapes heavily (\x01 as \\u0001, '"' as \\"); all control characters would be binary.
    web.routes["/esc"] = Reply(200, ('\x01"""' * 4_750).encode(), {"Content-Type": "text/plain"})
    esc = invoke("web", {"operation": "open", "url": web.url("/esc")})
    assert esc["truncated_by"] == ["output_cap"]
    assert len(json.dumps(esc, ensure_ascii=False, separators=(",", ":")).encode()) <= 48 * 1024
    cached = invoke("web", {"operation": "open", "reference": esc["reference"]})
    assert cached["truncated_by"] == ["output_cap"] and 8000 < len(cached["text"]) < 19_000
    assert len(json.dumps(cached, ensure_ascii=False, separators=(",", ":")).encode()) <= 48 * 1024
    again = invoke("web", {"operation": "open", "reference": big["reference"]})
    assert again["truncated_by"] == ["download_limit", "text_budget"]


def test_open_failures(invoke: Any, web: FakeWeb) -> None:
    web.routes["/404"] = html_reply("<p>gone</p>", status=404)
    web.routes["/pdf"] = Reply(200, b"%PDF-1.7\x00", {"Content-Type": "application/pdf"})
    web.routes["/slow"] = Reply(200, b"x", {"Content-Type": "text/plain"}, delay=0.3)
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", "url": web.url("/404")})
    assert (e.value.code, e.value.message) == ("network", "HTTP 404")
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", "url": web.url("/pdf")})
    assert e.value.code == "unsupported_content"
    assert invoke("web", {"operation": "open", "url": web.url("/slow")})["text"] == "x"


def test_open_of_a_page_without_readable_text_says_so_and_caches_nothing(
    world: Env, invoke: Any, web: FakeWeb
) -> None:
    web.routes["/app"] = html_reply("<html><head><title>App</title><script>boot()</script><body><div></div>")
    result = invoke("web", {"operation": "open", "url": web.url("/app")})
    assert result["empty"] is True and result["reference"] is None and result["text"] == ""
    assert "browser tool" in result["note"]
    r = world.tool("web", {"operation": "open", "url": web.url("/app")}, "--text")
    assert r.code == 0 and "no readable text" in r.stdout


def test_web_asks_the_guard_for_the_contract_limits(world: Env, web: FakeWeb) -> None:
    from fermix_cli.core.net.guarded import guarded_client

    web.routes["/ok"] = html_reply("<p>ok</p>")
    seen: list[dict[str, Any]] = []

    def spy(**options: Any) -> Any:
        seen.append(options)
        return guarded_client(**options)

    ctx = world.context(http_factory=spy)
    try:
        default_registry().invoke("web", {"operation": "open", "url": web.url("/ok")}, ctx)
        default_registry().invoke("web", {"operation": "search", "query": "q"}, ctx)
    finally:
        ctx.close()
    opened, searched = seen
    assert (opened["connect_timeout"], opened["total_timeout"], opened["max_body"]) == (5.0, 15.0, 512 * 1024)
    assert opened["follow_redirects"] is False
    assert (searched["connect_timeout"], searched["total_timeout"], searched["max_body"]) == (
        5.0,
        20.0,
        2 * 1024 * 1024,
    )


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"url": "https://a.org/", "reference": "web:0123456789abcdef"}, "url"),
        ({}, "url"),
        ({"url": "https://a.org/", "query": "q"}, "query"),
        ({"url": "https://a.org/", "limit": 3}, "limit"),
        ({"url": "https://a.org/", "domainFilter": ["a.org"]}, "domainFilter"),
        ({"reference": "web:0123456789abcdef", "recencyFilter": "day"}, "recencyFilter"),
    ],
)
def test_open_takes_exactly_one_target_and_no_search_fields(
    invoke: Any, web: FakeWeb, args: dict[str, Any], field: str
) -> None:
    with pytest.raises(ToolError) as e:
        invoke("web", {"operation": "open", **args})
    assert (e.value.code, e.value.details["field"]) == ("invalid_input", field)
    assert web.hits == []


def test_web_belongs_to_the_coding_toolset(world: Env) -> None:
    ctx = world.context()
    try:
        coding = {s.name for s in default_registry().visible(ctx, toolset="coding")}
        agent = {s.name for s in default_registry().visible(ctx, toolset="fermix")}
    finally:
        ctx.close()
    assert "web" in coding and "web_fetch" not in coding
    assert {"web_fetch", "web_search"} <= agent and "web" not in agent


# ----- the real CLI ------------------------------------------------------------------------------


def test_cli_open_then_reopen_from_another_process_without_network(world: Env, web: FakeWeb) -> None:
    web.routes["/doc"] = html_reply("<title>Doc</title><h1>Doc</h1><p>Body.</p>")
    r = world.tool("web", {"operation": "open", "url": web.url("/doc")})
    assert r.code == 0, r.stderr
    ref = r.json()["reference"]
    web.close()
    r = world.run("tool", "web", "--operation", "open", "--reference", ref, "--text")
    assert r.code == 0, r.stderr
    assert r.stdout == f"{ref} {web.url('/doc')} (cached)\nTitle: Doc\n\n# Doc\n\nBody.\n"
    r = world.tool("web", {"operation": "open", "reference": "web:ffffffffffffffff"})
    assert r.code == 1 and r.error()["code"] == "not_found"
    r = world.tool("web", {"operation": "open", "url": "https://a.org/?password=hunter2"})
    assert r.code == 3 and r.error()["code"] == "blocked_url" and "hunter2" not in r.stderr


def test_cli_search(world: Env, web: FakeWeb) -> None:
    r = world.tool("web", {"operation": "search", "query": "rust", "limit": 2}, "--text")
    assert r.code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Exa results for 'rust': 2"
    assert lines[1] == "[1] The Rust Book" and lines[2] == "    https://doc.rust-lang.org/book/"
    assert lines[3].startswith("    web:")
