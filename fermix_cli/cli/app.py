"""The Typer application for people: every command except the `fermix tool NAME` fast path."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from .. import __version__
from .common import GLOBAL


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
    from ..core.startup import resume_collector

    resume_collector()  # Typer and the command's module are loaded; the command runs collected
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
        browser_cmd,
        channels_cmd,
        completions_cmd,
        config_cmd,
        doctor_cmd,
        events_cmd,
        inbox_cmd,
        jobs_cmd,
        logs_cmd,
        mcp_cmd,
        memory_cmd,
        runs_cmd,
        sandbox_cmd,
        serve_cmd,
        skills_cmd,
        state_cmd,
    )

    app.command("ask")(ask_cmd.ask)
    app.command("agent")(agent_cmd.agent)
    app.command("logs")(logs_cmd.logs)
    app.command("inbox")(inbox_cmd.inbox)
    app.command("doctor")(doctor_cmd.doctor_cmd)
    app.command("completions")(completions_cmd.completions_cmd)
    app.add_typer(mcp_cmd.app, name="mcp")
    app.add_typer(config_cmd.app, name="config")
    app.add_typer(events_cmd.app, name="events")
    app.add_typer(jobs_cmd.app, name="jobs")
    app.add_typer(channels_cmd.app, name="channels")
    app.add_typer(memory_cmd.app, name="memory")
    app.add_typer(runs_cmd.app, name="runs")
    app.add_typer(sandbox_cmd.app, name="sandbox")
    app.add_typer(sandbox_cmd.grant_app, name="grant")
    app.add_typer(sandbox_cmd.revoke_app, name="revoke")
    app.add_typer(state_cmd.app, name="state")
    app.add_typer(serve_cmd.app, name="serve")
    app.add_typer(browser_cmd.app, name="browser")
    app.add_typer(skills_cmd.app, name="skills")


def full_app() -> typer.Typer:
    """The app with every command group registered (for docs and completions)."""
    _register_subapps()
    return app


def command() -> Any:
    """The click command tree of the whole app, as `--help`, the docs and the completions show it.

    Help text is plain, never Rich markup: fermix's help names config tables (`[mcp.servers.NAME]`)
    that markup would swallow. An argument, or an option that takes a value, shows it as its name
    (`--cwd CWD`, `PATH`), not as a type (`<str>`); one with choices keeps them.
    """
    from ..core.catalog import default_catalog

    root: Any = typer.main.get_command(full_app())
    _plain_help(root)
    names = sorted(default_catalog().tool_modules)
    root.commands["tool"].epilog = (
        f"The built-in tools ({len(names)}; `fermix tool list` shows what you may run, "
        f"`fermix tool NAME --help` one tool's flags): {', '.join(names)}."
    )
    return root


# The names typer's click types give str, int, float and Path values (bounded numbers too).
_PLAIN_TYPES = frozenset({"str", "int", "float", "path", "int range", "float range"})


def _plain_help(cmd: Any) -> None:
    if hasattr(cmd, "rich_markup_mode"):
        cmd.rich_markup_mode = None
    for param in cmd.params:
        # A repeatable option has its values' type: each value is named alike.
        plain = getattr(param.type, "name", None) in _PLAIN_TYPES
        kind = getattr(param, "param_type_name", "")
        if (
            plain
            and param.metavar is None
            and (kind == "argument" or (kind == "option" and not param.is_flag))
        ):
            param.metavar = (param.name or "value").upper()
    for sub in getattr(cmd, "commands", {}).values():
        _plain_help(sub)


def run_app(argv: list[str]) -> int:
    """Run the Typer app and return its exit code (never raising SystemExit)."""
    try:
        command().main(args=argv, prog_name="fermix", standalone_mode=True)
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
