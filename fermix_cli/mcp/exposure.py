"""Which registry tools `fermix mcp serve` exposes, and how a spec maps to an MCP tool listing.

Pure data: no `mcp` import here, so the rules are testable (and documented) without the SDK.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError

if TYPE_CHECKING:
    from ..core.registry import Registry, ToolSpec

# read_write tools in these categories write files; together with exec and gui_control tools they are
# off over MCP unless `--allow` names them (a model on the other end of a pipe is not the owner typing).
FILE_WRITING_CATEGORIES = frozenset({"filesystem", "coding", "git", "skills"})
OFF_BY_DEFAULT_CLASSES = frozenset({"exec", "gui_control"})


def off_by_default(spec: ToolSpec) -> bool:
    """Shell-like and file-writing tools: served only when `--allow` names them."""
    if spec.policy_class in OFF_BY_DEFAULT_CLASSES:
        return True
    return spec.policy_class == "read_write" and (
        spec.category in FILE_WRITING_CATEGORIES or spec.hints.destructive
    )


def served_names(registry: Registry, allow: Iterable[str]) -> frozenset[str]:
    """Built-in tools that may be served: all but the off-by-default ones, plus those in `allow`.

    An `allow` entry that names no registered tool is a usage error.
    """
    allow = set(allow)
    known = {s.name for s in registry.all()}
    unknown = sorted(allow - known)
    if unknown:
        raise ToolError(
            "usage",
            f"--allow names unknown tool(s): {', '.join(unknown)}. Run: fermix tool list",
            {"tools": unknown},
        )
    return frozenset(
        s.name
        for s in registry.all()
        if s.kind == "builtin" and not s.hidden_from_agent and (s.name in allow or not off_by_default(s))
    )


def tool_annotations(spec: ToolSpec) -> dict[str, Any]:
    """MCP tool annotations from the spec's hints (names as the MCP schema spells them)."""
    h = spec.hints
    out: dict[str, Any] = {
        "title": spec.name.replace("_", " "),
        "readOnlyHint": h.read_only,
        "openWorldHint": h.open_world,
    }
    if not h.read_only:  # the other two hints mean something only for tools that change things
        out["destructiveHint"] = h.destructive
        out["idempotentHint"] = h.idempotent
    return out


def listing(spec: ToolSpec) -> dict[str, Any]:
    """One entry of tools/list: name, description, input schema, annotations and fermix metadata."""
    description = spec.description
    if spec.when_to_use:
        description += f"\n\nWhen to use: {spec.when_to_use}"
    return {
        "name": spec.name,
        "description": description,
        "inputSchema": spec.input_schema(),
        "annotations": tool_annotations(spec),
        "_meta": {"fermix/policy_class": spec.policy_class, "fermix/category": spec.category},
    }
