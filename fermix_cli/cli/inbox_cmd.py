"""`fermix inbox [NAME]`: read the local inbox that deliveries to `{"platform": "inbox"}` land in.

`fermix jobs inbox NAME` is the same command under its older name.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .common import context, emit_json, handles_errors


@handles_errors
def inbox(
    name: Annotated[str, typer.Argument(help="The inbox (a delivery target's recipient).")] = "owner",
    last: Annotated[int, typer.Option("-n", "--last", min=0, help="Show the last N messages (0: all).")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Read the local inbox that deliveries to {"platform":"inbox","recipient":NAME} land in."""
    from ..channels.inbox import read_inbox
    from ..channels.targets import NAME

    if not NAME.fullmatch(name):
        raise typer.BadParameter("letters, digits, '_', '.' or '-'", param_hint="NAME")
    ctx = context()
    messages = read_inbox(ctx.paths, name, last)
    if as_json:
        emit_json({"inbox": name, "messages": messages})
        return
    if not messages:
        typer.echo(f"Inbox {name} is empty.")
        return
    for m in messages:
        head = [str(m.get("delivered_at") or "-")]
        head += [str(m[k]) for k in ("job_id", "run_id", "status") if m.get(k) is not None]
        typer.echo("--- " + "  ".join(head))
        typer.echo(str(m.get("text", "")).rstrip())
        if m.get("file"):
            typer.echo(f"[file: {m['file']}]")
