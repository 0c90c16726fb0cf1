"""The Typer application for people: every command except the `fermix tool NAME` fast path."""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

import typer

from .. import __version__
from ..core.errors import ToolError
from .common import GLOBAL
from .toolcall import report_error


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
def tool_list(
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    with_mcp: Annotated[
        bool, typer.Option("--mcp", help="Also the enabled MCP servers' tools (starts the servers).")
    ] = False,
) -> None:
    """List the tools this caller may run: built-ins and skills, with --mcp MCP servers' tools too."""
    from .toolcall import run_tool_list

    raise typer.Exit(
        run_tool_list([*(["--json"] if as_json else []), *(["--mcp"] if with_mcp else [])], GLOBAL)
    )


# Each command group: its module and how it joins the root app. `fermix NAME ...` registers only NAME's
# group (building the whole click tree costs more than most commands' own work); help, docs and
# completions register them all.
_COMMANDS: dict[str, tuple[str, str, bool]] = {
    # name: (module, attribute, a command function rather than a Typer group)
    "ask": ("ask_cmd", "ask", True),
    "chat": ("ask_cmd", "ask", True),  # the reference's other name for ask; hidden (see ALIASES)
    "agent": ("agent_cmd", "agent", True),
    "logs": ("logs_cmd", "logs", True),
    "inbox": ("inbox_cmd", "inbox", True),
    "doctor": ("doctor_cmd", "doctor_cmd", True),
    "capabilities": ("capabilities_cmd", "capabilities_cmd", True),
    "completions": ("completions_cmd", "completions_cmd", True),
    "mcp": ("mcp_cmd", "app", False),
    "config": ("config_cmd", "app", False),
    "events": ("events_cmd", "app", False),
    "jobs": ("jobs_cmd", "app", False),
    "channels": ("channels_cmd", "app", False),
    "memory": ("memory_cmd", "app", False),
    "runs": ("runs_cmd", "app", False),
    "sandbox": ("sandbox_cmd", "app", False),
    "grant": ("sandbox_cmd", "grant_app", False),
    "revoke": ("sandbox_cmd", "revoke_app", False),
    "state": ("state_cmd", "app", False),
    "serve": ("serve_cmd", "app", False),
    "browser": ("browser_cmd", "app", False),
    "skills": ("skills_cmd", "app", False),
    "subagents": ("subagents_cmd", "app", False),
}
# Other names of a command: they work but are left out of help and completions, which list it once.
ALIASES = frozenset({"chat"})
_REGISTERED: set[str] = set()


def _register_subapps(only: str | None = None) -> None:
    """Join the command groups to the root app: every one, or only `only` when it names one."""
    import importlib

    names = [only] if only in _COMMANDS else list(_COMMANDS)
    for name in names:
        if name in _REGISTERED:
            continue
        _REGISTERED.add(name)
        module, attr, is_command = _COMMANDS[name]
        target = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
        if is_command:
            app.command(name, hidden=name in ALIASES)(target)
        else:
            app.add_typer(target, name=name)
    # Help lists them in this table's order, whichever were registered first in this process.
    order = {name: i for i, name in enumerate(("tool", *_COMMANDS))}
    app.registered_commands.sort(key=lambda info: order.get(info.name or "", -1))
    app.registered_groups.sort(key=lambda info: order.get(info.name or "", -1))


def full_app() -> typer.Typer:
    """The app with every command group registered (for docs and completions)."""
    _register_subapps()
    return app


def command(only: str | None = None) -> Any:
    """The click command tree of the whole app (or of the root and `only`), as `--help`, the docs and
    the completions show it.

    Help text is plain, never Rich markup: fermix's help names config tables (`[mcp.servers.NAME]`)
    that markup would swallow. An argument, or an option that takes a value, shows it as its name
    (`--cwd CWD`, `PATH`), not as a type (`<str>`); one with choices keeps them.
    """
    from ..core.catalog import default_catalog

    _register_subapps(only)
    root: Any = typer.main.get_command(app)
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


def run_app(argv: list[str], name: str | None = None) -> int:
    """Run the Typer app and return its exit code (never raising SystemExit).

    `name`: the command the arguments name (after the global options), when the caller knows it; only
    that group is built. An unknown or absent name builds them all, so errors list every command.
    """
    root = command(name)
    root.invoke = _guarded(root.invoke)
    try:
        root.main(args=argv, prog_name="fermix", standalone_mode=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    try:
        if sys.stdout is not None:
            sys.stdout.flush()  # here, not at exit, so a reader gone away is noticed as below
    except BrokenPipeError:
        from .toolcall import quiet_broken_pipe

        quiet_broken_pipe()
    return code


def _guarded(invoke: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The root command's invoke, with the tool path's endings for what a command lets escape: a
    ToolError is its envelope and exit code, a reader gone away (`| head`) a quiet exit 0, anything else
    a bug: one line on stderr (exit 4), the traceback in the fermix log."""

    def run(ctx: Any) -> Any:
        try:
            _log_to_file()
            return invoke(ctx)
        except (typer.TyperException, typer.Exit, typer.Abort, EOFError):
            raise  # Typer's own (usage errors among them), exits and aborts
        except ToolError as e:
            raise typer.Exit(report_error(e)) from None
        except BrokenPipeError:
            from .toolcall import quiet_broken_pipe

            quiet_broken_pipe()
            raise typer.Exit(0) from None
        except Exception as e:
            from .toolcall import internal_error

            _log_to_file()
            raise typer.Exit(internal_error(e)) from None

    return run


def _log_to_file() -> None:
    """fermix's log goes to its file from the start of every command, as on the tool fast path: a
    warning or an exception logged before a command builds its context never reaches stderr."""
    from ..core.logs import setup_logging
    from ..core.paths import resolve_paths

    setup_logging(resolve_paths(GLOBAL.home).log_file)
