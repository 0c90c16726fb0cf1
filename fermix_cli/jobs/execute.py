"""The executor seam: how one claimed run of a job is carried out, inside a worker process.

A model job is the agent loop run in isolation (origin `scheduled`, unattended, the job's stamped trust,
policy ceiling and tool allowlist, 100 iterations, no history), fed the job prompt, the date and the
task. A command job runs its shell command through the exec engine (hardline, sandbox working
directory, replaced environment, process group, timeout). Either way the result is a `RunOutcome`;
the worker reports it and the runner records and delivers it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..core.context import ToolContext
from ..core.errors import NETWORK_FAILURE_CODES, ToolError
from ..core.records import Record, asdict, field
from .job import SILENT, Job

Progress = Callable[[str], None]

# Failures of the provider or the network, as opposed to the task: a run that hit one before any tool
# ran has changed nothing, so trying it again is safe.
TRANSIENT_CODES = frozenset({"rate_limited", "provider_error"}) | NETWORK_FAILURE_CODES


class RunOutcome(Record):
    """What a run produced: `ok` means the loop (or command) finished, not that the task succeeded."""

    status: str
    final_response: str | None = None
    error_code: str | None = None
    error: str | None = None
    usage: dict[str, Any] | None = None
    iterations: int | None = None
    tool_failures: list[dict[str, Any]] = field(default_factory=list)
    tools_run: int = 0
    attempts: int = 1
    # A command job is never tried again: a command that timed out may have done its work.
    kind: str = "model"

    @classmethod
    def failure(cls, code: str, message: str, **extra: Any) -> RunOutcome:
        return cls(status="error", error_code=code, error=message, **extra)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOutcome:
        known = {k: data[k] for k in cls.__record_fields__ if k in data}
        return cls(**known)

    @property
    def transient(self) -> bool:
        """A provider failure before any tool ran: worth another attempt (reference 8.3)."""
        return (
            self.kind == "model"
            and self.status == "error"
            and self.error_code in TRANSIENT_CODES
            and self.tools_run == 0
        )

    @property
    def silent(self) -> bool:
        """A final answer of exactly `[SILENT]` (surrounding whitespace aside) delivers nothing."""
        return self.final_response is not None and self.final_response.strip() == SILENT


class Prepared(Record, frozen=True):
    """A run ready to execute: its narrowed context and what it will be told."""

    ctx: ToolContext
    system: str
    task: str

    @property
    def snapshot(self) -> str:
        return f"{self.system}\n\n--- task ---\n{self.task}"


def run_context(base: ToolContext, job: Job, session_id: str) -> ToolContext:
    """The run's context: stamped trust and ceiling, the allowlist, unattended, origin scheduled."""
    return base.derive(
        trust=job.created_by_trust,
        origin="scheduled",
        attended=False,
        depth=0,
        allowed_tools=None if job.allowed_tools is None else frozenset(job.allowed_tools),
        policy_ceiling=frozenset(job.policy_ceiling),
        job_id=job.id,
        session_id=session_id,
        record_calls=True,
        extras=dict(base.extras),  # the run's own: its reply port is not the caller's
    )


def _delivery_phrase(job: Job) -> str:
    if job.delivery_mode == "none":
        return "Your final answer is recorded in the job's run history; it is not sent anywhere."
    if job.delivery_mode == "local":
        return "Your final answer is recorded in the job's run history for the owner to read."
    return "Your final answer is delivered to the owner as a message."


def job_prompt(job: Job, now: datetime) -> str:
    """The job prompt and the date: the whole system prompt of an isolated run."""
    from zoneinfo import ZoneInfo

    local = now.astimezone(ZoneInfo(job.timezone))
    return (
        "You are fermix, running a scheduled job for your owner. Nobody is watching this run and nobody "
        "can answer questions: do the task with the tools you have, then give a final answer. "
        f"{_delivery_phrase(job)} If there is nothing worth reporting, answer exactly {SILENT} and "
        "nothing is delivered.\n"
        "A tool result that starts with a tag such as `not_found:` is an error; read it and change course.\n\n"
        f"Job: {job.name} (id {job.id}), schedule `{job.schedule}` ({job.timezone}).\n"
        f"Current date and time: {local:%A %Y-%m-%d %H:%M} {job.timezone} "
        f"({now.astimezone(ZoneInfo('UTC')):%Y-%m-%dT%H:%M:%SZ})."
    )


class SkillConfinement(Record, frozen=True):
    """What a bound skill adds to a job's run: its instructions, and its `allowed_tools` and `policy`
    (None where it sets none: the job's own stay)."""

    instructions: str
    tools: frozenset[str] | None
    policy: frozenset[str] | None


def skill_confinement(base: ToolContext, name: str) -> SkillConfinement:
    """A bound skill's instructions (its SKILL.md body), its `allowed_tools` and its `policy` classes."""
    from ..core.skillrefs import discover_skills

    skill = discover_skills(base).skills.get(name)
    if skill is None:
        raise ToolError(
            "unknown_skill", f"{name}: the job's skill is no longer installed; rebind it with update_job", {}
        )
    declared = skill.tools_in(base.toolset or base.config.fermix_core.agent.toolset)
    return SkillConfinement(
        skill.instructions,
        None if declared is None else frozenset(declared[0]),
        None if skill.policy is None else frozenset(skill.policy),
    )


def prepare(base: ToolContext, job: Job, session_id: str, run_id: str | None = None) -> Prepared:
    """The run's context and prompt; a bound skill adds its instructions and narrows the tools and the
    policy classes (each intersected with the job's: confinement never widens).

    With `run_id`, a model run gets its reply port to the job's delivery target (send_attachment).
    """
    ctx = run_context(base, job, session_id)
    if job.kind == "command":
        return Prepared(ctx, f"command job {job.name} (id {job.id})", job.task)
    if run_id is not None:
        from .attachments import equip

        equip(ctx, job, run_id)
    system = job_prompt(job, ctx.now())
    if job.skill_name:
        skill = skill_confinement(base, job.skill_name)
        changes: dict[str, Any] = {}
        if skill.tools is not None:
            changes["allowed_tools"] = skill.tools
        if skill.policy is not None:
            changes["policy_ceiling"] = skill.policy
        if changes:
            ctx = ctx.derive(**changes)
        if ctx.allowed_tools is not None and skill.tools is not None:
            ctx.allowed_tools = _within_policy(ctx.allowed_tools, ctx)
        system += (
            f"\n\nThis job is bound to the skill {job.skill_name}. Its instructions:\n{skill.instructions}"
        )
    return Prepared(ctx, system, job.task)


def _within_policy(names: frozenset[str], ctx: ToolContext) -> frozenset[str]:
    """`names` without the tools `ctx`'s policy refuses: a skill may name a tool its own `policy` (or the
    job's stamped ceiling) excludes; it is withheld from the run, as `skill_run` withholds it, instead
    of failing it. An unknown name is kept, so the run reports it as before."""
    from ..core import policy
    from ..core.registry import registry_of

    source = registry_of(ctx).toolset()
    kept = set()
    for name in names:
        try:
            spec = source.get(name, ctx)
        except ToolError:
            spec = None
        if spec is None or policy.denial_reason(spec, ctx) is None:
            kept.add(name)
    return frozenset(kept)


def execute(job: Job, prepared: Prepared, progress: Progress) -> RunOutcome:
    """Run one job the way its kind says; never raises."""
    try:
        if job.kind == "command":
            return run_command(job, prepared, progress)
        return run_model(job, prepared, progress)
    except ToolError as e:
        return RunOutcome.failure(e.code, e.message)


# ----- command jobs ------------------------------------------------------------------------------


def command_spawn_id(session_id: str) -> str:
    """The spawn marker a command job's command carries (from its run's session id), so the runner can
    find and end it after a worker that died without ending it (SIGKILL, the OOM killer)."""
    return f"job-{session_id}"


def run_command(job: Job, prepared: Prepared, progress: Progress) -> RunOutcome:
    """The job's command through the exec engine, as the `shell` tool would run it."""
    try:
        from ..core.shell.engine import run_shell
    except ImportError:
        return RunOutcome.failure(
            "not_wired",
            "command jobs need the exec engine (fermix_cli.core.shell.engine), which is not installed",
        )
    from ..core import policy
    from ..core.registry import default_registry

    ctx = prepared.ctx
    policy.check(default_registry().get("shell"), ctx)
    progress("command")
    try:
        result = run_shell(
            job.task,
            ctx,
            working_dir=None,
            timeout_ms=job.timeout_seconds * 1000,
            tool="shell",
            spawn_id=command_spawn_id(str(ctx.session_id)),
        )
    except ToolError as e:
        output = e.details.get("output") if isinstance(e.details, dict) else None
        return RunOutcome.failure(
            e.code, e.message.splitlines()[0] if e.message else e.code, final_response=output, kind="command"
        )
    return RunOutcome(status="ok", final_response=str(result.get("output", "")), kind="command")


# ----- model jobs --------------------------------------------------------------------------------


class _ProgressObserver:
    """Turns loop events into progress pings for the inactivity timeout."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def model_start(self, iteration: int) -> None:
        self.progress("model_start")

    def text(self, delta: str) -> None:
        self.progress("text")

    def model_end(self, response: Any) -> None:
        self.progress("model_end")

    def tool_start(self, call: Any, name: str, arguments: Any) -> None:
        self.progress("tool_start")

    def tool_end(self, outcome: Any) -> None:
        self.progress("tool_end")


def run_model(job: Job, prepared: Prepared, progress: Progress) -> RunOutcome:
    """The isolated agent loop: job prompt as system, the task as the one user message."""
    from ..agent.assemble import Agent, AgentOptions

    ctx = prepared.ctx
    routing = ctx.config.fermix_core.routing
    provider: str | None
    model: str | None
    effort: str | None = None
    if job.provider:
        provider, model = job.provider, job.model
    else:  # unpinned: the cron route when set, else the primary chain, resolved now
        provider, model = routing.cron_provider, routing.cron_model
        effort = routing.cron_reasoning_effort
    # No max_iterations: origin `scheduled` gives the loop its job cap,
    # [fermix_core.agent] max_iterations_scheduled (100, the reference's fixed figure).
    options = AgentOptions(
        provider=provider,
        model=model,
        system=prepared.system,
        tools=sorted(ctx.allowed_tools) if ctx.allowed_tools is not None else None,
        session=ctx.session_id,
        reasoning_effort=effort,
    )
    agent = Agent(ctx, options, observer=_ProgressObserver(progress))
    try:
        result = agent.run(prepared.task)
    finally:
        agent.close()
    failures = [
        {"tool": o.name, "code": o.error_code, "message": o.output[:500]} for o in result.outcomes if not o.ok
    ]
    usage: dict[str, Any] = {
        **result.usage.to_json(),
        "provider": agent.choice.name,
        "model": agent.choice.model,
    }
    if result.status == "ok":
        return RunOutcome(
            status="ok",
            final_response=result.response,
            usage=usage,
            iterations=result.iterations,
            tool_failures=failures,
            tools_run=len(result.outcomes),
        )
    err = result.error
    return RunOutcome(
        status="error",
        final_response=result.response or None,
        error_code=err.code if err else result.status,
        error=err.message if err else result.status,
        usage=usage,
        iterations=result.iterations,
        tool_failures=failures,
        tools_run=len(result.outcomes),
    )
