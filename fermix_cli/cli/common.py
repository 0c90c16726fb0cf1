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


def edit_in_editor(text: str, suffix: str = ".md") -> str | None:
    """Open `text` in $VISUAL / $EDITOR (else `vi`) and return what was saved, or None when unchanged.

    An editor that cannot be started, or exits non-zero, is a ToolError naming the variable to set.
    """
    import os
    import shlex
    import subprocess
    import tempfile

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    fd, name = tempfile.mkstemp(prefix="fermix-", suffix=suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            code = subprocess.call([*shlex.split(editor), name])
        except (OSError, ValueError) as e:
            raise ToolError(
                "editor_failed",
                f"could not start the editor {editor!r} ({e}); set $EDITOR or pass --text",
                {},
            ) from e
        if code != 0:
            raise ToolError(
                "editor_failed",
                f"the editor {editor!r} exited with {code}; nothing was changed",
                {"exit_code": code},
            )
        with open(name, encoding="utf-8") as f:
            edited = f.read()
    finally:
        os.unlink(name)
    return None if edited == text else edited
