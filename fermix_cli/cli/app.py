"""The Typer application for people: every command except the `fermix tool NAME` fast path."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from .. import __version__
from ..core.errors import ToolError
from .globalopts import GlobalOptions
from .toolcall import report_error

F = TypeVar("F", bound=Callable[..., Any])


class Trust(StrEnum):
    operator = "operator"
    guest = "guest"


app = typer.Typer(
    name="fermix",
    help="Every agent tool as a CLI subcommand with JSON in and JSON out, over one sandbox and one state file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"fermix {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    home: Annotated[
        str | None, typer.Option("--home", help="fermix home directory (same as FERMIX_HOME).")
    ] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Working directory for this call.")] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Session id (same as FERMIX_SESSION).")
    ] = None,
    trust: Annotated[Trust | None, typer.Option("--trust", help="operator (default) or guest.")] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """fermix: agent tools for people, scripts and models."""
    GLOBAL.home, GLOBAL.cwd, GLOBAL.session = home, cwd, session
    GLOBAL.trust = trust.value if trust is not None else None


tool_app = typer.Typer(
    help="Run one tool with JSON in and JSON out: fermix tool NAME --json '{...}'. `fermix tool list` lists them.",
    no_args_is_help=False,
)
app.add_typer(tool_app, name="tool")


@tool_app.callback(invoke_without_command=True)
def tool_main(ctx: typer.Context) -> None:
    """Run one tool: fermix tool NAME [--json OBJ|-|@FILE] [--jsonl] [--schema] [--pretty] [--text] [--PARAM VALUE ...]

    Exit codes: 0 ok, 1 tool failed, 2 bad input, 3 refused by policy or sandbox, 4 internal error.
    """
    if ctx.invoked_subcommand is None:
        from .toolcall import run_tool_list

        raise typer.Exit(run_tool_list([], GLOBAL))


@tool_app.command("list")
def tool_list(as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False) -> None:
    """List the tools this caller may run."""
    from .toolcall import run_tool_list

    raise typer.Exit(run_tool_list(["--json"] if as_json else [], GLOBAL))


_REGISTERED: list[bool] = []


def _register_subapps() -> None:
    if _REGISTERED:
        return
    _REGISTERED.append(True)
    from . import (
        agent_cmd,
        ask_cmd,
        completions_cmd,
        config_cmd,
        doctor_cmd,
        jobs_cmd,
        logs_cmd,
        mcp_cmd,
        memory_cmd,
        sandbox_cmd,
        state_cmd,
    )

    app.command("ask")(ask_cmd.ask)
    app.command("agent")(agent_cmd.agent)
    app.command("logs")(logs_cmd.logs)
    app.command("doctor")(doctor_cmd.doctor_cmd)
    app.command("completions")(completions_cmd.completions_cmd)
    app.add_typer(mcp_cmd.app, name="mcp")
    app.add_typer(config_cmd.app, name="config")
    app.add_typer(jobs_cmd.app, name="jobs")
    app.add_typer(memory_cmd.app, name="memory")
    app.add_typer(sandbox_cmd.app, name="sandbox")
    app.add_typer(sandbox_cmd.grant_app, name="grant")
    app.add_typer(sandbox_cmd.revoke_app, name="revoke")
    app.add_typer(state_cmd.app, name="state")


def full_app() -> typer.Typer:
    """The app with every command group registered (for docs and completions)."""
    _register_subapps()
    return app


def run_app(argv: list[str]) -> int:
    """Run the Typer app and return its exit code (never raising SystemExit)."""
    _register_subapps()
    try:
        app(args=argv, prog_name="fermix", standalone_mode=True)
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
