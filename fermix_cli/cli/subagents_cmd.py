"""`fermix subagents identities`: the subagent identities the `subagents` tool can give its workers."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import context, emit_json, handles_errors

app = typer.Typer(
    help="Subagents: the identities (agent files) their workers can take.", no_args_is_help=True
)


@app.callback()
def _group() -> None:
    """Subagents: the identities (agent files) their workers can take."""


@app.command("identities")
@handles_errors
def identities_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a file did not load.")] = False,
) -> None:
    """The identities found in <home>/agents and [fermix_core.subagents] roots (name, description,
    tools, model, file), and the files that did not load, with file and line (on stderr). A file that
    does not load is skipped, never fatal: exit 0, or 1 with --strict."""
    from ..agent.subagents.identities import HOW_TO_ADD, discover_in, model_route, roots_of

    ctx = context()
    try:
        roots = roots_of(ctx.paths, ctx.config)
        found = discover_in(roots, ctx.config, ctx.sandbox)
        notes = {name: model_route(i, ctx.config).note for name, i in found.identities.items()}
    finally:
        ctx.close()
    if as_json:
        emit_json(
            {
                "identities": [
                    {**i.summary(), "model_note": notes[i.name]} for i in found.identities.values()
                ],
                "errors": found.errors,
                "roots": [{"path": r.path, "origin": r.origin} for r in roots],
            }
        )
    else:
        for i in found.identities.values():
            tools = "the workers' tools" if i.tools is None else (", ".join(i.tools) or "none")
            if i.unmapped_tools:
                tools += f" (not mapped: {', '.join(i.unmapped_tools)})"
            typer.echo(f"{i.name}: {' '.join(i.description.split())}")
            typer.echo(f"  tools: {tools}")
            note = f" ({notes[i.name]})" if notes[i.name] else ""
            typer.echo(f"  model: {i.model or 'inherit'}{note}")
            typer.echo(f"  file:  {i.path}")
        if not found.identities:
            typer.echo(f"No subagent identities installed. {HOW_TO_ADD}")
        for e in found.errors:
            typer.echo(f"not loaded: {e['message']}", err=True)
    if strict and found.errors:
        raise typer.Exit(1)
