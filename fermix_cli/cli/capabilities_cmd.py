"""`fermix capabilities [--kind builtin|skill|mcp] [--json]`: every capability this caller may run, as records.

A capability record (reference 1) is a tool as the registry knows it: name, kind, description, its
parameters' JSON schema, policy class, owner_only, hidden_from_agent, and its metadata (category, when to
use it, examples, failure modes, hints). Built-ins and skills are listed without starting anything; MCP
servers' tools are known only from the servers, so listing them (no `--kind`, or `--kind mcp`) starts the
enabled servers, as `fermix mcp tools` does.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .common import context, emit_json, handles_errors

if TYPE_CHECKING:
    from ..core.registry import ToolSpec


class Kind(StrEnum):
    builtin = "builtin"
    skill = "skill"
    mcp = "mcp"


def capability_record(spec: ToolSpec) -> dict[str, Any]:
    """`spec` as the reference's capability record."""
    hints = spec.hints
    return {
        "name": spec.name,
        "kind": spec.kind,
        "description": spec.description,
        "parameters": spec.input_schema(),
        "policy_class": spec.policy_class,
        "owner_only": spec.owner_only,
        "hidden_from_agent": spec.hidden_from_agent,
        "metadata": {
            "category": spec.category,
            "when_to_use": spec.when_to_use,
            "examples": [{"args": dict(e.args), "note": e.note} for e in spec.examples],
            "failure_modes": [{"tag": f.tag, "description": f.description} for f in spec.failure_modes],
            "hints": {
                "read_only": hints.read_only,
                "destructive": hints.destructive,
                "idempotent": hints.idempotent,
                "open_world": hints.open_world,
            },
        },
    }


@handles_errors
def capabilities_cmd(
    kind: Annotated[
        Kind | None,
        typer.Option("--kind", help="Only this kind: builtin, skill or mcp (mcp starts the servers)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output: one capability record each.")] = False,
) -> None:
    """The capabilities (tools) this caller may run: built-ins, skills and MCP servers' tools.

    Listing MCP tools (no --kind, or --kind mcp) starts the enabled MCP servers; --kind builtin or
    --kind skill starts nothing. A server that cannot start is named on stderr (exit 1); the rest are listed.
    """
    from ..core import policy
    from ..core.registry import default_registry
    from ..core.toolsets import FilteredToolset, RegistryToolset

    ctx = context()
    try:
        registry = default_registry()
        if kind is Kind.builtin:  # the registry's own: no other toolset is imported
            source = FilteredToolset(RegistryToolset(registry), policy.can_see)
            specs = source.tools(ctx)
        else:
            source = FilteredToolset(registry.toolset(), policy.can_see)
            specs = source.tools_at_hand(ctx) if kind is Kind.skill else source.tools(ctx)
        failed = source.failures()
        records = [capability_record(s) for s in specs if kind is None or s.kind == kind.value]
    finally:
        ctx.close()
    if as_json:
        emit_json(records)
    else:
        width = max((len(r["name"]) for r in records), default=4)
        for r in records:
            first = str(r["description"]).split("\n")[0].split(". ")[0].rstrip(".")
            typer.echo(f"{r['name']:<{width}}  {r['kind']:<7} {r['policy_class']:<12} {first}")
    for name, why in sorted(failed.items()):
        typer.echo(f"MCP server {name} skipped: {why}", err=True)
    if failed:
        raise typer.Exit(1)
