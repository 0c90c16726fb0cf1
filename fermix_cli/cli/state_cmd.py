"""`fermix state status`: where state.db is and which schema it has."""

from __future__ import annotations

from typing import Annotated

import typer

from ..core.state import known_count
from .common import context, emit_json, handles_errors

app = typer.Typer(help="The SQLite state file.", no_args_is_help=True)


@app.command("status")
@handles_errors
def status_cmd(as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False) -> None:
    """Open (and migrate) state.db, then report its path, schema version and size."""
    ctx = context()
    db = ctx.state
    tables = [r[0] for r in db.query("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    info = {
        "path": str(db.path),
        "schema_version": db.schema_version,
        "latest_version": known_count(),
        "bytes": db.path.stat().st_size,
        "tables": tables,
    }
    ctx.close()
    if as_json:
        emit_json(info)
    else:
        typer.echo(
            f"{info['path']}: schema {info['schema_version']}/{info['latest_version']}, {info['bytes']} bytes"
        )
