"""web_fetch: one public URL through the network guard; HTML as markdown-light text, JSON verbatim."""

from __future__ import annotations

from typing import Annotated, Any

from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec
from .pagetext import body_kind, decode_body, empty_note, media_type, page_text

MAX_BODY = 1_048_576
TEXT_CAP = 100_000  # bytes of rendered text (HTML and plain text); JSON is never cut
CLIENT_LIMITS: dict[str, Any] = {
    "max_body": MAX_BODY,
    "connect_timeout": 3.0,
    "read_timeout": 15.0,
    "follow_redirects": True,
    "max_redirects": 5,
}
ACCEPT = "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5"


class WebFetchParams(Params):
    url: Annotated[str, Field(description="Public HTTP(S) URL to fetch")]


def web_fetch(p: WebFetchParams, ctx: ToolContext) -> dict[str, Any]:
    with ctx.http_client(**CLIENT_LIMITS) as client:
        response = client.get(p.url, headers={"accept": ACCEPT})
    response.raise_for_status()
    content_type = response.headers.get("content-type", "")
    kind = body_kind(content_type, response.content)
    if kind == "binary":
        raise ToolError(
            "unsupported_content",
            f"{media_type(content_type) or 'the body'} is not text; web_fetch returns HTML, text and JSON",
            {"url": response.url, "content_type": content_type},
        )
    text = decode_body(response.content, content_type, kind)
    if kind == "html":
        text = page_text(text, response.url)
    truncated = False
    text_bytes = len(text.encode("utf-8"))
    if kind != "json" and text_bytes > TEXT_CAP:
        text = text.encode("utf-8")[:TEXT_CAP].decode("utf-8", "ignore")
        truncated = True
    result: dict[str, Any] = {
        "url": p.url,
        "final_url": response.url,
        "status": response.status_code,
        "content_type": content_type,
        "format": "markdown" if kind == "html" else kind,
        "text": text,
        "truncated": truncated,
        "text_bytes": text_bytes,
        "redirects": list(response.redirects),
    }
    note = empty_note(kind, text)
    if note:
        result.update(empty=True, note=note)
    return result


def render(result: dict[str, Any]) -> str:
    if result.get("empty"):
        return f"[{result['note']}]"
    text = str(result["text"])
    if result["truncated"]:
        text += f"\n[truncated: {result['text_bytes']} bytes of text, the first {TEXT_CAP} shown]"
    return text


WEB_FETCH = ToolSpec(
    name="web_fetch",
    category="web",
    policy_class="network",
    description=(
        "Fetch a public HTTP(S) URL and return the body as markdown-light text; JSON bodies come back "
        "verbatim. A network guard refuses private and local addresses and pins the connection to the "
        "checked address. Limits: 1 MiB body, 5 redirects, 3 s connect, 15 s receive; text over 100000 "
        "bytes is cut (truncated: true). Invalid UTF-8 becomes U+FFFD. A page with no readable text says so "
        "(empty: true and a note)."
    ),
    params=WebFetchParams,
    handler=web_fetch,
    render=render,
    hints=Hints(read_only=True, idempotent=True, open_world=True),
    when_to_use=(
        "Read one public page or JSON endpoint, e.g. a web_search result. Keep the exact URL beside what "
        "you take from it. For private hosts or custom requests use a shell command instead."
    ),
    examples=(
        Example({"url": "https://docs.python.org/3/whatsnew/3.13.html"}, "a page as readable text"),
        Example({"url": "https://api.github.com/repos/python/cpython"}, "a JSON API, returned verbatim"),
    ),
    failure_modes=(
        FailureMode(
            "blocked_url",
            "empty_url, url_has_whitespace, not http(s), user:pass@, over 2048 bytes, a local-only name, or "
            "an address that resolved to a private range (resolved to <ip>); a name that does not resolve "
            "is dns_failure",
        ),
        FailureMode("too_large", "response body exceeded 1048576 bytes"),
        FailureMode("redirect_limit", "exceeded 5 redirects"),
        FailureMode("network", "HTTP N for a final status outside 2xx, a dropped exchange or a TLS failure"),
        FailureMode(
            "dns_failure", "the host name did not resolve (offline, or no such name); exit 1, retry later"
        ),
        FailureMode("connect_failed", "nothing accepted the connection; exit 1, retry later"),
        FailureMode("timeout", "no connection, or no reply, within the time limit"),
        FailureMode("unsupported_content", "the body is binary (image, PDF, archive ...), not text"),
    ),
)
