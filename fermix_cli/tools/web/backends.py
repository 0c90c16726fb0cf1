"""web_search's keyed backends: how each one is asked, and how its JSON becomes `{title, url, snippet}`.

| backend | request | results |
| --- | --- | --- |
| brave | GET `q`, `count`; header `X-Subscription-Token` | `web.results[].title/url/description` |
| exa | POST `{query, numResults, type, contents.text}`; header `x-api-key` | `results[].title/url/text` |
| firecrawl | POST `{query, limit}`; `Authorization: Bearer` | `data[].title/url/description` (v2: `data.web[]`) |
| parallel | POST `{objective, search_queries, mode, advanced_settings.max_results}`; header `x-api-key` | `results[].title/url/excerpts[]` |
| perplexity | POST `{query, max_results}`; `Authorization: Bearer` | `results[].title/url/snippet` |
| tavily | POST `{query, max_results, search_depth}`; `Authorization: Bearer` | `results[].title/url/content` |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from ...core.records import Record
from .providers import changed, clean_text, hit, object_list, request_json

if TYPE_CHECKING:
    from ...core.net.httpclient import GuardedClient

MAX_RESULTS = 10
Results = list[dict[str, str]]


class Backend(Record, frozen=True):
    """One keyed provider: its name, how to ask it, and how to read its answer."""

    name: str
    method: str
    headers: Callable[[str], dict[str, str]]
    body: Callable[[str], dict[str, Any]] | None
    params: Callable[[str], dict[str, Any]] | None
    parse: Callable[[Any], Results]

    def search(self, client: GuardedClient, endpoint: str, key: str, query: str) -> Results:
        data = request_json(
            client,
            self.name,
            self.method,
            endpoint,
            key=key,
            headers=self.headers(key),
            params=self.params(query) if self.params else None,
            body=self.body(query) if self.body else None,
        )
        return self.parse(data)[:MAX_RESULTS]


def _bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def _hits(items: list[Any], title: str, url: str, snippet: Callable[[dict[str, Any]], Any]) -> Results:
    out = []
    for item in items:
        found = hit(item.get(title), item.get(url), snippet(item))
        if found is not None:
            out.append(found)
    return out


def _parse_brave(data: Any) -> Results:
    if not isinstance(data, dict):
        raise changed("brave", "the response is not a JSON object")
    if "web" not in data:
        # Brave leaves out the `web` block when nothing matched; a reply without `query` is something else.
        if "query" in data:
            return []
        raise changed("brave", "no web block in the response")
    items = object_list(data, "web", "results", backend="brave")
    return _hits(items, "title", "url", lambda r: r.get("description"))


def _exa_text(item: dict[str, Any]) -> Any:
    highlights = item.get("highlights")
    if isinstance(highlights, list) and highlights:
        return " … ".join(h for h in highlights if isinstance(h, str))
    return item.get("text") or item.get("summary")


def _parse_exa(data: Any) -> Results:
    return _hits(object_list(data, "results", backend="exa"), "title", "url", _exa_text)


def _parse_firecrawl(data: Any) -> Results:
    if isinstance(data, dict) and data.get("success") is False:
        said = clean_text(data.get("error"), 200)
        raise ToolError(
            "provider_error",
            f"firecrawl reported a failure: {said or 'no reason given'}",
            {"backend": "firecrawl"},
        )
    if isinstance(data, dict) and isinstance(data.get("data"), dict):
        items = object_list(data, "data", "web", backend="firecrawl")  # the v2 shape
    else:
        items = object_list(data, "data", backend="firecrawl")
    return _hits(items, "title", "url", lambda r: r.get("description") or r.get("markdown"))


def _parallel_text(item: dict[str, Any]) -> Any:
    excerpts = item.get("excerpts")
    if isinstance(excerpts, list):
        return " … ".join(e for e in excerpts if isinstance(e, str))
    return None


def _parse_parallel(data: Any) -> Results:
    return _hits(object_list(data, "results", backend="parallel"), "title", "url", _parallel_text)


def _parse_perplexity(data: Any) -> Results:
    return _hits(
        object_list(data, "results", backend="perplexity"), "title", "url", lambda r: r.get("snippet")
    )


def _parse_tavily(data: Any) -> Results:
    return _hits(object_list(data, "results", backend="tavily"), "title", "url", lambda r: r.get("content"))


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "brave",
            "GET",
            lambda key: {"x-subscription-token": key},
            None,
            lambda q: {"q": q, "count": MAX_RESULTS},
            _parse_brave,
        ),
        Backend(
            "exa",
            "POST",
            lambda key: {"x-api-key": key},
            lambda q: {
                "query": q,
                "numResults": MAX_RESULTS,
                "type": "auto",
                "contents": {"text": {"maxCharacters": 1000}},
            },
            None,
            _parse_exa,
        ),
        Backend(
            "firecrawl", "POST", _bearer, lambda q: {"query": q, "limit": MAX_RESULTS}, None, _parse_firecrawl
        ),
        Backend(
            "parallel",
            "POST",
            lambda key: {"x-api-key": key},
            # Parallel wants short keyword queries (200 characters each) beside the full objective.
            lambda q: {
                "objective": q,
                "search_queries": [q[:200]],
                "mode": "basic",
                "advanced_settings": {"max_results": MAX_RESULTS},
            },
            None,
            _parse_parallel,
        ),
        Backend(
            "perplexity",
            "POST",
            _bearer,
            lambda q: {"query": q, "max_results": MAX_RESULTS},
            None,
            _parse_perplexity,
        ),
        Backend(
            "tavily",
            "POST",
            _bearer,
            lambda q: {"query": q, "max_results": MAX_RESULTS, "search_depth": "basic"},
            None,
            _parse_tavily,
        ),
    )
}
