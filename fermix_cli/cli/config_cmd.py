"""`fermix config path|get|set|unset`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ..core.config import get_key, load_config, parse_cli_value, set_key, unset_key
from ..core.grants import update_config
from .common import context, handles_errors

app = typer.Typer(help="Read and change config.toml (validated before it is written).", no_args_is_help=True)


def _show(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@app.command("path")
def path_cmd() -> None:
    """Print where config.toml lives."""
    typer.echo(str(context().paths.config_file))


@app.command("get")
@handles_errors
def get_cmd(
    key: Annotated[
        str | None, typer.Argument(help="Dotted key, e.g. sandbox.mode; omit for everything.")
    ] = None,
) -> None:
    """Print a value of the effective config (defaults included)."""
    effective = load_config(context().paths.config_file).model_dump(mode="json")
    typer.echo(_show(effective if key is None else get_key(effective, key)))


@app.command("set")
@handles_errors
def set_cmd(
    key: Annotated[str, typer.Argument(help="Dotted key, e.g. sandbox.mode")],
    value: Annotated[str, typer.Argument(help='A TOML value (true, 5, ["a"]) or plain text')],
) -> None:
    """Set a key; the whole file is validated before it is written."""
    parsed = parse_cli_value(value)
    _refuse_self_approval(key)
    update_config(context().paths, lambda doc: set_key(doc, key, parsed))
    typer.echo(f"{key} = {_show(parsed)}")


# Keys only the owner may set: a model must never approve itself (a fermix tool's shell running
# `fermix config set`). Setting a parent table could carry them too, so those are guarded as well.
OWNER_ONLY_KEYS = ("fermix_core.harness.approved",)


def _refuse_self_approval(key: str) -> None:
    from ..core.errors import ToolError
    from ..core.spawned import spawned_by_fermix

    guarded = [k for k in OWNER_ONLY_KEYS if k == key or k.startswith(key + ".")]
    if guarded and spawned_by_fermix():
        raise ToolError(
            "not_attended",
            f"fermix config set {key} refuses to run from a process fermix started (a tool's shell, a coding "
            "run): fermix can never grant this approval itself; the owner sets it from their own terminal",
            {"key": key},
        )


@app.command("unset")
@handles_errors
def unset_cmd(key: Annotated[str, typer.Argument(help="Dotted key to remove from config.toml")]) -> None:
    """Remove a key, so its default applies again."""
    update_config(context().paths, lambda doc: unset_key(doc, key))
    typer.echo(f"unset {key}")
