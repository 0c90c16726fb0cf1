"""The web family's tools."""

from __future__ import annotations

from ...core.registry import specs
from .fetch import WEB_FETCH
from .place import PLACE_SEARCH
from .websearch import WEB_SEARCH
from .webtool import WEB

TOOLS = specs(WEB, WEB_FETCH, PLACE_SEARCH, WEB_SEARCH)
