"""The search engine, shared by the file-search and coding families: walk, ignore rules, matching.

- `walk`: the directory walk with hidden-file, `.gitignore`, `.ignore` and Perforce rules.
- `gitignore`, `p4ignore`: the ignore-file matchers.
- `match`, `regexsource`: literal and regex matching over file bytes, with binary detection.
- `globpat`: glob patterns compiled for path matching.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .match import LineHit, Matcher, MatchTimeout, is_binary
    from .walk import WalkOptions, WalkStats, walk

_EXPORTS = {
    "LineHit": "match",
    "Matcher": "match",
    "MatchTimeout": "match",
    "is_binary": "match",
    "WalkOptions": "walk",
    "WalkStats": "walk",
    "walk": "walk",
}

__all__ = ["LineHit", "MatchTimeout", "Matcher", "WalkOptions", "WalkStats", "is_binary", "walk"]


def __getattr__(name: str) -> Any:  # PEP 562: submodules load on first use
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
