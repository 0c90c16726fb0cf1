"""`fermix ask`: one prompt, one run of the model loop, the answer streamed to stdout (or `--json`)."""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import ToolError
from .common import GLOBAL, context, emit_json, handles_errors

if TYPE_CHECKING:
    from ..agent.loop import RunResult
    from ..agent.messages import ModelResponse, ToolCall
    from ..agent.transcripts import ToolOutcome

EXIT_INTERRUPTED = 130

# The options `fermix ask` and `fermix agent` share.
ModelOpt = Annotated[
    str | None, typer.Option("-m", "--model", help="Model, or a provider name (-m echo, -m mock).")
]
ProviderOpt = Annotated[
    str | None, typer.Option("--provider", metavar="PROVIDER", help="Provider name from config.")
]
SystemOpt = Annotated[str | None, typer.Option("--system", help="System prompt (replaces the default).")]
ToolsetOpt = Annotated[
    str | None, typer.Option("--toolset", metavar="TOOLSET", help="fermix (default) or coding.")
]
ToolsOpt = Annotated[
    str | None, typer.Option("--tools", help="Exactly these tools, comma-separated ('' for none).")
]
SessionOpt = Annotated[str | None, typer.Option("--session", "-s", help="Continue (or start) this session.")]
ContinueOpt = Annotated[bool, typer.Option("-c", "--continue", help="Continue the most recent session.")]


def run_exit_code(result: RunResult) -> int:
    """0 ok; 1 when the cap, the repeat guard or the time limit stopped it; 130 for Ctrl-C; else the
    error's class."""
    if result.status == "ok":
        return 0
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    if result.error is not None and result.status == "error":
        return int(result.error.exit_class)
    return 1


def parse_tool_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def build_prompt(words: list[str] | None, read_stdin: bool) -> str:
    prompt = " ".join(words or []).strip()
    if read_stdin:
        piped = sys.stdin.read().strip()
        prompt = f"{prompt}\n\n{piped}".strip() if prompt else piped
    if not prompt:
        raise ToolError("usage", "empty message: pass MESSAGE... or pipe text with --stdin", {})
    return prompt


def session_option(session: str | None) -> str | None:
    """`ask --session`, else the global `--session`, else FERMIX_SESSION."""
    return session or GLOBAL.session or os.environ.get("FERMIX_SESSION", "").strip() or None


def short_json(value: Any, limit: int = 160) -> str:
    from ..agent.messages import valid_unicode
    from ..core.jsonin import json_text

    text = valid_unicode(value) if isinstance(value, str) else json_text(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class StreamObserver:
    """A LoopObserver for plain streaming: the model's text to stdout as it arrives; tool activity to stderr on a terminal."""

    def __init__(self, out: IO[str], err: IO[str], *, show_tools: bool) -> None:
        self.out = out
        self.err = err
        self.show_tools = show_tools
        self.last = "\n"

    def model_start(self, iteration: int) -> None:
        if iteration > 1 and self.last != "\n":
            self._write("\n")

    def text(self, delta: str) -> None:
        self._write(delta)

    def model_end(self, response: ModelResponse) -> None:
        pass

    def tool_start(self, call: ToolCall, name: str, arguments: Any) -> None:
        if self.show_tools:
            self.err.write(f"· {name} {short_json(arguments)}\n")
            self.err.flush()

    def tool_end(self, outcome: ToolOutcome) -> None:
        if self.show_tools and not outcome.ok:
            self.err.write(f"  ✗ {short_json(outcome.output)}\n")
            self.err.flush()

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        self.last = text[-1:] or self.last

    def finish(self) -> None:
        if self.last != "\n":
            self._write("\n")


@handles_errors
def ask(
    message: Annotated[
        list[str] | None,
        typer.Argument(help="The message; its words are joined with spaces.", show_default=False),
    ] = None,
    model: ModelOpt = None,
    provider: ProviderOpt = None,
    system: SystemOpt = None,
    toolset: ToolsetOpt = None,
    tools: ToolsOpt = None,
    session: SessionOpt = None,
    continue_last: ContinueOpt = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print {status, response, session_id, tool_calls, usage}.")
    ] = False,
    read_stdin: Annotated[
        bool, typer.Option("--stdin", help="Read the message (or more of it) from stdin.")
    ] = False,
    max_iterations: Annotated[
        int | None, typer.Option("--max-iterations", min=1, help="Cap on model calls (default 25).")
    ] = None,
    timeout_ms: Annotated[
        int | None,
        typer.Option(
            "--timeout",
            "-t",
            metavar="MS",
            min=1,
            help="Stop the run after MS milliseconds (status timeout, exit 1); default: no limit.",
        ),
    ] = None,
) -> None:
    """Ask once: run the model loop on MESSAGE with fermix's tools and print the answer. Also `fermix chat`.

    Exit codes: 0 ok, 1 provider failure or a stopped run (iteration cap, repeated calls, --timeout), 2 bad input, 3 refused by policy, 4 internal error, 130 interrupted.
    """
    from ..agent.assemble import Agent, AgentOptions
    from ..channels.outbox import OutboxPort
    from ..core.logs import setup_logging
    from ..core.replyport import REPLY_PORT

    if toolset is not None and tools is not None:
        raise ToolError("usage", "--toolset and --tools cannot be combined", {})
    prompt = build_prompt(message, read_stdin)
    ctx = context()
    setup_logging(ctx.paths.log_file)
    from ..memory.profiles import profile_sections

    options = AgentOptions(
        provider=provider,
        model=model,
        system=system,
        toolset=toolset,
        tools=parse_tool_list(tools),
        session=session_option(session),
        continue_last=continue_last,
        max_iterations=max_iterations,
        context_sections=profile_sections(ctx),
    )
    observer = None if as_json else StreamObserver(sys.stdout, sys.stderr, show_tools=sys.stderr.isatty())
    ctx.extras[REPLY_PORT] = OutboxPort(ctx.paths, lambda line: print(line, file=sys.stderr))
    from ..harness.notices import RunOutcomeNotices

    time_limit = None
    if timeout_ms is not None:
        from ..core.cancel import CancelToken, TimeLimit

        if ctx.cancel is None:  # work on other threads (subagent workers) watches it
            ctx.cancel = CancelToken()
        time_limit = TimeLimit(timeout_ms / 1000, ctx.cancel)
    agent = Agent(ctx, options, observer=observer, turn_notices=RunOutcomeNotices(), time_limit=time_limit)
    agent.transcript.close_orphaned_runs()  # runs a killed fermix left `running` end `interrupted`
    try:
        from ..core.cancel import install_interrupt_flag

        restore_sigint = install_interrupt_flag()
        try:
            result = agent.run(prompt)
        finally:
            restore_sigint()
        if as_json:
            emit_json(_run_json(agent, result))
        else:
            assert isinstance(observer, StreamObserver)
            observer.finish()
            if result.status != "ok" and result.error is not None:
                from .toolcall import report_error

                report_error(result.error)
        if result.record_error is not None:
            from .toolcall import report_warning

            report_warning(result.record_error, "the run's end was not recorded in state.db")
    finally:
        agent.close()
        ctx.close()
    raise typer.Exit(run_exit_code(result))


def _run_json(agent: Any, result: Any) -> dict[str, Any]:
    """The run's record; where its end could not be written, completed from the run itself."""
    record: dict[str, Any] = agent.transcript.run_json(result.run_id)
    if result.record_error is not None:
        record.update(
            status=result.status,
            response=result.response,
            iterations=result.iterations,
            usage={"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens},
            recorded=False,
        )
        if result.error is not None:
            record["error"] = result.error.to_dict()
    return record
