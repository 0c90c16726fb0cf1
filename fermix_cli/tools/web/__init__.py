"""The web family: web_fetch, web_search, place_search (fermix toolset) and web (coding toolset).

Every request goes through the network guard (`ToolContext.http_client`); httpx is imported only when a
tool actually sends one, and trafilatura only when a page is HTML.
"""

from __future__ import annotations

from ...core.registry import specs
from .fetch import WEB_FETCH
from .place import PLACE_SEARCH
from .websearch import WEB_SEARCH
from .webtool import WEB

TOOLS = specs(WEB, WEB_FETCH, PLACE_SEARCH, WEB_SEARCH)
