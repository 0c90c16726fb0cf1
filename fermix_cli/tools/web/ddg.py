"""DuckDuckGo's keyless HTML endpoint: one form POST, and the page read as result rows.

Outcomes (reference section 6.1), in the order they are decided:

| response | result |
| --- | --- |
| HTTP 202 or 429 | `rate_limited` |
| any other status outside 2xx | `network: HTTP N` |
| result rows | rows from the `result__a` title links and `result__snippet` texts; `/l/?uddg=` redirect links unwrapped; ad rows and non-http(s) URLs dropped |
| no rows, and a challenge page (`checking if the site connection is secure`, `captcha`, `anomaly`) | `rate_limited` |
| no rows, and the "no results" marker | an empty list (success) |
| no rows otherwise | `parser_changed` |

The challenge words are looked for only when a page has no rows, so a result about "anomaly detection"
is still a result.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from ...core.errors import ToolError
from ...core.records import Record, field
from .providers import hit

if TYPE_CHECKING:
    from ...core.net.httpclient import GuardedClient

CHALLENGE_MARKERS = ("checking if the site connection is secure", "captcha", "anomaly")
NO_RESULTS_MARKERS = ('class="no-results"', "no results.", "no  results.")
MAX_RESULTS = 10


class Row(Record):
    href: str = ""
    title: str = ""
    snippet: str = ""
    ad: bool = False


class Page(Record):
    rows: list[Row] = field(default_factory=list)


def search(client: GuardedClient, endpoint: str, query: str) -> list[dict[str, str]]:
    """Ask DuckDuckGo's HTML endpoint; at most 10 `{title, url, snippet}` (see the module table)."""
    try:
        response = client.post(endpoint, data={"q": query}, headers={"accept": "text/html"})
    except ToolError as exc:
        if exc.code == "too_large":
            raise ToolError("network", f"duckduckgo: {exc.message}", exc.details) from None
        raise
    status = response.status_code
    if status in (202, 429):
        raise ToolError(
            "rate_limited",
            f"DuckDuckGo is rate limiting this address (HTTP {status}); retry in a minute",
            {"backend": "duckduckgo", "status": status},
        )
    if not 200 <= status < 300:
        raise ToolError("network", f"HTTP {status}", {"backend": "duckduckgo", "status": status})
    return results_from_page(response.text)


def results_from_page(html: str) -> list[dict[str, str]]:
    """The results of one DuckDuckGo HTML page, or the tagged failure the page stands for."""
    page = parse_page(html)
    results: list[dict[str, str]] = []
    for row in page.rows:
        if row.ad:
            continue
        url = unwrap(row.href)
        item = hit(row.title, url, row.snippet) if url else None
        if item is not None:
            results.append(item)
    if page.rows:
        return results[:MAX_RESULTS]
    lowered = html.lower()
    if any(marker in lowered for marker in CHALLENGE_MARKERS):
        raise ToolError(
            "rate_limited",
            "DuckDuckGo answered with a bot challenge instead of results; retry in a minute",
            {"backend": "duckduckgo", "reason": "challenge"},
        )
    if any(marker in lowered for marker in NO_RESULTS_MARKERS):
        return []
    raise ToolError(
        "parser_changed",
        "DuckDuckGo result selectors changed",
        {"backend": "duckduckgo"},
    )


def unwrap(href: str) -> str | None:
    """The destination of a result link: `//duckduckgo.com/l/?uddg=<url>` unwrapped; ad links give None."""
    if href.startswith("//"):
        href = "https:" + href
    try:
        parts = urlsplit(href)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if host == "duckduckgo.com" or host.endswith(".duckduckgo.com"):
        if parts.path.startswith("/l/"):
            target = parse_qs(parts.query).get("uddg", [""])[0]
            return target or None
        return None  # /y.js ad redirects and links back into DuckDuckGo itself
    return href


def parse_page(html: str) -> Page:
    parser = _ResultParser()
    parser.feed(html)
    parser.close()
    return parser.page


class _ResultParser(HTMLParser):
    """Collects result rows: a `div.result` (web or ad) with its `result__a` link and `result__snippet`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._row: Row | None = None
        self._div_depth = 0  # open <div>s inside the current row, the row's own included
        self._capture: str | None = None  # "title" or "snippet"
        self._capture_tag = ""
        self._capture_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        if tag == "div" and self._row is None and "result" in classes and _is_row(classes):
            self._row = Row(ad="result--ad" in classes)
            self._div_depth = 1
            return
        if self._row is None:
            return
        if tag == "div":
            self._div_depth += 1
        if "badge--ad" in classes:
            self._row.ad = True
        if self._capture is not None:
            if tag == self._capture_tag:
                self._capture_depth += 1
            return
        if tag == "a" and "result__a" in classes:
            self._row.href = dict(attrs).get("href") or ""
            self._start_capture("title", tag)
        elif "result__snippet" in classes:
            self._start_capture("snippet", tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "div":  # a self-closed <div/> would otherwise unbalance the row's depth
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if self._row is None:
            return
        if self._capture is not None and tag == self._capture_tag:
            self._capture_depth -= 1
            if self._capture_depth == 0:
                self._capture = None
        if tag == "div":
            self._div_depth -= 1
            if self._div_depth == 0:
                self.page.rows.append(self._row)
                self._row = None
                self._capture = None

    def handle_data(self, data: str) -> None:
        if self._row is None or self._capture is None:
            return
        if self._capture == "title":
            self._row.title += data
        else:
            self._row.snippet += data

    def close(self) -> None:
        super().close()
        if self._row is not None:  # a page cut short still yields the row it was in
            self.page.rows.append(self._row)
            self._row = None

    def _start_capture(self, kind: str, tag: str) -> None:
        self._capture = kind
        self._capture_tag = tag
        self._capture_depth = 1


def _is_row(classes: set[str]) -> bool:
    return bool(classes & {"results_links", "results_links_deep", "web-result", "result--ad"})
