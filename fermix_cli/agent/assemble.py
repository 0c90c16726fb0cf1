"""Assembling a run from options: provider, tools, context, system prompt, session and transcript."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.records import Record
from ..core.registry import Registry, default_registry
from .loop import AgentLoop, LoopObserver, RunResult
from .prompts import system_prompt
from .providers import ProviderChoice, build_provider, choose_provider
from .toolbox import Toolbox, select_tools
from .transcripts import Transcript, new_session_id

if TYPE_CHECKING:
    from ..core.cancel import TimeLimit

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
# Runs that get `max_iterations_scheduled` (100, reference 15): an interactive turn (`fermix agent`, a
# channel conversation), a sub-agent and a scheduled job. A one-shot `fermix ask` keeps the default (25).
LONG_RUN_ORIGINS = ("interactive", "scheduled", "subagent")


def prompt_cwd(ctx: ToolContext) -> str:
    """The working directory the prompt names: where relative paths resolve, or a note that they do not."""
    try:
        return ctx.sandbox.turn_cwd()
    except ToolError:
        caller = ctx.cwd or ctx.launch_cwd
        return f"{caller} (outside the sandbox roots: use absolute paths inside a root)"


class TurnNotices(Protocol):
    """Messages fermix owes this session (a background run's outcome ...), put before the next prompt.

    `collect` gives (id, text) pairs; `delivered` is told their ids once the turn that carried them was
    recorded, so a turn that crashes first carries them again (at least once, the id for dedup).
    """

    def collect(self, ctx: ToolContext, session_id: str) -> list[tuple[str, str]]: ...

    def delivered(self, ctx: ToolContext, ids: list[str], session_id: str) -> None: ...


NOTICE_HEAD = (
    "[fermix: background outcomes for this conversation, reported by fermix, not typed by the owner]"
)
NOTICE_FOOT = "[the owner's message follows]"


class Groundwork(Record, frozen=True):
    """What a run's context and options settle before the first prompt: its toolbox and the working
    directory its prompt names. Read only, so runs in the same context (the workers of one fan-out)
    can share one instead of each building its own."""

    toolbox: Toolbox
    cwd: str


def lay_groundwork(registry: Registry, ctx: ToolContext, options: AgentOptions) -> Groundwork:
    return Groundwork(toolbox=run_toolbox(registry, ctx, options), cwd=prompt_cwd(ctx))


def run_toolbox(registry: Registry, ctx: ToolContext, options: AgentOptions) -> Toolbox:
    """The tools a run with `options` offers in `ctx`: `--tools` exactly, else its toolset's."""
    toolset = None if options.tools is not None else (options.toolset or ctx.config.fermix_core.agent.toolset)
    return select_tools(registry, ctx, toolset=toolset, names=options.tools)


def dispatchable_in(ctx: ToolContext, toolbox: Toolbox) -> frozenset[str]:
    """What a run may dispatch: its toolbox's tools, within `ctx`'s own narrowing (never wider)."""
    if ctx.allowed_tools is None:
        return toolbox.dispatchable
    return ctx.allowed_tools & toolbox.dispatchable


class AgentOptions(Record):
    provider: str | None = None
    model: str | None = None
    system: str | None = None
    toolset: str | None = None
    tools: Sequence[str] | None = None
    session: str | None = None
    continue_last: bool = False
    max_iterations: int | None = None
    # Where `max_iterations` comes from, as the cap's error names it (`--max-iterations` when unset).
    cap_source: str | None = None
    reasoning_effort: str | None = None
    # Background sections appended to the system prompt (the memory profiles of ask and agent).
    context_sections: tuple[str, ...] = ()
    # A delegated run's caller: its conversation is created under this one (conversations.parent_id).
    parent_session: str | None = None
    label: str | None = None
    # Whether the run's end adds its messages to the transcripts' search index; a fan-out's workers
    # leave that to the fan-out, which indexes all of theirs in one batch when they are done.
    index_at_end: bool = True


class Agent:
    """A conversation with one provider and toolbox; `run` sends a prompt, `new_session` starts over."""

    def __init__(
        self,
        ctx: ToolContext,
        options: AgentOptions,
        *,
        observer: LoopObserver | None = None,
        registry: Registry | None = None,
        extras: dict[str, Any] | None = None,
        turn_notices: TurnNotices | None = None,
        groundwork: Groundwork | None = None,
        time_limit: TimeLimit | None = None,
    ) -> None:
        self.base_ctx = ctx
        self.time_limit = time_limit  # an overall limit on each run (`fermix ask --timeout`)
        self.groundwork = groundwork  # built for `ctx` by the caller (shared); else built on open
        self.turn_notices = turn_notices
        self.options = options
        self.observer = observer
        self.registry = registry or default_registry()
        self.extras = dict(extras or {})
        self.source_failures: dict[str, str] = {}  # tool sources (an MCP server ...) that did not load
        if options.session is not None and not SESSION_ID.fullmatch(options.session):
            raise ToolError(
                "usage",
                f"--session {options.session!r}: use letters, digits, '_', '.', ':' or '-' (at most 128)",
                {"session": options.session},
            )
        config = ctx.config
        self.choice: ProviderChoice = choose_provider(config, provider=options.provider, model=options.model)
        agent_cfg = config.fermix_core.agent
        if options.max_iterations is not None:
            self.max_iterations = options.max_iterations
            self.cap_source = options.cap_source or "--max-iterations"
        elif ctx.origin in LONG_RUN_ORIGINS:
            self.max_iterations = agent_cfg.max_iterations_scheduled
            self.cap_source = "fermix_core.agent.max_iterations_scheduled"
        else:
            self.max_iterations, self.cap_source = (
                agent_cfg.max_iterations,
                "fermix_core.agent.max_iterations",
            )
        self.transcript = Transcript(ctx.state, ctx.clock, index_at_end=options.index_at_end)
        self.provider = build_provider(self.choice, ctx)
        self.loop: AgentLoop | None = None
        self.session_id = self._pick_session()

    def _pick_session(self) -> str:
        if self.options.session is not None:
            return self.options.session
        if self.options.continue_last:
            latest = self.transcript.latest_session()
            if latest is not None:
                return latest
        return new_session_id()

    def open(self) -> AgentLoop:
        """The loop of the current session, loading its history the first time."""
        if self.loop is not None:
            return self.loop
        ctx = self.base_ctx
        stamped = self._stamped_trust()
        if stamped == "guest" and ctx.trust != "guest":
            ctx = ctx.derive(trust="guest")
        ground = self.groundwork
        if ground is None or ctx is not self.base_ctx:
            ground = lay_groundwork(self.registry, ctx, self.options)
        toolbox = ground.toolbox
        self.source_failures.update(toolbox.tools.failures())
        run_ctx = ctx.derive(
            share_sandbox=True,  # the one the prompt's cwd came from
            allowed_tools=dispatchable_in(ctx, toolbox),
            record_calls=True,
            session_id=self.session_id,
            toolset=toolbox.toolset,
            toolsets=toolbox.tools,
            extras={**ctx.extras, **self.extras, "registry": self.registry},
        )
        custom = self.options.system
        if custom is None:
            custom = ctx.config.fermix_core.agent.system_prompt
        system = system_prompt(custom, cwd=ground.cwd, now=ctx.now(), deferred=toolbox.deferred)
        if self.options.context_sections:
            system = "\n\n".join([system, *self.options.context_sections])
        options, registry = self.options, self.registry

        def retool() -> tuple[Toolbox, frozenset[str]]:
            # The tools as they are now (a skill_reload's skills), chosen and narrowed as at the start:
            # the same base context and options, so `--tools`, a toolset and every ceiling still hold.
            box = run_toolbox(registry, ctx, options)
            return box, dispatchable_in(ctx, box)

        make_loop: Callable[..., AgentLoop] = AgentLoop
        if self.time_limit is not None:
            from .timed import TimedLoop

            make_loop = functools.partial(TimedLoop, time_limit=self.time_limit)
        self.loop = make_loop(
            provider=self.provider,
            provider_name=self.choice.name,
            model=self.choice.model,
            ctx=run_ctx,
            registry=self.registry,
            toolbox=toolbox,
            retool=retool,
            system=system,
            transcript=self.transcript,
            session_id=self.session_id,
            history=self.transcript.history(self.session_id),
            max_iterations=self.max_iterations,
            cap_source=self.cap_source,
            repeat_limit=ctx.config.fermix_core.agent.repeat_limit,
            observer=self.observer,
            context_window=self.choice.settings.context_window,
            reply_reserve=self.choice.settings.max_tokens,
            first_tool_choice=self.choice.settings.tool_choice,
            reasoning_effort=self.options.reasoning_effort,
            parent=(
                None
                if self.options.parent_session is None
                else (self.options.parent_session, self.options.label or "")
            ),
        )
        return self.loop

    def _stamped_trust(self) -> str | None:
        rows = self.transcript.db.query("SELECT trust FROM conversations WHERE id = ?", (self.session_id,))
        return str(rows[0]["trust"]) if rows else None

    def run(self, prompt: str) -> RunResult:
        notices = self._notices()
        if not notices:
            return self.open().run(prompt)
        text = "\n\n".join([NOTICE_HEAD, *(body for _id, body in notices), NOTICE_FOOT, prompt])
        result = self.open().run(text)
        assert self.turn_notices is not None
        self.turn_notices.delivered(self.base_ctx, [i for i, _body in notices], self.session_id)
        return result

    def _notices(self) -> list[tuple[str, str]]:
        if self.turn_notices is None:
            return []
        try:
            return self.turn_notices.collect(self.base_ctx, self.session_id)
        except Exception:  # a notice source must never cost the owner their turn
            from ..core.logs import logger

            logger("fermix.agent").exception("collecting turn notices failed")
            return []

    def set_extra(self, key: str, value: Any) -> None:
        """Set `ctx.extras[key]` for this agent's runs from the next turn on, in this conversation and
        any it switches to (a session mode such as /ultra)."""
        self.extras[key] = value
        if self.loop is not None:
            self.loop.ctx.extras[key] = value

    def new_session(self, session_id: str | None = None) -> str:
        self.loop = None
        self.session_id = session_id or new_session_id()
        return self.session_id

    def close(self) -> None:
        self.provider.close()
