"""web_search: DuckDuckGo by default, or a keyed backend that degrades once to DuckDuckGo when it breaks."""

from __future__ import annotations

import json
from typing import Annotated, Any

from ...core.context import ToolContext
from ...core.errors import NETWORK_FAILURE_CODES, ToolError
from ...core.logs import logger
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec
from ...core.traces import append_trace
from . import ddg
from .backends import BACKENDS
from .providers import missing_key, resolve_key

log = logger("fermix.web")

MAX_QUERY = 1024
# Failures that fall back to DuckDuckGo: the provider's, and any failure to reach it (offline,
# DNS, refused connection, timeout); never a refusal, an auth failure or a query error.
DEGRADING = ("provider_error", "rate_limited", "parser_changed", *sorted(NETWORK_FAILURE_CODES))
CLIENT_LIMITS: dict[str, Any] = {
    "connect_timeout": 3.0,
    "read_timeout": 15.0,
    "total_timeout": 30.0,
    "max_body": 1_048_576,
}


class WebSearchParams(Params):
    query: Annotated[
        str,
        Field(
            description="Search query (max 1024 characters)",
            json_schema_extra={"maxLength": MAX_QUERY},
        ),
    ]


def degrades(error: ToolError) -> bool:
    """Whether a keyed backend's failure means "unavailable" (retry once on DuckDuckGo)."""
    return error.code.startswith(DEGRADING)


def selected_backend(configured: str) -> tuple[str, str | None]:
    """The backend to run for a configured name, and a warning when the name is unknown."""
    name = configured.strip().lower()
    if name == "duckduckgo" or name in BACKENDS:
        return name, None
    return "duckduckgo", (
        f"unknown web_search backend {configured!r} in [fermix_core.tools.web_search] backend; "
        "using duckduckgo (known: brave, duckduckgo, exa, firecrawl, parallel, perplexity, tavily)"
    )


def web_search(p: WebSearchParams, ctx: ToolContext) -> dict[str, Any]:
    query = p.query
    if len(query) > MAX_QUERY:
        raise ToolError("query_too_long", f"max {MAX_QUERY} characters", {"length": len(query)})
    if not query.strip():
        raise ToolError("invalid_query", "query is blank; say what to search for", {"field": "query"})
    cfg = ctx.config.fermix_core.tools.web_search
    backend, warning = selected_backend(cfg.backend)
    metadata: dict[str, Any] = {"backend": backend}
    if warning:
        log.warning("%s", warning)
        metadata["warning"] = warning
    with ctx.http_client(**CLIENT_LIMITS) as client:
        if backend == "duckduckgo":
            results = ddg.search(client, cfg.duckduckgo_url, query)
        else:
            key = resolve_key(cfg, backend)
            if key is None:
                raise missing_key(backend, tool="web_search")
            try:
                results = BACKENDS[backend].search(client, getattr(cfg, f"{backend}_url"), key, query)
            except ToolError as primary:
                if not degrades(primary):
                    raise
                results = _fallback(ctx, client, cfg.duckduckgo_url, query, backend, primary)
                reason = primary.model_text()
                metadata = {
                    "backend": "duckduckgo",
                    "degraded": True,
                    "primary_backend": backend,
                    "fallback_reason": reason,
                    "warning": f"{backend} is unavailable ({reason}); these results come from duckduckgo",
                }
    metadata["result_count"] = len(results)
    append_trace(ctx.paths, "web_search", {"query_chars": len(query), **metadata})
    return {"query": query, "results": results, "metadata": metadata}


def _fallback(
    ctx: ToolContext, client: Any, endpoint: str, query: str, backend: str, primary: ToolError
) -> list[dict[str, str]]:
    """DuckDuckGo once after `primary` failed; if it fails too, the original error (with what happened)."""
    try:
        results = ddg.search(client, endpoint, query)
    except ToolError as second:
        append_trace(
            ctx.paths,
            "web_search",
            {
                "backend": backend,
                "error": primary.code,
                "fallback": "duckduckgo_failed",
                "fallback_error": second.code,
            },
        )
        details = {**primary.details, "fallback": "duckduckgo_failed", "fallback_error": second.to_dict()}
        raise ToolError(primary.code, primary.message, details, exit_class=primary.exit_class) from None
    log.warning("web_search: %s failed (%s); degraded to duckduckgo", backend, primary.model_text())
    return results


def render(result: dict[str, Any]) -> str:
    """The model sees the JSON array of `{title, url, snippet}`."""
    return json.dumps(result["results"], ensure_ascii=False, separators=(",", ":"))


WEB_SEARCH = ToolSpec(
    name="web_search",
    category="web",
    policy_class="network",
    description=(
        "Search the public web and get up to 10 results as {title, url, snippet}. The default backend is "
        "keyless DuckDuckGo; Brave, Exa, Firecrawl, Parallel, Perplexity or Tavily can be configured in "
        "[fermix_core.tools.web_search] with their API keys. A configured backend that is unavailable "
        "(provider error or HTTP 402, rate limit, network failure, changed response format) degrades once to "
        "DuckDuckGo and says so in metadata (degraded, primary_backend, fallback_reason); a missing or "
        "rejected key and a refused query do not degrade. Keep the exact returned URLs beside the claims "
        "they support; never invent or rebuild a link."
    ),
    params=WebSearchParams,
    handler=web_search,
    render=render,
    hints=Hints(read_only=True, open_world=True),
    when_to_use="Find pages about a topic. Read a result with web_fetch; look up businesses with place_search.",
    examples=(
        Example({"query": "python 3.13 release notes"}, "up to 10 results from the configured backend"),
        Example({"query": '"exact phrase" site:docs.python.org'}, "search operators pass through as typed"),
    ),
    failure_modes=(
        FailureMode("query_too_long", "the query is over 1024 characters"),
        FailureMode("invalid_query", "the query is blank, or the provider refused it (HTTP 400/422)"),
        FailureMode("auth_failed", "the backend's API key is missing or rejected; never degrades"),
        FailureMode("rate_limited", "the provider (or DuckDuckGo) is throttling requests; retry later"),
        FailureMode("provider_error", "the provider failed, e.g. out of credits (HTTP 402) or HTTP 5xx"),
        FailureMode("parser_changed", "the provider's response format (or DuckDuckGo's page) changed"),
        FailureMode(
            "network",
            "the provider answered HTTP N or dropped the exchange (all four network codes fall back to DuckDuckGo)",
        ),
        FailureMode(
            "dns_failure", "the host name did not resolve (offline, or no such name); exit 1, retry later"
        ),
        FailureMode("connect_failed", "nothing accepted the connection; exit 1, retry later"),
        FailureMode("timeout", "no connection, or no reply, within the time limit"),
        FailureMode("blocked_url", "a configured endpoint points at an address the network guard refuses"),
    ),
)
