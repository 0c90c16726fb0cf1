"""Delegated runs: a child model loop in a narrowed context (a skill run, a subagent worker).

The child's context is derived from the caller's, so narrowing only narrows: its allowed tools are the
named ones the caller may run, its policy ceiling the intersection with the caller's, its depth one more.
Policy is still enforced at `registry.invoke` for every call the child's model makes, so a tool withheld
here is refused at execution, not only left off the list. The child's conversation is stored under the
caller's session (`conversations.parent_id`), so `fermix logs` shows the tree.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Literal

from ..core import policy
from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.records import Record, field
from ..core.registry import Registry, registry_of
from .messages import ModelResponse, ToolCall
from .transcripts import ToolOutcome, iso

Origin = Literal["skill", "subagent"]
STATUSES = ("completed", "failed", "timed_out", "canceled")


class Delegation(Record):
    """What to run, and inside which limits."""

    origin: Origin
    label: str
    prompt: str
    system: str | None = None
    tools: tuple[str, ...] | None = None  # an exact allowlist; None keeps the caller's
    policy_ceiling: frozenset[str] | None = None
    provider: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    max_iterations: int | None = None
    timeout_seconds: float | None = None
    toolset: str | None = None


class Delegated(Record):
    """How a delegated run ended, with whatever it produced."""

    status: str
    output: str
    session_id: str
    iterations: int = 0
    duration_ms: float = 0.0
    error: dict[str, Any] | None = None
    tools: list[str] = field(default_factory=list)
    withheld_tools: list[str] = field(default_factory=list)


class Stopwatch:
    """Ends a run at its deadline or when cancelled: checked at every model and tool event.

    A model call or a tool already running is not interrupted; the run stops at its next event.
    Collects the text the model streams, so a stopped run still reports what it produced.
    """

    def __init__(self, deadline: float | None, cancel: threading.Event | None = None) -> None:
        self.deadline = deadline
        self.cancel = cancel or threading.Event()
        self.produced: list[str] = []
        self.iterations = 0

    def check(self) -> None:
        if self.cancel.is_set():
            raise ToolError("canceled", "the run was cancelled by its caller", {})
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise ToolError("timeout", "the run reached its time limit", {})

    def model_start(self, iteration: int) -> None:
        self.iterations = iteration
        self.check()

    def text(self, delta: str) -> None:
        self.produced.append(delta)
        self.check()

    def model_end(self, response: ModelResponse) -> None:
        if response.tool_calls:
            self.produced.append("\n")

    def tool_start(self, call: ToolCall, name: str, arguments: Any) -> None:
        self.check()

    def tool_end(self, outcome: ToolOutcome) -> None:
        pass

    def so_far(self) -> str:
        return "".join(self.produced).strip()


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


def _link(child: ToolContext, session_id: str, parent: str, label: str) -> None:
    now = iso(child.now())
    with child.state.write() as db:
        db.execute(
            "INSERT OR IGNORE INTO conversations (id, origin, trust, created_at, updated_at, parent_id, label)"
            " VALUES (?,?,?,?,?,?,?)",
            (session_id, child.origin, child.trust, now, now, parent, label),
        )


def derive_child(ctx: ToolContext, d: Delegation, registry: Registry) -> ToolContext:
    """The child's context: one level deeper, unattended, its own state connection, narrowed."""
    changes: dict[str, Any] = {
        "origin": d.origin,
        "depth": ctx.depth + 1,
        "attended": False,
        "record_calls": True,
        "extras": {"registry": registry},
        "toolsets": None,
        "_state": None,  # a worker thread opens its own connection
    }
    if d.policy_ceiling is not None:
        changes["policy_ceiling"] = d.policy_ceiling
    return ctx.derive(**changes)


def run_delegated(
    ctx: ToolContext,
    d: Delegation,
    *,
    stopwatch: Stopwatch | None = None,
    session_id: str | None = None,
) -> Delegated:
    """Run `d` to the end in this thread; never raises for the run's own failures."""
    from .assemble import Agent, AgentOptions

    started = time.monotonic()
    registry = registry_of(ctx)
    session = session_id or child_session(ctx.session_id, d.label)
    watch = stopwatch or Stopwatch(None if d.timeout_seconds is None else started + d.timeout_seconds)
    child = derive_child(ctx, d, registry)
    tools: list[str] = []
    withheld: list[str] = []
    try:
        if d.tools is not None:
            tools, withheld = granted_tools(d.tools, ctx, child, registry)
            child = child.derive(allowed_tools=frozenset(tools))
        options = AgentOptions(
            provider=d.provider,
            model=d.model,
            system=d.system,
            toolset=d.toolset,
            tools=tools if d.tools is not None else None,
            session=session,
            max_iterations=d.max_iterations,
            reasoning_effort=d.reasoning_effort,
        )
        _link(child, session, ctx.session_id, d.label)
        agent = Agent(child, options, observer=watch, registry=registry)
        try:
            if d.tools is None:
                tools = sorted(agent.open().toolbox.dispatchable)
            result = agent.run(d.prompt)
        finally:
            agent.close()
        error = result.error
        output = result.response or watch.so_far()
        iterations = result.iterations
    except ToolError as e:  # the run could not start (no provider, a bad script ...)
        error, output, iterations = e, watch.so_far(), watch.iterations
    finally:
        child.close()
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
