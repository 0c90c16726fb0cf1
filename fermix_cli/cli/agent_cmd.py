"""`fermix agent`: an interactive session with the model loop (markdown, tool panels, a spinner).

Slash commands: /new, /tools, /sessions, /session ID, /confirm, /deny, /pause, /resume, /ultra, /help, /exit.
Tools that need the owner's confirmation (e.g. request_directory_access) ask here; with stdin not a
terminal nothing prompts.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import ToolError
from .ask_cmd import ContinueOpt, ModelOpt, ProviderOpt, SessionOpt, SystemOpt, ToolsetOpt, ToolsOpt
from .common import handles_errors

if TYPE_CHECKING:
    from rich.console import Console

    from ..agent.assemble import Agent
    from .render import RichObserver

HELP = """\
/new            start a new session
/tools          list the tools the model can use
/sessions       list recent sessions
/session ID     switch to a session
/confirm TOKEN  approve a pending directory-access request
/deny TOKEN     refuse a pending directory-access request
/pause          take the desktop back: computer_use refuses every action until /resume
/resume         let computer_use act again (the task does not restart by itself)
/ultra [on|off] ultra mode for subagents until /ultra off: 50 tasks, 12 at once, 40 model calls each
/help           this help
/exit           leave (or Ctrl-D)
Ctrl-C stops the model's current turn."""


def _history_file(agent: Agent) -> str:
    paths = agent.base_ctx.paths
    paths.ensure_dir(paths.data_dir)
    return str(paths.data_dir / "agent_history")


def _setup_readline(path: str) -> Any:
    try:
        import readline
    except ImportError:  # not every platform has it; input() still works
        return None
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(1000)
    return readline


def _save_history(readline: Any, path: str) -> None:
    if readline is None:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        readline.write_history_file(path)
    except OSError:
        pass


def make_confirm(console: Console, observer: RichObserver, interactive: bool) -> Any:
    """The owner-confirmation callback tools reach through `core.approval.confirm_with_owner`."""

    def confirm(question: str, details: Mapping[str, Any]) -> bool:
        if not interactive:
            return False
        from rich.prompt import Confirm
        from rich.text import Text

        from .render import visible

        observer.pause()
        # Text, never markup: the path, the model's reason and the config diff are shown exactly as they
        # are (a `[sandbox]` or `[/]` stays; a newline shows as ␤ and cannot forge a line of its own).
        for key, value in details.items():
            console.print(Text.assemble(("  " + visible(str(key)) + ":", "dim"), " ", visible(str(value))))
        return bool(Confirm.ask(Text(visible(question), style="bold yellow"), console=console, default=False))

    return confirm


def _print_tools(console: Console, agent: Agent) -> None:
    from rich.markup import escape  # names and descriptions may come from an MCP server or a plugin

    loop = agent.open()
    for spec in loop.toolbox.advertised:
        first = escape(spec.description.split(". ")[0])
        console.print(f"[bold]{escape(spec.name)}[/]  [dim]{spec.policy_class}[/]  {first}")
    for spec in loop.toolbox.deferred:
        console.print(f"[bold]{escape(spec.name)}[/]  [dim]{spec.policy_class}, deferred[/]")


def _print_sessions(console: Console, agent: Agent) -> None:
    from rich.markup import escape  # a title is the first prompt, as typed

    for s in agent.transcript.sessions(20):
        mark = "*" if s["session_id"] == agent.session_id else " "
        console.print(
            f"{mark} [bold]{escape(s['session_id'])}[/]  {s['updated_at'][:19]}  {s['runs']} run(s)  "
            f"{escape(str(s['title']))}"
        )


def _command(line: str, console: Console, agent: Agent) -> bool:
    """Run a slash command; False means leave."""
    from rich.markup import escape

    name, _, arg = line[1:].partition(" ")
    if name in ("exit", "quit", "q"):
        return False
    if name == "new":
        console.print(f"[dim]new session {agent.new_session()}[/]")
    elif name == "tools":
        _print_tools(console, agent)
    elif name == "sessions":
        _print_sessions(console, agent)
    elif name == "session" and arg.strip():
        target = arg.strip()
        if not agent.transcript.exists(target):
            console.print(f"[red]no session {escape(target)}[/]")
        else:
            agent.new_session(target)
            console.print(f"[dim]session {escape(target)}[/]")
    elif name in ("confirm", "deny") and arg.strip():
        _resolve_access(console, agent, name, arg.strip())
    elif name in ("pause", "resume"):
        _pause_computer_use(console, agent, name == "pause")
    elif name == "ultra":
        _ultra(console, agent, arg.strip().lower())
    elif name == "help":
        console.print(HELP, markup=False, highlight=False)
    else:
        console.print(f"[red]unknown command /{escape(name)}[/] (try /help)")
    return True


def _resolve_access(console: Console, agent: Agent, verb: str, token: str) -> None:
    from rich.markup import escape

    from ..tools.access.requests import confirm_request, deny_request
    from .render import visible

    # The grant lands in config.toml; the session's next tool call reads it again (ToolContext.refresh_config).
    try:
        if verb == "confirm":
            req, _ = confirm_request(agent.base_ctx, token)
            console.print(f"granted: {visible(req.path)}", markup=False, highlight=False, soft_wrap=True)
        else:
            req = deny_request(agent.base_ctx, token)
            console.print(f"denied: {visible(req.path)}", markup=False, highlight=False, soft_wrap=True)
    except ToolError as e:
        console.print(f"[red]{e.code}:[/] {escape(e.message)}", highlight=False, soft_wrap=True)


def _pause_computer_use(console: Console, agent: Agent, paused: bool) -> None:
    from ..computer.session import set_paused

    changed = set_paused(agent.base_ctx, paused)
    if paused:
        state = "paused" if changed else "already paused"
        console.print(
            f"computer use {state}: the desktop is yours; the agent's desktop actions are refused until /resume"
        )
    else:
        state = "resumed" if changed else "was not paused"
        console.print(
            f"computer use {state}: the agent may act on the desktop again; send a message to continue the task"
        )


def _ultra(console: Console, agent: Agent, arg: str) -> None:
    """/ultra [on|off]: subagents' ultra caps for this session's next turns (until /ultra off)."""
    from ..agent.subagents.tools import REGULAR, ULTRA, ULTRA_MODE, mode_summary

    if arg not in ("", "on", "off"):
        console.print("usage: /ultra [on|off]", style="red", markup=False, highlight=False)
        return
    on = arg != "off"
    agent.set_extra(ULTRA_MODE, on)
    if on:
        line = f"ultra mode on until /ultra off: {mode_summary(ULTRA)}"
    else:
        line = f"ultra mode off: {mode_summary(REGULAR)}"
    console.print(line, markup=False, highlight=False)


def _report(console: Console, status: str, error: ToolError | None) -> None:
    if status == "interrupted":
        console.print("[yellow]interrupted[/]")
    elif error is not None:
        from rich.markup import escape

        console.print(f"[red]{escape(error.code)}:[/] {escape(error.message)}", highlight=False)


@handles_errors
def agent(
    model: ModelOpt = None,
    provider: ProviderOpt = None,
    system: SystemOpt = None,
    toolset: ToolsetOpt = None,
    tools: ToolsOpt = None,
    session: SessionOpt = None,
    continue_last: ContinueOpt = False,
    max_iterations: Annotated[
        int | None, typer.Option("--max-iterations", min=1, help="Cap on model calls per turn (default 100).")
    ] = None,
) -> None:
    """Chat with the model interactively; its tool calls run in-process under the same policy."""
    from rich.console import Console

    from ..agent.assemble import Agent, AgentOptions
    from ..channels.outbox import OutboxPort
    from ..core.logs import setup_logging
    from ..core.replyport import REPLY_PORT
    from .ask_cmd import parse_tool_list
    from .common import context
    from .render import RichObserver

    if toolset is not None and tools is not None:
        raise ToolError("usage", "--toolset and --tools cannot be combined", {})
    interactive = sys.stdin.isatty()
    console = Console(highlight=False)
    observer = RichObserver(console)
    ctx = context()
    setup_logging(ctx.paths.log_file)
    ctx.origin = "interactive"
    ctx.extras[REPLY_PORT] = OutboxPort(ctx.paths, lambda line: console.print(line, markup=False))
    from ..memory.profiles import profile_sections

    options = AgentOptions(
        provider=provider,
        model=model,
        system=system,
        toolset=toolset,
        tools=parse_tool_list(tools),
        session=session,
        continue_last=continue_last,
        max_iterations=max_iterations,
        context_sections=profile_sections(ctx),
    )
    from ..harness.notices import RunOutcomeNotices

    session_agent = Agent(
        ctx,
        options,
        observer=observer,
        extras={"confirm": make_confirm(console, observer, interactive)},
        turn_notices=RunOutcomeNotices(),
    )
    observer.session = lambda: session_agent.session_id  # named where a whole tool result is kept
    session_agent.transcript.close_orphaned_runs()  # runs a killed fermix left `running` end `interrupted`
    loop = session_agent.open()
    history_path = _history_file(session_agent)
    readline = _setup_readline(history_path) if interactive else None
    console.print(
        f"[dim]fermix agent · {session_agent.choice.name}/{session_agent.choice.model} · session "
        f"{session_agent.session_id}{' (continued)' if loop.history else ''} · /help[/]"
    )
    # SIGTERM, and SIGHUP (the terminal closed, ssh dropped), end the turn in flight as Ctrl-C does (the
    # run stored `interrupted`, its tool's process group killed), then the session: exit 143 or 129. An
    # ignored SIGHUP (`nohup`) stays ignored.
    terminated = {"by": 0}

    def on_term(signum: int, frame: object) -> None:
        terminated["by"] = signum
        raise KeyboardInterrupt

    import signal

    stops = [signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        stops.append(signal.SIGHUP)
    previous = {sig: signal.signal(sig, on_term) for sig in stops}
    try:
        while not terminated["by"]:
            try:
                line = input("› " if interactive else "").strip()
            except EOFError:
                break
            except KeyboardInterrupt:
                console.print()
                continue
            if not line:
                continue
            if line.startswith("/"):
                if not _command(line, console, session_agent):
                    break
                continue
            result = session_agent.run(line)
            observer.pause()
            _report(console, result.status, result.error)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        observer.pause()
        _save_history(readline, history_path)
        session_agent.close()
        ctx.close()
    if terminated["by"]:
        raise typer.Exit(128 + terminated["by"])
