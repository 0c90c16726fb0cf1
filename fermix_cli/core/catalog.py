"""The families fermix is made of, found through a generated catalog instead of imports.

A family (a `tools/` module or package, or a domain package such as `jobs/` or `memory/`) declares its
parts where it lives: `TOOLS` (its ToolSpecs), `TOOLSET_ALIASES`, `TOOLSETS` (factories of the toolsets
it provides beyond its own tools, such as the MCP servers'), `CONFIG_SECTIONS`, `MIGRATIONS` and
`DUE_WORK`. `python -m fermix_cli.build docs` finds those declarations and writes them, as module
names, into `fermix_cli/catalog.py`. The kernel reads that catalog by name, the way a plugin host reads
entry points, and imports a family's module only when one of its parts is needed, so the kernel never
imports a family and a new family edits no file in `core/`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from typing import Any

from .records import Record, field

CATALOG_MODULE = "fermix_cli.catalog"


class Catalog(Record, frozen=True):
    """Where each family's declarations live, as module names (values are imported on first use)."""

    tool_modules: Mapping[str, str] = field(
        default_factory=dict
    )  # tool name -> the module whose TOOLS declares it
    toolset_aliases: Mapping[str, Mapping[str, str]] = field(
        default_factory=dict
    )  # toolset -> {alias: tool name}
    toolset_modules: tuple[str, ...] = ()  # modules declaring TOOLSETS (toolset providers)
    config_modules: tuple[str, ...] = ()  # modules declaring CONFIG_SECTIONS
    # module -> the dotted tables its CONFIG_SECTIONS declares (so a loader imports only those it needs)
    config_tables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    migration_modules: tuple[str, ...] = ()  # modules declaring MIGRATIONS
    migration_names: tuple[str, ...] = ()  # every migration's name, in run order (state.db's fast check)
    due_work_modules: tuple[str, ...] = ()  # modules declaring DUE_WORK

    def declared(self, attribute: str, modules: tuple[str, ...]) -> list[tuple[str, Any]]:
        """(module, value of `attribute`) for each module, imported now, in catalog order."""
        return [(name, getattr(importlib.import_module(name), attribute)) for name in modules]


def load_catalog(module: str = CATALOG_MODULE) -> Catalog:
    """The catalog a generated module holds (its upper-case names are the Catalog's fields)."""
    mod = importlib.import_module(module)
    return Catalog(
        tool_modules=mod.TOOL_MODULES,
        toolset_aliases=mod.TOOLSET_ALIASES,
        toolset_modules=tuple(getattr(mod, "TOOLSET_MODULES", ())),
        config_modules=tuple(mod.CONFIG_MODULES),
        config_tables={m: tuple(t) for m, t in getattr(mod, "CONFIG_TABLES", {}).items()},
        migration_modules=tuple(mod.MIGRATION_MODULES),
        migration_names=tuple(getattr(mod, "MIGRATION_NAMES", ())),
        due_work_modules=tuple(mod.DUE_WORK_MODULES),
    )


@cache
def default_catalog() -> Catalog:
    """fermix's own catalog, loaded once per process."""
    return load_catalog()
