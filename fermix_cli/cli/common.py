"""What the command modules share: the global options, the CLI's tool context, JSON output, error handling."""

from __future__ import annotations

import functools
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
    return handles_errors_as("fermix")(fn)


def handles_errors_as(prog: str) -> Callable[[F], F]:
    """`handles_errors`, with the readable line on a terminal led by `prog` (`fermix sandbox: ...`)."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except ToolError as e:
                raise typer.Exit(report_error(e, prog=prog)) from None

        return wrapper  # type: ignore[return-value]

    return decorate


def context() -> Any:
    """The CLI's tool context; fermix's log goes to its file from here on, never to the user's stderr."""
    from ..core.context import ToolContext
    from ..core.logs import setup_logging

    ctx = ToolContext.for_cli(home=GLOBAL.home, cwd=GLOBAL.cwd, session=GLOBAL.session, trust=GLOBAL.trust)  # type: ignore[arg-type]
    setup_logging(ctx.paths.log_file)
    return ctx


def emit_json(value: Any) -> None:
    pretty = sys.stdout.isatty()
    from ..core.jsonin import json_text

    typer.echo(json_text(value, indent=2 if pretty else None))


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

    An editor that cannot be started, exits non-zero, removes the file or saves text that is not UTF-8
    is an `editor_failed` ToolError saying what happened and what to do.
    """
    import contextlib
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
        try:
            with open(name, encoding="utf-8") as f:
                edited = f.read()
        except FileNotFoundError:
            raise ToolError(
                "editor_failed",
                f"the editor {editor!r} removed the file it was given ({name}); nothing was changed. "
                "Save the text in place, or pass --text",
                {"path": name},
            ) from None
        except UnicodeDecodeError as e:
            raise ToolError(
                "editor_failed",
                f"the editor {editor!r} saved text that is not UTF-8 (byte 0x{e.object[e.start]:02x} at "
                f"offset {e.start}); nothing was changed. Save the text as UTF-8, or pass --text",
                {"offset": e.start},
            ) from None
        except OSError as e:
            raise ToolError(
                "editor_failed",
                f"cannot read back what the editor {editor!r} saved ({e.strerror}); nothing was changed. "
                "Save the text as a regular file in place, or pass --text",
                {"path": name},
            ) from None
    finally:
        # An editor may have removed or replaced the file: the error that says so is raised above.
        with contextlib.suppress(OSError):
            os.unlink(name)
    return None if edited == text else edited
