"""Delegated runs: a child model loop in a narrowed context (a skill run, a subagent worker).

The child's context is derived from the caller's, so narrowing only narrows: its allowed tools are the
named ones the caller may run, its policy ceiling the intersection with the caller's, its depth one more.
Policy is still enforced at `registry.invoke` for every call the child's model makes, so a tool withheld
here is refused at execution, not only left off the list. The child's conversation is stored under the
caller's session (`conversations.parent_id`), so `fermix logs` shows the tree.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

from ..core import policy
from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.logs import logger
from ..core.records import Record, field
from ..core.registry import Registry, registry_of
from .messages import ModelResponse, ToolCall, Usage
from .transcripts import ToolOutcome, iso

if TYPE_CHECKING:
    from ..core.cancel import CancelToken
    from ..core.state import StateDB
    from .assemble import AgentOptions, Groundwork

log = logger("fermix.delegate")

Origin = Literal["skill", "subagent"]
STATUSES = ("completed", "failed", "timed_out", "canceled")


class Delegation(Record):
    """What to run, and inside which limits."""

    origin: Origin
    label: str
    prompt: str
    system: str | None = None
    tools: tuple[str, ...] | None = None  # an exact allowlist; None keeps the caller's
    # `tools` only narrows the surface the run would have had without it (its toolset within the
    # caller's tools): a subagent identity's list. Otherwise `tools` is exact (a skill's).
    tools_within_surface: bool = False
    # Sections added to the system prompt after fermix's own instructions (a subagent identity's role).
    system_sections: tuple[str, ...] = ()
    policy_ceiling: frozenset[str] | None = None
    provider: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    max_iterations: int | None = None
    cap_source: str | None = None  # what sets `max_iterations`, for the cap's error
    timeout_seconds: float | None = None
    toolset: str | None = None


class Delegated(Record):
    """How a delegated run ended, with whatever it produced."""

    status: str
    output: str
    session_id: str | None  # None for a run that never started (a fan-out cancelled before its turn)
    iterations: int = 0
    duration_ms: float = 0.0
    error: dict[str, Any] | None = None
    tools: list[str] = field(default_factory=list)
    withheld_tools: list[str] = field(default_factory=list)


class Progress(Record):
    """What a run had done when its caller gave up on it (`Stopwatch.progress`): its model calls, their
    tokens, and the turn in flight, with its calls answered as the loop would answer them."""

    iterations: int
    usage: Usage
    turn: tuple[ModelResponse, list[ToolOutcome]] | None = None


class Stopwatch:
    """Ends a run at its deadline or when cancelled: checked at every model and tool event.

    A model call already running is not interrupted; the run stops at its next event. `cancel` is
    also the run's context's cancel token, so a tool in flight that watches it (a shell command, git)
    is stopped at once, its process group killed, when the run is cancelled (a worker given up at its
    timeout). Collects the text the model streams, so a stopped run still reports what it produced,
    and what the run has done (`progress`), so a caller that stops waiting can record it.
    """

    def __init__(self, deadline: float | None, cancel: CancelToken | None = None) -> None:
        import threading

        from ..core.cancel import CancelToken

        self.deadline = deadline
        self.cancel = cancel or CancelToken()
        self.produced: list[str] = []
        self.iterations = 0
        # Written by the run's thread, read by the one that gives up on it (`progress`).
        self._lock = threading.Lock()
        self.usage = Usage()
        self._turn_text: list[str] = []
        self._turn_usage = Usage()
        self._turn_calls: list[ToolCall] = []
        self._done: list[ToolOutcome] = []
        self._running: tuple[ToolCall, str] | None = None
        self._no_tool = threading.Event()  # set while no tool call is running
        self._no_tool.set()

    def check(self) -> None:
        # The deadline first: at the deadline the token is cancelled too (run_delegated's timer).
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise ToolError("timeout", "the run reached its time limit", {})
        if self.cancel.cancelled:
            raise ToolError("canceled", f"the run was cancelled: {self.cancel.reason}", {})

    def model_start(self, iteration: int) -> None:
        self.check()  # a call stopped here is not made, nor counted
        with self._lock:
            if iteration != self.iterations:  # a new turn (the loop stored the last); else a continuation
                self._turn_text, self._turn_usage, self._turn_calls = [], Usage(), []
                self._done, self._running = [], None
            self.iterations = iteration

    def text(self, delta: str) -> None:
        self.produced.append(delta)
        self.check()

    def model_end(self, response: ModelResponse) -> None:
        with self._lock:
            self.usage.add(response.usage)
            self._turn_text.append(response.text)
            self._turn_usage.add(response.usage)
            self._turn_calls = list(response.tool_calls)
        if response.tool_calls:
            self.produced.append("\n")

    def tool_start(self, call: ToolCall, name: str, arguments: Any) -> None:
        with self._lock:
            self._running = (call, name)
            self._no_tool.clear()
        self.check()

    def tool_end(self, outcome: ToolOutcome) -> None:
        with self._lock:
            self._done.append(outcome)
            self._running = None
            self._no_tool.set()

    def wait_tool_stopped(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the tool call running now (if any) to end; True once none runs."""
        return self._no_tool.wait(timeout)

    def so_far(self) -> str:
        return "".join(self.produced).strip()

    def progress(self, reason: str) -> Progress:
        """What the run has done so far; the turn in flight (a reply with tool calls) with each call's
        answer: its result if it ended, `interrupted` if it is running, `cancelled` if it never ran."""
        from .loop import unfinished_outcome

        with self._lock:
            usage = Usage(self.usage.input_tokens, self.usage.output_tokens)
            if not self._turn_calls:
                return Progress(iterations=self.iterations, usage=usage)
            done = {o.call.call_id: o for o in self._done}
            running = self._running
            outcomes = []
            for call in self._turn_calls:
                outcome = done.get(call.call_id)
                if outcome is None:
                    is_running = running is not None and running[0].call_id == call.call_id
                    name = running[1] if running is not None and is_running else call.name
                    outcome = unfinished_outcome(call, name, running=is_running, reason=reason)
                outcomes.append(outcome)
            reply = ModelResponse(
                "".join(self._turn_text),
                list(self._turn_calls),
                Usage(self._turn_usage.input_tokens, self._turn_usage.output_tokens),
            )
            return Progress(iterations=self.iterations, usage=usage, turn=(reply, outcomes))


def child_session(parent: str, label: str) -> str:
    """A conversation id for a delegated run: readable, unique, within the 128-character session limit."""
    safe = "".join(c if c.isalnum() or c in "_.-" else "-" for c in label)[:40]
    return f"{parent[:70]}:{safe}-{uuid.uuid4().hex[:8]}"


def granted_tools(
    names: tuple[str, ...], caller: ToolContext, child: ToolContext, registry: Registry
) -> tuple[list[str], list[str]]:
    """(tools the child gets, tools withheld): a name is granted only if the caller and the child may run it."""
    source = registry.toolset()
    granted: list[str] = []
    withheld: list[str] = []
    for name in dict.fromkeys(names):
        try:
            spec = source.get(name, caller)
        except ToolError:
            spec = None
        usable = (
            spec is not None
            and not spec.hidden_from_agent
            and policy.can_see(spec, caller)
            and policy.can_see(spec, child)
        )
        (granted if usable else withheld).append(name)
    return granted, withheld


def _link(db: StateDB, when: str, session_id: str, origin: str, trust: str, parent: str, label: str) -> None:
    """Create the run's conversation under its caller's (a run that never started still shows there)."""
    with db.write() as c:
        c.execute(
            "INSERT OR IGNORE INTO conversations (id, origin, trust, created_at, updated_at, parent_id, label)"
            " VALUES (?,?,?,?,?,?,?)",
            (session_id, origin, trust, when, when, parent, label),
        )


def derive_child(ctx: ToolContext, d: Delegation, registry: Registry) -> ToolContext:
    """The child's context: one level deeper, unattended, no state connection yet, narrowed."""
    changes: dict[str, Any] = {
        "origin": d.origin,
        "depth": ctx.depth + 1,
        "attended": False,
        "record_calls": True,
        "extras": {"registry": registry},
        "toolsets": None,
    }
    if d.policy_ceiling is not None:
        changes["policy_ceiling"] = d.policy_ceiling
    return ctx.derive(own_state=True, **changes)  # a run gets a connection of its own (run_delegated)


class Prepared(Record):
    """What every run of one narrowing shares, built once and then only read: the child's context (its
    sandbox built), the tools granted and withheld, the run's options and groundwork (toolbox, cwd).

    Each run still derives its own context from `child` (own extras, own state connection, own session),
    and policy is still checked at `registry.invoke` for every call against that context.
    """

    child: ToolContext
    tools: list[str]
    withheld: list[str]
    options: AgentOptions
    groundwork: Groundwork


def prepare(ctx: ToolContext, d: Delegation, registry: Registry | None = None) -> Prepared:
    """Narrow `ctx` for `d` and settle its toolbox; raises ToolError when such a run cannot start."""
    from .assemble import AgentOptions, lay_groundwork

    registry = registry or registry_of(ctx)
    child = derive_child(ctx, d, registry)
    tools: list[str] = []
    withheld: list[str] = []
    if d.tools is not None:
        names: tuple[str, ...] = d.tools
        outside: tuple[str, ...] = ()
        if d.tools_within_surface:
            names, outside = _within_surface(registry, child, d)
        tools, withheld = granted_tools(names, ctx, child, registry)
        withheld = [*outside, *withheld]
        child = child.derive(allowed_tools=frozenset(tools))
    if ctx._sandbox is not None:
        # The caller's protected paths and blocked roots, as its sandbox found them; the child's roots
        # are its own (a delegated run does not get the caller's request cwd).
        child._sandbox = ctx._sandbox.sibling(request_cwd=child.cwd, trusted_local=child._trusted_local())
    options = AgentOptions(
        provider=d.provider,
        model=d.model,
        system=d.system,
        toolset=d.toolset,
        tools=tools if d.tools is not None else None,
        max_iterations=d.max_iterations,
        cap_source=d.cap_source,
        reasoning_effort=d.reasoning_effort,
        context_sections=d.system_sections,
    )
    try:
        groundwork = lay_groundwork(registry, child, options)
    finally:
        child.close()  # a tool's availability check may have opened a connection: not shared
    if d.tools is None:
        tools = sorted(groundwork.toolbox.dispatchable)
    return Prepared(child=child, tools=tools, withheld=withheld, options=options, groundwork=groundwork)


def _within_surface(
    registry: Registry, child: ToolContext, d: Delegation
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(`d.tools` that the run would dispatch were it given no `tools`, the others): the surface is its
    toolset's tools within the child's, and a name is read as the toolset reads it (coding's `shell`
    is its `bash`)."""
    from .assemble import AgentOptions, dispatchable_in, run_toolbox

    options = AgentOptions(toolset=d.toolset)
    try:
        surface = dispatchable_in(child, run_toolbox(registry, child, options))
        source = registry.toolset(d.toolset or child.config.fermix_core.agent.toolset)
        inside: list[str] = []
        outside: list[str] = []
        for name in dict.fromkeys(d.tools or ()):
            real = name
            if name not in surface:
                with contextlib.suppress(ToolError):  # no tool of that name here: it stays outside
                    spec = source.get(name, child)
                    real = spec.name if spec is not None else name
            (inside if real in surface else outside).append(real if real in surface else name)
        return tuple(dict.fromkeys(inside)), tuple(outside)
    finally:
        child.close()  # as after lay_groundwork: a connection an availability check opened is not shared


def narrowing(d: Delegation) -> tuple[Any, ...]:
    """The fields of `d` that `prepare` reads: delegations equal in these share one `Prepared`."""
    return (
        d.origin,
        d.tools,
        d.tools_within_surface,
        d.system_sections,
        d.policy_ceiling,
        d.provider,
        d.model,
        d.system,
        d.reasoning_effort,
        d.max_iterations,
        d.cap_source,
        d.toolset,
    )


def run_delegated(
    ctx: ToolContext,
    d: Delegation,
    *,
    stopwatch: Stopwatch | None = None,
    session_id: str | None = None,
    prepared: Prepared | None = None,
) -> Delegated:
    """Run `d` to the end in this thread; never raises for the run's own failures.

    `prepared` is `prepare(ctx, d)` built once for several runs (a fan-out's workers); without it the
    run prepares its own. The run borrows a state connection from the caller's (`StateDB.lend`) and
    gives it back; `ctx.state` must already be open when this runs on another thread than the caller's.
    """
    from .assemble import Agent

    started = time.monotonic()
    registry = registry_of(ctx)
    session = session_id or child_session(ctx.session_id, d.label)
    watch = stopwatch or Stopwatch(
        None if d.timeout_seconds is None else started + d.timeout_seconds,
        ctx.cancel.child() if ctx.cancel is not None else None,
    )
    timer = None
    if stopwatch is None and watch.deadline is not None:
        # At the deadline a tool in flight is stopped (a shell command's or git's process group is
        # killed); the loop ends at its next step. (A fan-out watches its workers' deadlines itself.)
        import threading

        reason = f"the run reached its time limit ({d.timeout_seconds:g} s)"
        timer = threading.Timer(max(0.0, watch.deadline - time.monotonic()), watch.cancel.cancel, (reason,))
        timer.daemon = True
        timer.start()
    lender: StateDB | None = None
    db: StateDB | None = None
    child: ToolContext | None = None
    tools: list[str] = []
    withheld: list[str] = []
    started_run = False
    try:
        lender = ctx.state
        db = lender.lend()
        ready = prepared or prepare(ctx, d, registry)
        tools, withheld = list(ready.tools), list(ready.withheld)
        # The run's own context (own extras, the borrowed connection); it keeps the prepared sandbox.
        child = ready.child.derive(
            share_sandbox=True, extras=dict(ready.child.extras), state=db, cancel=watch.cancel
        )
        options = ready.options.replace(session=session, parent_session=ctx.session_id, label=d.label)
        agent = Agent(child, options, observer=watch, registry=registry, groundwork=ready.groundwork)
        try:
            loop = agent.open()
            started_run = True  # the run's first write creates its conversation under the caller's
            result = loop.run(d.prompt)
        finally:
            agent.close()
        error = result.error
        # A run stopped (its cap, an error) reports all it wrote, not only its last reply.
        output = (result.response or watch.so_far()) if error is None else (watch.so_far() or result.response)
        iterations = result.iterations
    except ToolError as e:  # the run could not start (no provider, a bad script ...)
        error, output, iterations = e, watch.so_far(), watch.iterations
    finally:
        if timer is not None:
            timer.cancel()
        if child is not None:
            child.close()  # the lent connection stays open: it is handed back below
        if lender is not None and db is not None:
            try:
                if not started_run:
                    _link(db, iso(ctx.now()), session, d.origin, ctx.trust, ctx.session_id, d.label)
            except ToolError:
                log.exception("could not record delegated run %s under %s", session, ctx.session_id)
            finally:
                lender.take_back(db)
    status = "completed"
    if error is not None:
        status = {"timeout": "timed_out", "canceled": "canceled"}.get(error.code, "failed")
    return Delegated(
        status=status,
        output=output,
        session_id=session,
        iterations=iterations,
        duration_ms=round((time.monotonic() - started) * 1000, 1),
        error=None if error is None else error.to_dict(),
        tools=tools,
        withheld_tools=withheld,
    )
