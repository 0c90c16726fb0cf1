"""The search engine, shared by the file-search and coding families: ripgrep and ast-grep, located
and driven, plus the glob, pattern-repair, Perforce and completeness helpers around them.

- `engines`: where `rg` and `ast-grep` are (beside the interpreter, then PATH) and their versions.
- `ripgrep`: `rg --files` listings and `rg --json` searches over a sandboxed `Scope`, with a deadline.
- `report`: `complete` / `omitted` for every search result, and the `[incomplete: …]` notes.
- `globpat`: glob patterns compiled for path matching (glob_search).
- `regexsource`: grep's repairs of almost-regexes; `p4ignore`: Perforce ignore settings.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .report import Omission, completeness
    from .ripgrep import FileMatches, LineMatch, Scope, Search, list_files

_EXPORTS = {
    "FileMatches": "ripgrep",
    "LineMatch": "ripgrep",
    "Scope": "ripgrep",
    "Search": "ripgrep",
    "list_files": "ripgrep",
    "Omission": "report",
    "completeness": "report",
}

__all__ = ["FileMatches", "LineMatch", "Omission", "Scope", "Search", "completeness", "list_files"]


def __getattr__(name: str) -> Any:  # PEP 562: submodules load on first use
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
