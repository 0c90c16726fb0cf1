"""What the command modules share: the global options, the CLI's tool context, JSON output, error handling."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from ..core.errors import ToolError
from .globalopts import GlobalOptions
from .toolcall import report_error

F = TypeVar("F", bound=Callable[..., Any])

GLOBAL = GlobalOptions()


def handles_errors(fn: F) -> F:
    """Turn a ToolError into the error envelope and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError as e:
            raise typer.Exit(report_error(e)) from None

    return wrapper  # type: ignore[return-value]


def context() -> Any:
    from ..core.context import ToolContext

    return ToolContext.for_cli(home=GLOBAL.home, cwd=GLOBAL.cwd, session=GLOBAL.session, trust=GLOBAL.trust)  # type: ignore[arg-type]


def emit_json(value: Any) -> None:
    pretty = sys.stdout.isatty()
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2 if pretty else None))


def emit_result(result: dict[str, Any], as_json: bool) -> None:
    """A tool's result for a person: its `message`, or (with --json) the whole object."""
    if as_json:
        emit_json(result)
    else:
        typer.echo(result["message"])


def invoke_tool(name: str, args: dict[str, Any]) -> Any:
    """Call a tool through the registry with the CLI's context; None-valued arguments are left out."""
    from ..core.registry import default_registry

    ctx = context()
    try:
        return default_registry().invoke(name, {k: v for k, v in args.items() if v is not None}, ctx)
    finally:
        ctx.close()
