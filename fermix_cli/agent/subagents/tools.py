"""The `subagents` tool: fan independent work out to temporary workers running concurrently.

Workers run at the caller's trust with `read_write` and `gui_control` removed from the caller's policy
classes, within the caller's allowed tools, one level deeper; they cannot start workers of their own.
Their model is the call's `model`/`provider`/`reasoning_effort`, else their identity's `model`, else
`[fermix_core.routing] subagent_*`, else the main agent's. Results come back in input order, each cut to
its share of the result budget at a UTF-8 boundary.

An `identity` (the call's, or a task's own) names a discovered agent file (`identities.py`): its
instructions join the worker's system prompt as its role, its tools narrow the worker's (never widen).

Two modes set the limits (reference "Subagents"): regular, and `/ultra`, which an interactive session
turns on (`fermix agent`'s or a Telegram chat's `/ultra`) by setting `ctx.extras[ULTRA_MODE]`. A call is
validated against its mode's Params and a model is shown its mode's schema, turn by turn; workers never
inherit the mode (their context keeps none of the caller's extras).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from ...core import policy
from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.params import Field, model_validator
from ...core.records import Record
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs

if TYPE_CHECKING:
    from .identities import Identities, Identity

# The ctx.extras key of ultra mode: True while the session that owns the context is in /ultra.
ULTRA_MODE = "subagents_ultra"


class Caps(Record, frozen=True):
    """One mode's limits (reference "Subagents")."""

    mode: str
    max_tasks: int
    default_concurrency: int
    max_concurrency: int
    worker_iterations: int
    result_budget: int  # bytes, split evenly between the tasks


REGULAR = Caps("regular", 10, 4, 8, 100, 60_000)
ULTRA = Caps("ultra", 50, 12, 12, 40, 300_000)
DEFAULT_TIMEOUT = 300
MIN_TIMEOUT, MAX_TIMEOUT = 5, 900
WORKER_ITERATIONS = REGULAR.worker_iterations
WITHHELD_CLASSES = frozenset({"read_write", "gui_control"})
EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")


def caps_for(ctx: ToolContext) -> Caps:
    """The limits of `ctx`'s mode: ultra while its session is in /ultra, else regular."""
    return ULTRA if ctx.extras.get(ULTRA_MODE) is True else REGULAR


def mode_summary(caps: Caps) -> str:
    """A mode's limits in a line, as `/ultra` and `/ultra off` report them."""
    return (
        f"subagents: up to {caps.max_tasks} tasks, {caps.default_concurrency} at once by default (at most "
        f"{caps.max_concurrency}), {caps.worker_iterations} model calls per worker, a "
        f"{caps.result_budget:,}-byte result budget"
    )


def worker_cap_source(caps: Caps) -> str:
    """Where a worker's iteration cap comes from, as its max_iterations error names it."""
    if caps is ULTRA:
        return (
            f"the fixed cap of every subagent worker in /ultra mode ({REGULAR.worker_iterations} outside "
            "it); no option or setting changes it, so split the task"
        )
    return "the fixed cap of every subagent worker; no option or setting changes it, so split the task"


FORMAT_HINTS = {
    "concise": "Answer briefly: the result itself, in a few lines.",
    "detailed": "Answer thoroughly: the result, how you reached it, and what remains uncertain.",
    "structured": (
        "Answer so your result is easy to combine with other workers' results: a one-line summary, "
        "then the findings as a list, then open questions."
    ),
}


IDENTITY_HELP = (
    "A subagent identity for every worker (a discovered agent file): its instructions become the workers' "
    "role, its tools narrow theirs, its model is used unless `model`/`provider` is given"
)
TASK_IDENTITY_HELP = "A subagent identity for this task's worker (overrides the call's `identity`)"


class TaskSpec(Params):
    id: Annotated[str, Field(min_length=1, max_length=64, description="The task's id (unique in this call)")]
    task: Annotated[str, Field(min_length=1, max_length=100_000, description="The task's goal")]
    context: Annotated[str | None, Field(max_length=100_000, description="Context for this task only")] = None
    identity: Annotated[str | None, Field(min_length=1, max_length=64, description=TASK_IDENTITY_HELP)] = None


class SubagentsParams(Params):
    """The regular mode's parameters (what `fermix tool subagents --schema` publishes)."""

    CAPS: ClassVar[Caps] = REGULAR

    tasks: Annotated[
        list[TaskSpec],
        Field(
            min_length=1, max_length=10, description="Tasks, each {id, task, context?, identity?}; at most 10"
        ),
    ]
    shared_context: Annotated[str | None, Field(max_length=100_000, description="Context for every task")] = (
        None
    )
    max_concurrency: Annotated[
        int, Field(ge=1, le=8, description="Workers running at once (default 4, max 8)")
    ] = 4
    timeout_seconds: Annotated[
        int, Field(ge=MIN_TIMEOUT, le=MAX_TIMEOUT, description="Per-worker wall-clock limit (default 300)")
    ] = DEFAULT_TIMEOUT
    result_format: Annotated[
        Literal["concise", "detailed", "structured"], Field(description="How workers shape their answers")
    ] = "structured"
    model: Annotated[
        str | None, Field(min_length=1, max_length=256, description="Model for every worker")
    ] = None
    provider: Annotated[
        str | None,
        Field(min_length=1, max_length=64, description="Provider for `model`; inferred when omitted"),
    ] = None
    reasoning_effort: Annotated[
        Literal["none", "low", "medium", "high", "xhigh", "max"] | None,
        Field(description="Thinking level for the workers"),
    ] = None
    identity: Annotated[str | None, Field(min_length=1, max_length=64, description=IDENTITY_HELP)] = None

    @model_validator(mode="before")
    @classmethod
    def _in_the_reference_s_words(cls, value: Any) -> Any:
        """The reference's own messages (fermix-behaviour.md, "Subagents") for the limits a model is
        most likely to miss; the schema keeps the same limits."""
        if not isinstance(value, dict):
            return value
        caps = cls.CAPS
        tasks = value.get("tasks")
        if isinstance(tasks, str | int | float | dict) or tasks == []:  # (missing or null: the usual error)
            raise ToolError("invalid_input", "tasks must be a non-empty array.", {"field": "tasks"})
        if isinstance(tasks, list) and len(tasks) > caps.max_tasks:
            raise ToolError(
                "invalid_input", f"Too many tasks: {len(tasks)} (max {caps.max_tasks}).", {"field": "tasks"}
            )
        for name, low, high in (
            ("max_concurrency", 1, caps.max_concurrency),
            ("timeout_seconds", MIN_TIMEOUT, MAX_TIMEOUT),
        ):
            n = value.get(name)
            if n is None:
                continue
            if isinstance(n, bool) or not isinstance(n, int):
                raise ToolError("invalid_input", f"{name} must be an integer.", {"field": name})
            if not low <= n <= high:
                raise ToolError(
                    "invalid_input", f"{name} {n} is out of range ({low}..{high}).", {"field": name}
                )
        return value


class UltraSubagentsParams(SubagentsParams):
    """The `/ultra` mode's parameters: more tasks, more at once (the other fields as in regular mode)."""

    CAPS: ClassVar[Caps] = ULTRA

    tasks: Annotated[
        list[TaskSpec],
        Field(
            min_length=1,
            max_length=50,
            description="Tasks, each {id, task, context?, identity?}; at most 50 (/ultra mode)",
        ),
    ]
    max_concurrency: Annotated[
        int, Field(ge=1, le=12, description="Workers running at once (default 12, max 12 in /ultra mode)")
    ] = 12


def params_for(ctx: ToolContext) -> type[SubagentsParams]:
    """The Params of `ctx`'s mode (the reference's per-turn `dynamic_parameters`)."""
    return UltraSubagentsParams if caps_for(ctx) is ULTRA else SubagentsParams


def worker_model(
    p: SubagentsParams, ctx: ToolContext, identity: Identity | None = None
) -> tuple[str | None, str | None, str | None]:
    """(provider, model, effort) for the workers, checked before any worker starts.

    The call's `model`/`provider` win; else the identity's `model` (a Claude alias as `model_route`
    resolves it); else routing's `subagent_*`.
    """
    from ..providers import choose_provider, worker_route
    from .identities import model_route

    routing = ctx.config.fermix_core.routing
    provider, model = p.provider, p.model
    if model is None and provider is None and identity is not None:
        route = model_route(identity, ctx.config)
        provider, model = route.provider, route.model
    provider, model = worker_route(
        routing.subagent_provider, routing.subagent_model, provider=provider, model=model
    )
    effort = p.reasoning_effort or routing.subagent_reasoning_effort
    if effort is not None and effort not in EFFORTS:
        raise ToolError("invalid_value", f"reasoning_effort must be one of {', '.join(EFFORTS)}", {})
    choose_provider(ctx.config, provider=provider, model=model)  # raises invalid_provider, no_model ...
    return provider, model, effort


def worker_prompt(p: SubagentsParams, task: TaskSpec) -> str:
    parts = []
    if p.shared_context:
        parts.append(f"Shared context:\n{p.shared_context}")
    parts.append(f"Task:\n{task.task}")
    if task.context:
        parts.append(f"Task context:\n{task.context}")
    parts.append(FORMAT_HINTS[p.result_format])
    return "\n\n".join(parts)


def refuse_nesting(ctx: ToolContext) -> None:
    if ctx.depth > 0 or ctx.origin == "subagent":
        raise ToolError(
            "policy_denied",
            f"subagents cannot be called from within a subagent (depth {ctx.depth}).",
            {"tool": "subagents", "depth": ctx.depth},
        )


def chosen_identities(p: SubagentsParams, ctx: ToolContext) -> dict[str, Identity | None]:
    """Each task's identity (its own, else the call's, else none); `unknown_identity` for a name that is
    not installed, before any worker starts."""
    from .identities import discover_identities, unknown_identity

    names = {t.id: t.identity or p.identity for t in p.tasks}
    asked = [
        n for n in (p.identity, *names.values()) if n
    ]  # the call's too, even where every task overrides it
    if not asked:
        return dict.fromkeys(names)
    found = discover_identities(ctx)
    for name in dict.fromkeys(asked):
        if name not in found.identities:
            raise unknown_identity(name, found)
    return {task_id: found.identities[n] if n else None for task_id, n in names.items()}


def subagents(p: SubagentsParams, ctx: ToolContext) -> dict[str, Any]:
    from ..delegate import Delegation
    from .fanout import fan_out, result_entry
    from .identities import role_section

    refuse_nesting(ctx)
    caps = type(p).CAPS  # the mode the call was validated in (registry.invoke: `params_for`)
    ids = [t.id for t in p.tasks]
    if len(set(ids)) != len(ids):
        raise ToolError("invalid_input", "task ids must be unique.", {"ids": ids})
    identities = chosen_identities(p, ctx)
    routes = {
        name: worker_model(p, ctx, identity)
        for name, identity in {(i.name if i else None): i for i in identities.values()}.items()
    }
    ceiling = policy.effective_classes(ctx) - WITHHELD_CLASSES
    toolset = ctx.toolset or ctx.config.fermix_core.agent.toolset  # the workers' (Delegation.toolset)
    tasks = []
    for t in p.tasks:
        identity = identities[t.id]
        provider, model, effort = routes[identity.name if identity else None]
        declared = identity.tools_in(toolset) if identity else None
        tasks.append(
            (
                t.id,
                Delegation(
                    origin="subagent",
                    label=f"subagent:{t.id}",
                    prompt=worker_prompt(p, t),
                    tools=None if declared is None else declared[0],
                    tools_within_surface=True,
                    system_sections=(role_section(identity),) if identity else (),
                    policy_ceiling=ceiling,
                    provider=provider,
                    model=model,
                    reasoning_effort=effort,
                    max_iterations=caps.worker_iterations,
                    cap_source=worker_cap_source(caps),
                    toolset=ctx.toolset,
                ),
            )
        )
    runs = fan_out(ctx, tasks, max_concurrency=p.max_concurrency, timeout=float(p.timeout_seconds))
    share = caps.result_budget // len(tasks)
    results = []
    for (task_id, _), run in zip(tasks, runs, strict=True):
        entry = result_entry(task_id, run, share)
        identity = identities[task_id]
        if identity is not None:
            entry["identity"] = identity.name
        results.append(entry)
    statuses = [r["status"] for r in results]
    return {
        "status": "completed",
        "results": results,
        "summary": {
            "requested": len(results),
            "completed": statuses.count("completed"),
            "failed": statuses.count("failed"),
            "timed_out": statuses.count("timed_out"),
            "canceled": statuses.count("canceled"),
        },
    }


def _depth_zero(ctx: ToolContext) -> bool:
    return ctx.depth == 0 and ctx.origin != "subagent"


def live_schema(ctx: ToolContext, schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with the identities installed here listed in the `identity` descriptions."""
    from .identities import discover_identities, listing

    try:
        found: Identities = discover_identities(ctx)
    except ToolError:  # (a config that does not load): the call itself reports it
        return schema
    if found.identities:
        known = f". Installed: {listing(found)}"
    else:
        known = ". None is installed (<home>/agents/NAME.md, or [fermix_core.subagents] roots)"
    props = schema.get("properties", {})
    task_props = props.get("tasks", {}).get("items", {}).get("properties", {})
    for prop, text in (
        (props.get("identity"), IDENTITY_HELP),
        (task_props.get("identity"), TASK_IDENTITY_HELP),
    ):
        if isinstance(prop, dict):
            prop["description"] = text + known
    return schema


TOOLS = specs(
    ToolSpec(
        name="subagents",
        category="delegation",
        policy_class="external_api",
        description=(
            "Fan out independent tasks to temporary subagents running concurrently (at most 10 tasks; 4 at a "
            "time by default, at most 8; 50 tasks, 12 at a time in /ultra mode; 300 s each by default, at "
            "most 900). Workers can read, search, browse and run skills but cannot change local state or "
            "drive the desktop. An `identity` (per call or per task) gives workers a discovered subagent's role, "
            "tools (never more than theirs) and model. Results come back in task order with summary counts; "
            "you synthesize them."
        ),
        params=SubagentsParams,
        live_params=params_for,
        live_schema=live_schema,
        handler=subagents,
        available=_depth_zero,
        toolsets=frozenset({"fermix", "coding"}),  # seed 002 lists it in the coding set too
        hints=Hints(open_world=True),
        when_to_use="Several independent research or reading tasks that can run side by side.",
        examples=(
            Example(
                {
                    "tasks": [
                        {"id": "api", "task": "Summarise the public API in src/api"},
                        {"id": "tests", "task": "List what tests/ covers"},
                    ],
                    "result_format": "concise",
                },
                "two readers in parallel",
            ),
        ),
        failure_modes=(
            FailureMode(
                "policy_denied", "called from inside a subagent, or by a caller without external_api"
            ),
            FailureMode(
                "invalid_input",
                "no tasks, more than 10 (50 in /ultra), duplicate ids, or limits out of range",
            ),
            FailureMode("invalid_provider", "the model/provider override names an unknown provider"),
            FailureMode(
                "unknown_identity",
                "an `identity` that is not installed (the error lists those that are, and how to add one)",
            ),
        ),
    ),
)
