"""The web family's config: `[fermix_core.tools.web_search]` and `[fermix_core.tools.web]`."""

from __future__ import annotations

from typing import Annotated

from ...core.config import Endpoint, Secret, Section
from ...core.params import Field


class WebSearchConfig(Section):
    """`[fermix_core.tools.web_search]`: the web_search backend, its keys, and the endpoints (for tests/proxies).

    `backend` is kept as written; an unknown name runs DuckDuckGo with a warning (tools/web/backends.py).
    Keys may instead come from environment variables (BRAVE_API_KEY, EXA_API_KEY, ...); the config wins.
    """

    backend: Annotated[str, Field(min_length=1, max_length=64)] = "duckduckgo"
    brave_api_key: Secret | None = None
    exa_api_key: Secret | None = None
    firecrawl_api_key: Secret | None = None
    parallel_api_key: Secret | None = None
    perplexity_api_key: Secret | None = None
    tavily_api_key: Secret | None = None
    duckduckgo_url: Endpoint = "https://html.duckduckgo.com/html/"
    brave_url: Endpoint = "https://api.search.brave.com/res/v1/web/search"
    brave_place_url: Endpoint = "https://api.search.brave.com/res/v1/local/place_search"
    exa_url: Endpoint = "https://api.exa.ai/search"
    firecrawl_url: Endpoint = "https://api.firecrawl.dev/v1/search"
    parallel_url: Endpoint = "https://api.parallel.ai/v1/search"
    perplexity_url: Endpoint = "https://api.perplexity.ai/search"
    tavily_url: Endpoint = "https://api.tavily.com/search"


class WebConfig(Section):
    """`[fermix_core.tools.web]`: the coding `web` tool. Its Exa key is environment-only (EXA_API_KEY)."""

    exa_url: Endpoint = "https://api.exa.ai/search"


CONFIG_SECTIONS = {"fermix_core.tools.web_search": WebSearchConfig, "fermix_core.tools.web": WebConfig}
