"""What keyed search providers have in common: keys, HTTP outcomes as stable tags, JSON bodies, snippets.

Status codes map to tags the same way for every provider (and for place_search's Brave call):

| status | tag |
| --- | --- |
| 401, 403; Brave's 422 `SUBSCRIPTION_TOKEN_INVALID` | `auth_failed` |
| 429 | `rate_limited` |
| 400, other 422 | `invalid_query` (our request is fixed, so the query is what the provider refused) |
| 402, Tavily's 432/433 (credits or plan limit), 5xx, anything else | `provider_error` |
| 2xx whose body is not the documented JSON | `parser_changed` |
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError

if TYPE_CHECKING:
    from ...core.net.httpclient import GuardedClient
    from .config import WebSearchConfig

KEY_ENV: dict[str, tuple[str, ...]] = {
    "brave": ("BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY"),
    "exa": ("EXA_API_KEY",),
    "firecrawl": ("FIRECRAWL_API_KEY",),
    "parallel": ("PARALLEL_API_KEY",),
    "perplexity": ("PERPLEXITY_API_KEY",),
    "tavily": ("TAVILY_API_KEY",),
}
SECTION = "[fermix_core.tools.web_search]"
SNIPPET_CHARS = 600
_TAGS = re.compile(r"<[^>]{0,2000}>")


def resolve_key(cfg: WebSearchConfig, backend: str) -> str | None:
    """The API key for `backend`: `<backend>_api_key` in config, else its environment variable(s)."""
    configured = getattr(cfg, f"{backend}_api_key", None)
    if isinstance(configured, str) and configured.strip():
        return configured.strip()
    for name in KEY_ENV.get(backend, ()):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def key_hint(backend: str) -> str:
    """Where a key for `backend` may be set, for messages."""
    names = " or ".join(KEY_ENV[backend])
    return f"set {backend}_api_key in {SECTION} or the environment variable {names}"


def missing_key(backend: str, *, tool: str) -> ToolError:
    return ToolError(
        "auth_failed",
        f"{tool} needs a {backend} API key and none is configured; {key_hint(backend)}",
        {"backend": backend, "reason": "missing_key"},
    )


def request_json(
    client: GuardedClient,
    backend: str,
    method: str,
    url: str,
    *,
    key: str,
    headers: Mapping[str, str],
    params: Mapping[str, Any] | None = None,
    body: Any = None,
    too_large_code: str = "provider_error",
    auth_hint: str | None = None,
) -> Any:
    """Send one request to a provider and return its JSON body, or raise the tagged failure.

    `auth_hint` replaces the default advice (config key or environment variable) on `auth_failed`.
    """
    try:
        response = client.request(
            method, url, headers={"accept": "application/json", **headers}, params=params, json=body
        )
    except ToolError as exc:
        if exc.code == "too_large":
            raise ToolError(
                too_large_code,
                f"{backend} sent a response larger than {exc.details.get('limit')} bytes",
                {"backend": backend, "limit": exc.details.get("limit")},
            ) from None
        raise
    failure = status_failure(backend, response.status_code, response.content, key=key, auth_hint=auth_hint)
    if failure is not None:
        raise failure
    try:
        return json.loads(response.content)
    except ValueError:
        raise changed(backend, "the response is not JSON") from None
    except RecursionError:  # arrays or objects nested deeper than the parser follows
        raise changed(backend, "the response is nested too deeply to be the documented JSON") from None


def status_failure(
    backend: str, status: int, body: bytes, *, key: str = "", auth_hint: str | None = None
) -> ToolError | None:
    """The tagged error for a non-2xx provider answer (see the module table), or None for 2xx."""
    if 200 <= status < 300:
        return None
    detail = provider_detail(body, key)
    said = f": {detail}" if detail else ""
    details: dict[str, Any] = {"backend": backend, "status": status}
    if status in (401, 403) or (status == 422 and b"SUBSCRIPTION_TOKEN_INVALID" in body):
        hint = auth_hint or key_hint(backend)
        return ToolError(
            "auth_failed", f"{backend} rejected the API key (HTTP {status}){said}; {hint}", details
        )
    if status == 429:
        return ToolError(
            "rate_limited", f"{backend} is rate limiting requests (HTTP 429){said}; retry later", details
        )
    if status in (400, 422):
        return ToolError("invalid_query", f"{backend} refused the query (HTTP {status}){said}", details)
    if status in (402, 432, 433):
        reason = "out of credits or over the plan's limit"
        return ToolError("provider_error", f"{backend} is {reason} (HTTP {status}){said}", details)
    return ToolError("provider_error", f"{backend} failed (HTTP {status}){said}", details)


def changed(backend: str, what: str) -> ToolError:
    return ToolError(
        "parser_changed",
        f"{backend} response format changed: {what}",
        {"backend": backend},
    )


MIN_SUBSTRING_KEY = 8  # shorter keys are redacted as whole tokens only


def provider_detail(body: bytes, key: str = "") -> str:
    """A short, plain-text reason from a provider's error body; never markup, never the key."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        text = body[:400].decode("utf-8", "replace")
        if "<" in text:
            return ""  # an HTML error page says nothing useful
    else:
        text = _find_message(data)
    text = " ".join(text.split())[:200]
    if len(key) >= MIN_SUBSTRING_KEY:
        text = text.replace(key, "***")
    elif key:
        # A key this short also occurs inside ordinary words: redact it only where it stands alone.
        text = re.sub(rf"(?<![\w-]){re.escape(key)}(?![\w-])", "***", text)
    return text


MESSAGE_KEYS = ("detail", "message", "error", "title", "code")


def _find_message(data: Any) -> str:
    """The first string under the usual message keys, depth first; a loop, so no nesting overflows it."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, str) and node:
            return node
        if isinstance(node, dict):
            stack.extend(node.get(name) for name in reversed(MESSAGE_KEYS))
    return ""


def clean_text(value: Any, limit: int = SNIPPET_CHARS) -> str:
    """Plain text for a title or snippet: tags stripped, whitespace folded, at most `limit` characters."""
    if not isinstance(value, str):
        return ""
    import html

    text = " ".join(html.unescape(_TAGS.sub("", value)).split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def hit(title: Any, url: Any, snippet: Any) -> dict[str, str] | None:
    """One `{title, url, snippet}` result, or None when the URL is not http(s)."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    return {"title": clean_text(title, 300) or url, "url": url, "snippet": clean_text(snippet)}


def object_list(data: Any, *path: str, backend: str) -> list[Any]:
    """`data[path...]` as a list of objects, or `parser_changed` naming the path."""
    node = data
    for name in path:
        if not isinstance(node, dict) or name not in node:
            raise changed(backend, f"no {'.'.join(path)} in the response")
        node = node[name]
    if not isinstance(node, list):
        raise changed(backend, f"{'.'.join(path)} is not a list")
    return [item for item in node if isinstance(item, dict)]
