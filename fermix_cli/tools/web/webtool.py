"""The coding toolset's `web`: `search` (Exa) and `open` (a public URL, or a cached `web:<ref>` snapshot).

fermix has no ChatGPT (openai-codex) login, so search always goes to Exa with the environment-only
EXA_API_KEY; without it search fails with `auth_failed` and never falls back to another backend. `open`
needs no key. Figures from the contract: query 1-512 characters, 1-10 results (default 5), at most 20
domains, URL at most 2048 bytes; Exa text 10000 characters per page, response 2 MiB, 5 s/20 s; a direct
open downloads 512 KiB at most in 5 s/15 s, keeps a 5000-token (20000-character) text budget, caches at
most 40000 bytes per page, and no output is over 48 KiB.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Annotated, Any, Literal
from urllib.parse import urljoin

from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.net.guard import encode_location, redact_url
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec
from . import pagecache as snapshots
from .pagetext import body_kind, decode_body, empty_note, html_title, media_type, page_text
from .providers import clean_text, object_list, request_json
from .urlrules import domain_filter, public_url

MAX_QUERY = 512
OUTPUT_CAP = 48 * 1024
OPEN_MAX_BODY = 512 * 1024
TEXT_BUDGET_CHARS = 20_000  # 5000 tokens at about four characters a token
EXCERPT_CHARS = 1_000
EXA_TEXT_CHARS = 10_000
EXA_LIMITS: dict[str, Any] = {
    "connect_timeout": 5.0,
    "read_timeout": 20.0,
    "total_timeout": 20.0,
    "max_body": 2 * 1024 * 1024,
}
OPEN_LIMITS: dict[str, Any] = {
    "connect_timeout": 5.0,
    "read_timeout": 15.0,
    "total_timeout": 15.0,
    "max_body": OPEN_MAX_BODY,
    "follow_redirects": False,
}
RECENCY_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
SEARCH_ONLY = ("query", "limit", "domainFilter", "recencyFilter")
OPEN_ONLY = ("url", "reference")
NO_EXA_KEY = (
    "web search needs an Exa API key in the environment variable EXA_API_KEY (it is never read from "
    "config). fermix has no ChatGPT/openai-codex login, so Exa is its only search path, and search does "
    "not fall back to another backend; web_search (DuckDuckGo by default) works without a key, and "
    "web open needs none"
)


class WebParams(Params):
    null_means_absent = frozenset(
        {"query", "url", "reference", "limit", "domainFilter", "recencyFilter"}
    )  # the seed: "Omit unused fields or set them to null"
    operation: Annotated[
        Literal["search", "open"], Field(description="search (needs query) or open (needs url or reference)")
    ]
    query: Annotated[
        str | None,
        Field(description="search: what to look for, 1-512 characters", json_schema_extra={"maxLength": 512}),
    ] = None
    limit: Annotated[
        int | None,
        Field(
            description="search: results to return, 1-10 (default 5)",
            json_schema_extra={"minimum": 1, "maximum": 10},
        ),
    ] = None
    domainFilter: Annotated[  # the contract's camelCase
        list[str] | None,
        Field(
            description="search: up to 20 bare domains to include; prefix - to exclude (e.g. -old.example.com)",
            json_schema_extra={"maxItems": 20},
        ),
    ] = None
    recencyFilter: Annotated[  # the contract's camelCase
        Literal["day", "week", "month", "year"] | None,
        Field(description="search: only pages published in the last day, week, month (30 days) or year"),
    ] = None
    url: Annotated[
        str | None, Field(description="open: a public http(s) URL, at most 2048 bytes, without credentials")
    ] = None
    reference: Annotated[
        str | None,
        Field(description="open: a cached page, web:<ref> as returned by an earlier search or open"),
    ] = None


def web(p: WebParams, ctx: ToolContext) -> dict[str, Any]:
    if p.operation == "search":
        _refuse_fields(p, OPEN_ONLY, "search")
        return _search(p, ctx)
    _refuse_fields(p, SEARCH_ONLY, "open")
    if (p.url is None) == (p.reference is None):
        raise ToolError(
            "invalid_input",
            'open takes exactly one of url or reference, e.g. {"operation":"open","url":"https://example.com/"}',
            {"field": "url"},
        )
    if p.reference is not None:
        return _open_reference(p.reference, ctx)
    assert p.url is not None
    return _open_url(p.url, ctx)


def _refuse_fields(p: WebParams, names: tuple[str, ...], operation: str) -> None:
    for name in names:
        if getattr(p, name) is not None:
            raise ToolError(
                "invalid_input",
                f"{name} does not apply to operation {operation}; omit it or set it to null",
                {"field": name},
            )


# ----- search ------------------------------------------------------------------------------------


def _search(p: WebParams, ctx: ToolContext) -> dict[str, Any]:
    query = (p.query or "").strip()
    if not query:
        raise ToolError("invalid_query", "search needs a query of 1 to 512 characters", {"field": "query"})
    if len(query) > MAX_QUERY:
        raise ToolError(
            "invalid_query", f"query is {len(query)} characters; the limit is 512", {"field": "query"}
        )
    limit = 5 if p.limit is None else p.limit
    if not 1 <= limit <= 10:
        raise ToolError("invalid_input", "limit must be from 1 to 10", {"field": "limit"})
    include, exclude = domain_filter(p.domainFilter or [])
    key = os.environ.get("EXA_API_KEY", "").strip()
    if not key:
        raise ToolError("auth_failed", NO_EXA_KEY, {"backend": "exa", "reason": "missing_key"})
    body: dict[str, Any] = {
        "query": query,
        "numResults": limit,
        "type": "auto",
        "contents": {"text": {"maxCharacters": EXA_TEXT_CHARS}},
    }
    if include:
        body["includeDomains"] = include
    if exclude:
        body["excludeDomains"] = exclude
    if p.recencyFilter is not None:
        since = ctx.now().date() - timedelta(days=RECENCY_DAYS[p.recencyFilter])
        body["startPublishedDate"] = f"{since.isoformat()}T00:00:00.000Z"
    endpoint = ctx.config.fermix_core.tools.web.exa_url
    with ctx.http_client(**EXA_LIMITS) as client:
        data = request_json(
            client,
            "exa",
            "POST",
            endpoint,
            key=key,
            headers={"x-api-key": key},
            body=body,
            too_large_code="too_large",
            auth_hint="check the EXA_API_KEY environment variable",
        )
    allowed = ctx.config.fermix_core.net.allowed_private_hosts
    results: list[dict[str, Any]] = []
    kept: list[snapshots.Snapshot] = []
    dropped = 0
    for item in object_list(data, "results", backend="exa"):
        if len(results) == limit:
            break
        url = item.get("url")
        try:
            public_url(url if isinstance(url, str) else "", allowed)
        except ToolError:
            dropped += 1  # Exa chose the URL; fermix still shows only public ones without credentials
            continue
        text = item.get("text") if isinstance(item.get("text"), str) else ""
        title = clean_text(item.get("title"), 300) or None
        snap = snapshots.make_snapshot(url, title, None, "exa", text)
        kept.append(snap)
        results.append(
            {
                "title": title or url,
                "url": url,
                "reference": snap.ref,
                "excerpt": clean_text(text, EXCERPT_CHARS),
            }
        )
    snapshots.store(ctx, kept)
    result = {
        "operation": "search",
        "backend": "exa",
        "query": query,
        "results": results,
        "result_count": len(results),
        "dropped_results": dropped,
        "truncated": False,
        "truncated_by": [],
    }
    return _fit_search(result)


def _fit_search(result: dict[str, Any]) -> dict[str, Any]:
    """Shorten excerpts, then drop trailing results, until the output is within 48 KiB."""
    excerpt_limit = EXCERPT_CHARS
    while _size(result) > OUTPUT_CAP:
        result["truncated"], result["truncated_by"] = True, ["output_cap"]
        if excerpt_limit > 100:
            excerpt_limit //= 2
            for item in result["results"]:
                item["excerpt"] = clean_text(item["excerpt"], excerpt_limit)
        elif result["results"]:
            result["results"].pop()
            result["results_omitted"] = result.get("results_omitted", 0) + 1
            result["result_count"] = len(result["results"])
        else:
            break
    return result


# ----- open --------------------------------------------------------------------------------------


def _open_reference(raw: str, ctx: ToolContext) -> dict[str, Any]:
    ref = raw.strip()
    if not ref.startswith(snapshots.PREFIX):
        ref = snapshots.PREFIX + ref
    if not snapshots.is_reference(ref):
        raise ToolError(
            "invalid_input",
            "reference must be web:<16 hex digits>, exactly as an earlier web search or open returned it",
            {"field": "reference"},
        )
    snap = snapshots.load(ctx, ref)
    if snap is None:
        raise ToolError(
            "not_found",
            f"unknown or expired reference {ref}: fermix keeps the 64 newest pages; open the public URL "
            "again for a new reference",
            {"reference": ref},
        )
    result = {
        "operation": "open",
        "cached": True,
        "reference": snap.ref,
        "url": snap.url,
        "title": snap.title,
        "content_type": snap.content_type,
        "source": snap.source,
        "text": snap.text,
        "truncated": bool(snap.truncated_by),
        "truncated_by": list(snap.truncated_by),
    }
    return _fit_text(result)


def _open_url(url: str, ctx: ToolContext) -> dict[str, Any]:
    checked = public_url(url, ctx.config.fermix_core.net.allowed_private_hosts)
    with ctx.http_client(**OPEN_LIMITS) as client:
        response = client.get(
            checked.url,
            headers={"accept": "text/html,text/plain,text/markdown,application/json;q=0.9,*/*;q=0.1"},
            truncate=True,
        )
    status = response.status_code
    if status in (301, 302, 303, 307, 308):
        raise _redirect_refused(checked.url, status, response.headers.get("location", "").strip(), ctx)
    if not 200 <= status < 300:
        raise ToolError("network", f"HTTP {status}", {"url": checked.url, "status": status})
    content_type = response.headers.get("content-type", "")
    kind = body_kind(content_type, response.content)
    if kind == "binary":
        raise ToolError(
            "unsupported_content",
            f"{media_type(content_type) or 'the body'} is not text; web open reads plain text, Markdown, "
            "JSON and HTML",
            {"url": checked.url, "content_type": content_type},
        )
    truncated_by: list[str] = ["download_limit"] if response.truncated else []
    text = decode_body(response.content, content_type, kind)
    title = None
    if kind == "html":
        title = html_title(text)
        text = page_text(text, checked.url)
    note = empty_note(kind, text)
    if note:
        # Nothing to reread: an empty page is reported, never cached as a web:<ref> success.
        return {
            "operation": "open",
            "cached": False,
            "reference": None,
            "url": checked.url,
            "status": status,
            "title": title,
            "content_type": media_type(content_type) or None,
            "text": "",
            "empty": True,
            "note": note,
            "truncated": bool(truncated_by),
            "truncated_by": truncated_by,
        }
    if len(text) > TEXT_BUDGET_CHARS:
        text = text[:TEXT_BUDGET_CHARS]
        truncated_by.append("text_budget")
    snap = snapshots.make_snapshot(
        checked.url, title, media_type(content_type) or None, "open", text, tuple(truncated_by)
    )
    snapshots.store(ctx, [snap])
    result = {
        "operation": "open",
        "cached": False,
        "reference": snap.ref,
        "url": checked.url,
        "status": status,
        "title": snap.title,
        "content_type": snap.content_type,
        "text": snap.text,
        "truncated": bool(snap.truncated_by),
        "truncated_by": list(snap.truncated_by),
    }
    return _fit_text(result)


def _redirect_refused(url: str, status: int, location: str, ctx: ToolContext) -> ToolError:
    """web open does not follow redirects (the contract): the answer names a target only if it may open it."""
    details: dict[str, Any] = {"reason": "redirect", "url": url, "status": status}
    if not location:
        return ToolError("network", "redirect missing location", {"url": url, "status": status})
    target = urljoin(url, encode_location(location))
    details["location"] = redact_url(target)
    try:
        public_url(target, ctx.config.fermix_core.net.allowed_private_hosts)
    except ToolError as exc:
        details["location_refused"] = exc.details.get("reason")
        return ToolError(
            "blocked_url",
            f"{url} answered HTTP {status} with a redirect to {redact_url(target)}, which web cannot open "
            f"({exc.details.get('reason')}); web open does not follow redirects",
            details,
        )
    return ToolError(
        "blocked_url",
        f"{url} answered HTTP {status} with a redirect to {target}; web open does not follow redirects: "
        "open that URL if it is the page you want",
        details,
    )


def _fit_text(result: dict[str, Any]) -> dict[str, Any]:
    """Cut `text` (on a character boundary) so the whole output is within 48 KiB."""
    if _size(result) <= OUTPUT_CAP:
        return result
    text = result["text"]
    result["truncated"] = True
    result["truncated_by"] = [*result["truncated_by"], "output_cap"]
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits
        mid = (low + high + 1) // 2
        result["text"] = text[:mid]
        if _size(result) <= OUTPUT_CAP:
            low = mid
        else:
            high = mid - 1
    result["text"] = text[:low]
    return result


def _size(result: dict[str, Any]) -> int:
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# ----- rendering ---------------------------------------------------------------------------------


def render(result: dict[str, Any]) -> str:
    cut = f"\n[truncated by {', '.join(result['truncated_by'])}]" if result.get("truncated") else ""
    if result["operation"] == "search":
        lines = [f"Exa results for {result['query']!r}: {result['result_count']}"]
        for n, item in enumerate(result["results"], 1):
            lines += [f"[{n}] {item['title']}", f"    {item['url']}", f"    {item['reference']}"]
            if item["excerpt"]:
                lines.append(f"    {item['excerpt']}")
        return "\n".join(lines) + cut
    if result.get("empty"):
        return f"{result['url']}: {result['note']}"
    head = f"{result['reference']} {result['url']}" + (" (cached)" if result["cached"] else "")
    if result.get("title"):
        head += f"\nTitle: {result['title']}"
    return f"{head}\n\n{result['text']}{cut}"


WEB = ToolSpec(
    name="web",
    category="web",
    policy_class="network",
    description=(
        "Public research and programming documentation, one operation per call. search: Exa web search "
        "(needs EXA_API_KEY in the environment) returning source URLs, web:<ref> references and bounded "
        "excerpts; optional domainFilter (up to 20 bare domains, -domain to exclude) and recencyFilter "
        "(day/week/month/year, by publication date). open: a public http(s) URL by direct GET (no "
        "JavaScript, no redirects followed, no credentials) as readable text, or a web:<ref> reference, "
        "which returns the stored snapshot without network work. The 64 newest pages are kept; output is "
        "capped at 48 KiB with truncation metadata."
    ),
    params=WebParams,
    handler=web,
    render=render,
    hints=Hints(read_only=True, open_world=True),
    toolsets=frozenset({"coding"}),
    when_to_use=(
        "Look up documentation or public pages while coding. Use open with a reference to reread a page "
        "without fetching it again. For private hosts, custom headers or methods, use bash."
    ),
    examples=(
        Example(
            {
                "operation": "search",
                "query": "Rust official release notes",
                "limit": 5,
                "domainFilter": ["rust-lang.org", "-old.rust-lang.org"],
                "recencyFilter": "month",
            },
            "Exa search limited to one site, published in the last 30 days",
        ),
        Example({"operation": "open", "url": "https://www.rust-lang.org/"}, "read a public page"),
        Example(
            {"operation": "open", "reference": "web:0123456789abcdef"}, "reread a cached page, no network"
        ),
    ),
    failure_modes=(
        FailureMode(
            "invalid_input", "a field of the other operation, a bad domainFilter entry, limit out of 1-10"
        ),
        FailureMode("invalid_query", "the query is blank or over 512 characters, or Exa refused it"),
        FailureMode("auth_failed", "EXA_API_KEY is not set, or Exa rejected it (search only)"),
        FailureMode(
            "blocked_url",
            "not public http(s), credentials or a credential parameter, over 2048 bytes; open: the page "
            "redirects (reason redirect; not followed, the target named only when it is public)",
        ),
        FailureMode("not_found", "unknown or expired reference; open the URL again for a new one"),
        FailureMode("unsupported_content", "the page is binary (image, PDF, archive ...)"),
        FailureMode("rate_limited", "Exa is throttling requests"),
        FailureMode("provider_error", "Exa failed (out of credits, HTTP 5xx ...)"),
        FailureMode("parser_changed", "Exa's response format changed"),
        FailureMode("too_large", "Exa's response exceeded 2 MiB"),
        FailureMode("network", "HTTP N, a dropped exchange or a TLS failure"),
        FailureMode(
            "dns_failure", "the host name did not resolve (offline, or no such name); exit 1, retry later"
        ),
        FailureMode("connect_failed", "nothing accepted the connection; exit 1, retry later"),
        FailureMode("timeout", "no connection, or no reply, within the time limit"),
    ),
)
