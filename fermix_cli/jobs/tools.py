"""Scheduled-job tools: schedule_job, list_jobs, update_job, pause_job, resume_job, remove_job, run_job_now,
list_job_runs, get_job_run.

Storage and validation live in `fermix_cli.jobs`; this module holds the parameter models and the text a
model sees. A job's runs happen later, under cron (`fermix jobs run`), never inside these calls, except
that run_job_now starts one in the background and returns its run id at once.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ..core.context import ToolContext
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from . import store
from .job import Job
from .schedule import GRAMMAR

DeliveryMode = Literal["none", "origin", "channel", "local"]
JobState = Literal["scheduled", "paused", "running", "completed", "disabled", "expired"]
RunStatus = Literal["queued", "running", "ok", "error", "skipped"]

JobId = Annotated[
    str, Field(min_length=1, max_length=200, description="Job id (from schedule_job or list_jobs)")
]
TARGET_DOC = (
    'Delivery target for channel mode: {"platform": ..., one of chat_id|channel_id|recipient|target|reply_target, '
    "optional thread_ts|message_thread_id}. Platforms: inbox (recipient NAME, a local inbox file), telegram "
    "(chat_id), webhook and apprise (recipient: a name configured under [fermix_core.channels]), desktop; "
    "other platforms are refused"
)
Target = dict[Annotated[str, Field(max_length=64)], str | int]


def describe_schedule(job: Job) -> str:
    """A job's schedule in words: `cron `...` in TZ`, `once at ...`, or the interval as written."""
    if job.schedule_kind == "cron":
        return f"cron `{job.schedule}` in {job.timezone}"
    if job.schedule_kind == "once":
        return f"once at {job.schedule}"
    return job.schedule


def describe_delivery(job: Job) -> str:
    """Where a job's output goes: the mode, and the target's platform and address if it has one."""
    if job.delivery_target:
        addr = ", ".join(f"{k}={v}" for k, v in job.delivery_target.items() if k != "platform")
        return f"{job.delivery_mode} ({job.delivery_target.get('platform')}: {addr})"
    return job.delivery_mode


def _next_shown(job: dict[str, Any]) -> str:
    """A job's next run as text: `-` when there is none, and why for a paused job."""
    if job["state"] == "paused":
        return "- (paused; computed on resume)"
    return str(job["next_run_at"] or "-")


def _job_line(job: dict[str, Any]) -> str:
    last = job["last_run"]
    outcome = f"; last {last['status']} at {last['at']}" if last and last.get("status") else ""
    pin = f"; pinned {job['route_pin']['provider']}/{job['route_pin']['model']}" if job["route_pin"] else ""
    what = job["command"] if job["kind"] == "command" else job["task_prompt"]
    what = what if len(what) <= 120 else what[:117] + "..."
    return (
        f"- {job['id']} [{job['state']}] {job['name']}: {job['schedule']} ({job['timezone']}); "
        f"next {_next_shown(job)}; delivery {job['delivery']['mode']}{pin}{outcome}\n"
        f"  {job['kind']}: {what}"
    )


# ----- schedule_job ------------------------------------------------------------------------------


class ScheduleJobParams(Params):
    name: Annotated[
        str, Field(max_length=1000, description="Human-readable job name; the job id is its slug")
    ]
    schedule: Annotated[
        str,
        Field(
            max_length=300,
            description="Interval (`every 15 minutes`), 5-field cron (`0 8 * * *`), or an ISO-8601 instant with "
            "an offset for a one-off run (`2026-03-29T08:00:00+02:00`)",
        ),
    ]
    task: Annotated[
        str,
        Field(
            max_length=40_000,
            description="Work instructions for the future run; bake in any values it needs (place, account, ...)",
        ),
    ]
    description: Annotated[
        str | None, Field(max_length=4000, description="Short description for the source catalog")
    ] = None
    timezone: Annotated[
        str | None, Field(max_length=64, description="IANA timezone for a cron schedule (default UTC)")
    ] = None
    expires_at: Annotated[
        str | None,
        Field(max_length=64, description="ISO-8601 instant with an offset; the job is marked expired then"),
    ] = None
    allowed_tools: Annotated[
        list[Annotated[str, Field(max_length=200)]] | None,
        Field(
            max_length=500,
            description="Narrowing list of tool names the runs may use; each must be a tool you can use",
        ),
    ] = None
    skill_name: Annotated[
        str | None,
        Field(max_length=64, description="Bind the runs to an installed skill (narrows, never widens)"),
    ] = None
    provider: Annotated[
        str | None, Field(max_length=200, description="Pin runs to a provider (give model too)")
    ] = None
    model: Annotated[
        str | None, Field(max_length=200, description="Pin runs to a model (give provider too)")
    ] = None
    timeout_seconds: Annotated[
        int | None, Field(ge=1, le=86_400, description="Wall-clock timeout of each run (default 1800)")
    ] = None
    inactivity_timeout_seconds: Annotated[
        int | None,
        Field(
            ge=1,
            le=86_400,
            description="Stop a run whose model/tool loop makes no progress this long (default 600)",
        ),
    ] = None
    delivery_mode: Annotated[
        DeliveryMode | None,
        Field(
            description="none (default), local (run history only), origin (the chat the job was created from) "
            "or channel (delivery_target)"
        ),
    ] = None
    delivery_target: Annotated[Target | None, Field(description=TARGET_DOC)] = None


def schedule_job(p: ScheduleJobParams, ctx: ToolContext) -> dict[str, Any]:
    job = store.create_job(
        ctx,
        store.NewJob(
            name=p.name,
            schedule=p.schedule,
            task=p.task,
            timezone=p.timezone,
            description=p.description,
            expires_at=p.expires_at,
            allowed_tools=p.allowed_tools,
            skill_name=p.skill_name,
            provider=p.provider,
            model=p.model,
            timeout_seconds=p.timeout_seconds,
            inactivity_timeout_seconds=p.inactivity_timeout_seconds,
            delivery_mode=p.delivery_mode,
            delivery_target=p.delivery_target,
        ),
    )
    message = (
        f"Scheduled job {job.id} ({job.name}): {describe_schedule(job)}; next run {job.next_run_at}. "
        f"Delivery: {describe_delivery(job)}."
    )
    return {"job": job.as_dict(), "message": message}


# ----- list_jobs ---------------------------------------------------------------------------------


class ListJobsParams(Params):
    state: Annotated[JobState | None, Field(description="Only jobs in this state")] = None
    limit: Annotated[
        int, Field(ge=1, le=store.LIST_LIMIT_MAX, description="At most this many jobs (default 100)")
    ] = 100


def list_jobs(p: ListJobsParams, ctx: ToolContext) -> dict[str, Any]:
    now = ctx.now()
    jobs, total = store.list_jobs(ctx.state.conn, state=p.state, limit=p.limit, now=now)
    return {"jobs": [j.as_dict(now) for j in jobs], "total": total, "more": total > len(jobs)}


def _render_list(result: dict[str, Any]) -> str:
    if not result["jobs"]:
        return "No scheduled jobs."
    lines = [_job_line(j) for j in result["jobs"]]
    if result["more"]:
        lines.append(f"({len(result['jobs'])} of {result['total']} shown; raise limit to see more)")
    return "\n".join(lines)


# ----- update_job --------------------------------------------------------------------------------


class UpdateJobParams(Params):
    job_id: JobId
    task: Annotated[str | None, Field(max_length=40_000, description="Replacement work instructions")] = None
    schedule: Annotated[str | None, Field(max_length=300, description="Replacement schedule expression")] = (
        None
    )
    description: Annotated[
        str | None, Field(max_length=4000, description="Replacement short description (empty clears it)")
    ] = None
    skill_name: Annotated[
        str | None, Field(max_length=64, description="Rebind to an installed skill (empty unbinds)")
    ] = None
    provider: Annotated[
        str | None, Field(max_length=200, description="New provider pin (give model too)")
    ] = None
    model: Annotated[str | None, Field(max_length=200, description="New model pin (give provider too)")] = (
        None
    )
    clear_route_pin: Annotated[
        bool | None,
        Field(description="Un-pin provider/model back to default routing; not together with provider/model"),
    ] = None
    delivery_mode: Annotated[
        DeliveryMode | None,
        Field(description="none, origin, channel or local; none and local clear the target"),
    ] = None
    delivery_target: Annotated[Target | None, Field(description=TARGET_DOC)] = None


def update_job(p: UpdateJobParams, ctx: ToolContext) -> dict[str, Any]:
    job, changed = store.update_job(
        ctx,
        p.job_id,
        store.JobPatch(
            task=p.task,
            schedule=p.schedule,
            description=p.description,
            skill_name=p.skill_name,
            provider=p.provider,
            model=p.model,
            clear_route_pin=bool(p.clear_route_pin),
            delivery_mode=p.delivery_mode,
            delivery_target=p.delivery_target,
        ),
    )
    what = ", ".join(changed) if changed else "nothing (the values were already set)"
    shown = job.as_dict(ctx.now())
    nxt = "computed on resume" if shown["state"] == "paused" else shown["next_run_at"] or "-"
    message = f"Updated job {job.id}: {what}. Next run {nxt}; state {shown['state']}."
    return {"job": shown, "changed": changed, "message": message}


# ----- pause / resume / remove -------------------------------------------------------------------


class JobIdParams(Params):
    job_id: JobId


def pause_job(p: JobIdParams, ctx: ToolContext) -> dict[str, Any]:
    job, changed = store.pause_job(ctx, p.job_id)
    message = (
        f"Paused job {job.id}; it will not run until resumed."
        if changed
        else f"Job {job.id} was already paused; nothing changed."
    )
    return {"job": job.as_dict(), "changed": changed, "message": message}


def resume_job(p: JobIdParams, ctx: ToolContext) -> dict[str, Any]:
    job, changed = store.resume_job(ctx, p.job_id)
    message = (
        f"Resumed job {job.id}; next run {job.next_run_at}."
        if changed
        else f"Job {job.id} is not paused ({job.state}); nothing changed."
    )
    return {"job": job.as_dict(), "changed": changed, "message": message}


def remove_job(p: JobIdParams, ctx: ToolContext) -> dict[str, Any]:
    job = store.remove_job(ctx, p.job_id)
    return {
        "removed": True,
        "job_id": job.id,
        "memory_source": f"job:{job.id}",
        "message": f"Removed job {job.id} ({job.name}) and its run history; its memory source job:{job.id} "
        "is kept as a tombstone.",
    }


# ----- run_job_now -------------------------------------------------------------------------------


def run_job_now(p: JobIdParams, ctx: ToolContext) -> dict[str, Any]:
    from .runner import run_now_detached

    claimed = run_now_detached(ctx, p.job_id)
    return {
        "run_id": claimed.run_id,
        "job_id": claimed.job_id,
        "trigger": "manual",
        "status": "queued",
        "message": f"Started a manual run {claimed.run_id} of job {claimed.job_id} in the background; "
        "check it with get_job_run.",
    }


# ----- runs --------------------------------------------------------------------------------------


class ListJobRunsParams(Params):
    job_id: JobId
    status: Annotated[RunStatus | None, Field(description="Only runs with this status")] = None
    limit: Annotated[
        int,
        Field(ge=1, le=store.RUNS_LIMIT_MAX, description="Maximum runs to return, newest first (default 20)"),
    ] = store.RUNS_LIMIT_DEFAULT


def list_job_runs(p: ListJobRunsParams, ctx: ToolContext) -> dict[str, Any]:
    runs, total = store.list_runs(ctx.state.conn, p.job_id, status=p.status, limit=p.limit)
    return {"job_id": p.job_id, "runs": runs, "total": total, "more": total > len(runs)}


def _render_runs(result: dict[str, Any]) -> str:
    if not result["runs"]:
        return f"No runs of job {result['job_id']} yet."
    lines = []
    for r in result["runs"]:
        tail = ""
        if r["error"]:
            tail = f": {r['error']['code']}: {r['error']['message']}"
        elif r["reason"]:
            tail = f": {r['reason']}"
        elif r["final_response"]:
            text = r["final_response"].strip().replace("\n", " ")
            tail = f": {text if len(text) <= 160 else text[:157] + '...'}"
        lines.append(f"- {r['run_id']} {r['status']} ({r['trigger']}, for {r['scheduled_for']}){tail}")
    return "\n".join(lines)


class GetJobRunParams(Params):
    run_id: Annotated[str, Field(min_length=1, max_length=200, description="Job run id to fetch")]


def get_job_run(p: GetJobRunParams, ctx: ToolContext) -> dict[str, Any]:
    return {"run": store.get_run(ctx.state.conn, p.run_id)}


_NOT_FOUND = FailureMode("not_found", "no job (or run) with that id; list_jobs shows the ids")

TOOLS = specs(
    ToolSpec(
        name="schedule_job",
        category="jobs",
        policy_class="read_write",
        description=(
            "Create a durable scheduled job: a task a fresh, unattended agent run carries out on a schedule "
            "(interval, 5-field cron in a timezone, or a one-off instant). allowed_tools can only narrow "
            "your own tools; provider and model pin together. " + GRAMMAR
        ),
        params=ScheduleJobParams,
        handler=schedule_job,
        render=lambda r: r["message"],
        when_to_use="The user wants something done later or repeatedly without being there.",
        examples=(
            Example(
                {
                    "name": "Morning digest",
                    "schedule": "0 8 * * 1-5",
                    "timezone": "Europe/Berlin",
                    "task": "Summarise unread notes in ~/notes/inbox.md in five bullets.",
                },
                "weekdays at 08:00 Berlin time",
            ),
            Example(
                {
                    "name": "Disk check",
                    "schedule": "every 6 hours",
                    "task": "Report free disk space.",
                    "delivery_mode": "local",
                },
                "an interval, kept in the run history",
            ),
            Example(
                {
                    "name": "Reminder",
                    "schedule": "2026-12-24T09:00:00+01:00",
                    "task": "Say: wrap gifts.",
                    "delivery_target": {"platform": "inbox", "recipient": "owner"},
                },
                "a one-off to the inbox",
            ),
        ),
        failure_modes=(
            FailureMode(
                "invalid_schedule",
                "the schedule is not one of the three forms, or never matches within a year",
            ),
            FailureMode("invalid_timezone", "the timezone is not an IANA name"),
            FailureMode(
                "invalid_expires_at",
                "expires_at has no offset, is not in the future, or comes before the first run",
            ),
            FailureMode(
                "invalid_route_pin", "provider without model (or the reverse), or an unknown provider"
            ),
            FailureMode("tool_not_allowed", "allowed_tools names tools not available to the caller"),
            FailureMode("unknown_skill", "skill_name is not an installed skill"),
            FailureMode("invalid_timeout", "inactivity_timeout_seconds is longer than timeout_seconds"),
            FailureMode(
                "invalid_delivery", "a mode and target that do not fit, or origin with no chat to reply to"
            ),
            FailureMode("unsupported_channel", "a platform this fermix cannot deliver to"),
            FailureMode(
                "channel_not_configured",
                "a target on a channel config.toml does not set up (no bot token ...)",
            ),
            FailureMode("missing_parameters", "name, schedule or task is blank"),
        ),
    ),
    ToolSpec(
        name="list_jobs",
        category="jobs",
        policy_class="read_only",
        owner_only=True,
        description=(
            "List scheduled jobs: task, schedule, timezone, next run, state, pin, delivery and last outcome."
        ),
        params=ListJobsParams,
        handler=list_jobs,
        render=_render_list,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="See which jobs exist, their ids, and whether they have been running.",
        examples=(Example({}, "every job"), Example({"state": "paused"}, "paused jobs only")),
        failure_modes=(FailureMode("invalid_input", "state is not a job state"),),
    ),
    ToolSpec(
        name="update_job",
        category="jobs",
        policy_class="read_write",
        description=(
            "Edit a scheduled job in place: task, schedule, description, skill binding, model pin or delivery. "
            "Omitted fields stay; timeouts are fixed at creation. Only a caller holding all the authority "
            "the job runs with may change its task, skill, pin or delivery."
        ),
        params=UpdateJobParams,
        handler=update_job,
        render=lambda r: r["message"],
        hints=Hints(idempotent=True),
        when_to_use="Change what or when a job runs without removing and recreating it.",
        examples=(
            Example({"job_id": "morning-digest", "schedule": "30 7 * * 1-5"}, "move it earlier"),
            Example({"job_id": "morning-digest", "clear_route_pin": True}, "back to default routing"),
        ),
        failure_modes=(
            _NOT_FOUND,
            FailureMode("missing_parameters", "nothing to change was given"),
            FailureMode("invalid_schedule", "the new schedule does not parse or never matches within a year"),
            FailureMode("invalid_route_pin", "provider/model not together, unknown, or with clear_route_pin"),
            FailureMode("unknown_skill", "skill_name is not an installed skill"),
            FailureMode("job_state", "the schedule of an expired job cannot change"),
            FailureMode(
                "policy_denied",
                "changing the task, skill, model pin or delivery needs every policy class, trust and tool "
                "the job runs with (a command job's command needs exec)",
            ),
        ),
    ),
    ToolSpec(
        name="pause_job",
        category="jobs",
        policy_class="read_write",
        description="Pause a scheduled job by id: it stops running until resumed (a run in flight finishes).",
        params=JobIdParams,
        handler=pause_job,
        render=lambda r: r["message"],
        hints=Hints(idempotent=True),
        when_to_use="Stop a job for now without losing it.",
        examples=(Example({"job_id": "morning-digest"}, "pause it"),),
        failure_modes=(_NOT_FOUND, FailureMode("job_state", "the job is completed, disabled or expired")),
    ),
    ToolSpec(
        name="resume_job",
        category="jobs",
        policy_class="read_write",
        description="Resume a paused job by id; its next run is computed from now.",
        params=JobIdParams,
        handler=resume_job,
        render=lambda r: r["message"],
        hints=Hints(idempotent=True),
        when_to_use="Start a paused job again.",
        examples=(Example({"job_id": "morning-digest"}, "resume it"),),
        failure_modes=(
            _NOT_FOUND,
            FailureMode("job_state", "the job expired, is a one-off whose time passed, or is not paused"),
            FailureMode("invalid_schedule", "the cron has no match within a year of now"),
        ),
    ),
    ToolSpec(
        name="remove_job",
        category="jobs",
        policy_class="read_write",
        description="Remove a scheduled job and its run history permanently; its memory source stays as a tombstone.",
        params=JobIdParams,
        handler=remove_job,
        render=lambda r: r["message"],
        hints=Hints(destructive=True),
        when_to_use="The job is no longer wanted at all (pause_job keeps it).",
        examples=(Example({"job_id": "morning-digest"}, "delete it"),),
        failure_modes=(_NOT_FOUND, FailureMode("job_busy", "a run of the job is queued or running")),
    ),
    ToolSpec(
        name="run_job_now",
        category="jobs",
        policy_class="read_write",
        description=(
            "Run a scheduled job now, out of band, through the normal runner (same isolation, delivery and "
            "confinement), leaving its cadence unchanged; returns the run id at once. A one-off is used up."
        ),
        params=JobIdParams,
        handler=run_job_now,
        render=lambda r: r["message"],
        when_to_use="Test a job, or do its work on demand.",
        examples=(Example({"job_id": "morning-digest"}, "run it now"),),
        failure_modes=(
            _NOT_FOUND,
            FailureMode("job_state", "the job is paused, disabled, expired or completed"),
            FailureMode("job_busy", "a run of the job is already queued or running"),
        ),
    ),
    ToolSpec(
        name="list_job_runs",
        category="jobs",
        policy_class="read_only",
        owner_only=True,
        description=(
            "List a job's runs, newest first: status (queued, running, ok, error, skipped), trigger, timing, "
            "final response and error."
        ),
        params=ListJobRunsParams,
        handler=list_job_runs,
        render=_render_runs,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Check that a job has been firing and read what its runs produced.",
        examples=(
            Example({"job_id": "morning-digest"}, "last 20 runs"),
            Example({"job_id": "morning-digest", "status": "error"}, "failures"),
        ),
        failure_modes=(_NOT_FOUND,),
    ),
    ToolSpec(
        name="get_job_run",
        category="jobs",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Fetch one job run in full: status, trigger, timing, the prompt and config it ran with, usage, "
            "iterations, final response, error, tool failures, delivery, the files it sent and its output.md path."
        ),
        params=GetJobRunParams,
        handler=get_job_run,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Inspect a run found with list_job_runs.",
        examples=(Example({"run_id": "run_0123456789abcdef0123"}, "one run"),),
        failure_modes=(_NOT_FOUND,),
    ),
)
