"""Caller paths for the coding tools: where relative paths may go, when absolute ones are allowed, and
how results name paths.

Relative paths resolve from the working directory and may not leave it. An absolute path outside
the working directory is allowed when `capabilities.tools.<tool>.absolute_paths` is true (the
default). Either way the sandbox then judges the canonical path (roots, blocked, protected).
Output paths use "/" and are relative to the working directory inside it, absolute outside.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import ToolError
from .pathcanon import is_inside

if TYPE_CHECKING:
    from .context import ToolContext


@dataclass(frozen=True)
class ToolPath:
    raw: str
    canonical: str  # what the sandbox allowed
    cwd: str  # the canonical working directory results are shown relative to


def absolute_paths_allowed(ctx: ToolContext, tool: str) -> bool:
    caps = ctx.config.capabilities.tools
    section = getattr(caps, tool, None)
    return True if section is None else bool(section.absolute_paths)


def resolve_tool_path(ctx: ToolContext, raw: str | None, *, tool: str) -> ToolPath:
    """Check and canonicalise a coding tool's `path` argument (default: the working directory)."""
    sandbox = ctx.sandbox
    cwd = sandbox.turn_cwd()
    given = "." if raw is None else raw
    anchored = sandbox.anchor(given)
    lexical = posixpath.normpath(anchored)
    if not (given.startswith("/") or given == "~" or given.startswith("~/")):
        if not is_inside(lexical, cwd):
            raise ToolError(
                "invalid_path",
                f"Relative path {given!r} leaves the working directory {cwd}; relative paths stay "
                "inside it. Pass an absolute path instead.",
                {"path": given, "cwd": cwd},
            )
    elif not is_inside(lexical, cwd) and not absolute_paths_allowed(ctx, tool):
        raise ToolError(
            "policy_denied",
            f"{tool} may not use absolute paths outside the working directory {cwd} "
            f"(capabilities.tools.{tool}.absolute_paths = false): {given}",
            {"path": given, "cwd": cwd, "key": f"capabilities.tools.{tool}.absolute_paths"},
        )
    canonical = sandbox.read_path(given, tool=tool)
    return ToolPath(given, canonical, cwd)


def display_path(path: str, cwd: str) -> str:
    """`path` as results show it: relative to `cwd` inside it ("." for cwd itself), else absolute."""
    if path == cwd:
        return "."
    if is_inside(path, cwd):
        return path[len(cwd) + 1 :] if cwd != "/" else path[1:]
    return path
