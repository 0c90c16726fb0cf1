"""Jobs in state.db: create, edit, pause, resume, remove, list; runs listed and fetched.

Every change is one BEGIN IMMEDIATE transaction that re-reads the row it changes, so a check and the
write it guards never straddle another process's claim. Claims, runs and their records live in
`claims.py`.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.records import Record
from ..memory import store as memories
from . import trash
from . import validate as v
from .attachments import run_attachments
from .job import (
    RUN_SUMMARY_COLUMNS,
    Job,
    active_run,
    fetch_job,
    job_state_error,
    parse_ts,
    run_detail,
    run_summary,
    slugify,
    ts,
)
from .schedule import Schedule, first_run, parse_schedule
from .tick import raise_clock_mark

if TYPE_CHECKING:
    from ..core.context import ToolContext

LIST_LIMIT_MAX = 1000
RUNS_LIMIT_DEFAULT = 20
RUNS_LIMIT_MAX = 100


class NewJob(Record):
    """What a caller asks for; `create_job` validates every field."""

    name: str
    schedule: str
    task: str
    kind: str = "agent"
    timezone: str | None = None
    description: str | None = None
    expires_at: str | None = None
    allowed_tools: list[str] | None = None
    skill_name: str | None = None
    provider: str | None = None
    model: str | None = None
    timeout_seconds: int | None = None
    inactivity_timeout_seconds: int | None = None
    delivery_mode: str | None = None
    delivery_target: dict[str, Any] | None = None


class JobPatch(Record):
    """update_job's fields; None means unchanged."""

    task: str | None = None
    schedule: str | None = None
    description: str | None = None
    skill_name: str | None = None
    provider: str | None = None
    model: str | None = None
    clear_route_pin: bool = False
    delivery_mode: str | None = None
    delivery_target: dict[str, Any] | None = None

    def is_empty(self) -> bool:
        return not self.clear_route_pin and all(
            getattr(self, f) is None
            for f in (
                "task",
                "schedule",
                "description",
                "skill_name",
                "provider",
                "model",
                "delivery_mode",
                "delivery_target",
            )
        )


def _first_due(schedule: Schedule, now: datetime, expires_at: datetime | None) -> datetime:
    first = first_run(schedule, now)
    if expires_at is not None and first >= expires_at:
        raise ToolError(
            "invalid_expires_at",
            f"the job would expire ({expires_at.isoformat()}) before its first run ({first.isoformat()}).",
            {"expires_at": ts(expires_at), "first_run_at": ts(first)},
        )
    return first


def _unique_id(db: sqlite3.Connection, name: str) -> str:
    """The name's slug; taken ids, and ids of removed jobs whose memory source remains, get -2, -3, ..."""
    base = slugify(name)
    candidate, n = base, 2
    while db.execute(
        "SELECT 1 FROM scheduled_jobs WHERE id = ? UNION ALL SELECT 1 FROM memory_sources WHERE source_id = ?",
        (candidate, memories.job_source_id(candidate)),
    ).fetchone():
        candidate = f"{base}-{n}"
        n += 1
    return candidate


def _stamped_tools(requested: tuple[str, ...] | None, ctx: ToolContext) -> tuple[str, ...] | None:
    """The job's tool allowlist: what was asked for, never wider than the caller's own narrowing."""
    if ctx.allowed_tools is None:
        return requested
    if requested is None:
        return tuple(sorted(ctx.allowed_tools))
    return tuple(sorted(set(requested) & ctx.allowed_tools))


def create_job(ctx: ToolContext, new: NewJob) -> Job:
    """Validate and insert a job; its trust, policy ceiling and delivery are stamped now, for good."""
    from ..core.policy import effective_classes

    if ctx.trust not in ("operator", "guest"):
        raise ToolError(
            "missing_source_trust",
            "schedule_job requires a source_trust in context: the caller's trust is stamped on the job.",
            {},
        )
    now = ctx.now()
    name = v.clean_text("name", new.name, v.NAME_MAX, one_line=True)
    task = v.clean_text("command" if new.kind == "command" else "task", new.task, v.TASK_MAX)
    description = v.clean_text("description", new.description, v.DESCRIPTION_MAX) if new.description else None
    # Only an omitted zone means UTC: a blank one is refused like any other name that is not a zone.
    schedule = parse_schedule(new.schedule, "UTC" if new.timezone is None else new.timezone)
    expires = v.parse_expires_at(new.expires_at, now) if new.expires_at is not None else None
    first = _first_due(schedule, now, expires)
    config = ctx.config
    jobs_cfg = config.fermix_core.jobs
    pin = v.check_route_pin(new.provider, new.model, config)
    timeout, inactivity = v.resolve_timeouts(new.timeout_seconds, new.inactivity_timeout_seconds, jobs_cfg)
    tools = v.check_allowed_tools(new.allowed_tools, ctx) if new.allowed_tools is not None else None
    skill = v.check_skill(new.skill_name, ctx) if new.skill_name is not None else None
    if new.kind == "command" and (pin or tools is not None or skill):
        raise ToolError(
            "invalid_input",
            "a command job runs a shell command, not a model: it takes no provider, model, allowed_tools or skill.",
            {},
        )
    delivery = v.resolve_delivery(new.delivery_mode, new.delivery_target, ctx, jobs_cfg)
    stamped = _stamped_tools(tools, ctx)
    ceiling = sorted(effective_classes(ctx))
    stamp = ts(now)
    with ctx.state.write() as db:
        doomed = trash.sweep(db, ctx.paths.data_dir)  # before the insert: no old output under the new id
        job_id = _unique_id(db, name)
        db.execute(
            "INSERT INTO scheduled_jobs (id, name, kind, task, description, schedule, schedule_kind, timezone,"
            " state, next_run_at, expires_at, allowed_tools, skill_name, provider, model, timeout_seconds,"
            " inactivity_timeout_seconds, delivery_mode, delivery_target, created_by_agent_id,"
            " created_by_session_id, created_by_channel, created_by_trust, policy_ceiling, created_at,"
            " updated_at) VALUES (?,?,?,?,?,?,?,?, 'scheduled', ?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                job_id,
                name,
                new.kind,
                task,
                description,
                schedule.expression,
                schedule.kind,
                schedule.timezone,
                ts(first),
                ts(expires) if expires else None,
                None if stamped is None else json.dumps(list(stamped)),
                skill,
                pin[0] if pin else None,
                pin[1] if pin else None,
                timeout,
                inactivity,
                delivery.mode,
                None if delivery.target is None else json.dumps(delivery.target, sort_keys=True),
                memories.AGENT,
                ctx.session_id,
                ctx.origin,
                ctx.trust,
                json.dumps(ceiling),
                stamp,
                stamp,
            ),
        )
        memories.register_job_source(db, job_id, stamp, label=name)
        raise_clock_mark(db, now)
        job = fetch_job(db, job_id)
    trash.delete(doomed)
    return job


def _resolve_patch_delivery(job: Job, patch: JobPatch, ctx: ToolContext) -> v.Delivery | None:
    if patch.delivery_mode is None and patch.delivery_target is None:
        return None
    jobs_cfg = ctx.config.fermix_core.jobs
    if patch.delivery_mode == "channel" and patch.delivery_target is None and job.delivery_mode == "channel":
        return v.Delivery("channel", job.delivery_target)
    if patch.delivery_mode is None:
        return v.resolve_delivery("channel", patch.delivery_target, ctx, jobs_cfg)
    return v.resolve_delivery(patch.delivery_mode, patch.delivery_target, ctx, jobs_cfg)


def check_editor_covers(job: Job, patch: JobPatch, ctx: ToolContext) -> None:
    """Refuse (`policy_denied`) an edit of what a job runs by a caller with less authority than the job.

    The task, skill, model pin and delivery decide what a run does with the authority stamped on the job
    (its trust, policy classes and tool allowlist), so whoever changes them must hold all of that
    authority: narrowing only narrows. A command job's command needs the exec class. The schedule and
    description are not gated; neither are pause, resume, remove or run_job_now.
    """
    from ..core.policy import effective_classes

    gated = [
        name
        for name, given in (
            ("task", patch.task is not None),
            ("skill_name", patch.skill_name is not None),
            (
                "provider/model",
                patch.provider is not None or patch.model is not None or patch.clear_route_pin,
            ),
            ("delivery", patch.delivery_mode is not None or patch.delivery_target is not None),
        )
        if given
    ]
    if not gated:
        return
    mine = effective_classes(ctx)
    needed = set(job.policy_ceiling) | ({"exec"} if job.kind == "command" else set())
    missing = sorted(needed - mine)
    lacks: list[str] = []
    if missing:
        lacks.append(f"the policy class{'es' if len(missing) > 1 else ''} {', '.join(missing)}")
    if job.created_by_trust == "operator" and ctx.trust != "operator":
        lacks.append("operator trust")
    if ctx.allowed_tools is not None and (
        job.allowed_tools is None or not set(job.allowed_tools) <= ctx.allowed_tools
    ):
        lacks.append("every tool the job may use")
    if lacks:
        raise ToolError(
            "policy_denied",
            f"changing {', '.join(gated)} of job {job.id} needs all the authority the job runs with, and this "
            f"caller lacks {'; '.join(lacks)}. Ask the owner to edit it from the CLI; the schedule and "
            "description can still be changed, and the job paused or removed.",
            {"job_id": job.id, "fields": gated, "missing_classes": missing, "trust": ctx.trust},
        )


def update_job(ctx: ToolContext, job_id: str, patch: JobPatch) -> tuple[Job, list[str]]:
    """Edit a job in place; returns the job and the names of the fields that changed."""
    if patch.is_empty():
        raise ToolError(
            "missing_parameters",
            "update_job needs at least one field to change: task, schedule, description, skill_name, "
            "provider+model, clear_route_pin, delivery_mode or delivery_target.",
            {},
        )
    if patch.clear_route_pin and (patch.provider is not None or patch.model is not None):
        raise ToolError(
            "invalid_route_pin",
            "clear_route_pin un-pins the job; it cannot be combined with provider or model "
            "(give provider and model alone to re-pin).",
            {},
        )
    now = ctx.now()
    config = ctx.config
    pin = v.check_route_pin(patch.provider, patch.model, config)
    skill = v.check_skill(patch.skill_name, ctx) if patch.skill_name else None
    with ctx.state.write() as db:
        job = fetch_job(db, job_id)
        check_editor_covers(job, patch, ctx)
        sets: dict[str, Any] = {}
        if patch.task is not None:
            sets["task"] = v.clean_text(
                "command" if job.kind == "command" else "task", patch.task, v.TASK_MAX
            )
        if patch.description is not None:
            sets["description"] = (
                v.clean_text("description", patch.description, v.DESCRIPTION_MAX)
                if patch.description.strip()
                else None
            )
        if job.kind == "command" and (pin or patch.clear_route_pin or patch.skill_name):
            raise ToolError(
                "invalid_input", "a command job runs no model: it takes no provider, model or skill.", {}
            )
        if patch.skill_name is not None:
            sets["skill_name"] = skill
        if pin is not None:
            sets["provider"], sets["model"] = pin
        if patch.clear_route_pin:
            sets["provider"] = sets["model"] = None
        delivery = _resolve_patch_delivery(job, patch, ctx)
        if delivery is not None:
            sets["delivery_mode"] = delivery.mode
            sets["delivery_target"] = (
                None if delivery.target is None else json.dumps(delivery.target, sort_keys=True)
            )
        if patch.schedule is not None:
            if job.state == "expired":
                raise job_state_error(job, "a schedule change", "Create a new job with schedule_job.")
            schedule = parse_schedule(patch.schedule, job.timezone)
            # The same schedule sent again (a model re-sends it with a task edit) keeps the cadence:
            # recomputing would re-anchor an interval on now and drop a cron slot that is due.
            if not _same_schedule(job, schedule):
                if schedule.kind == "once":
                    _refuse_used_instant(db, job, schedule)
                first = _first_due(schedule, now, parse_ts(job.expires_at) if job.expires_at else None)
                sets.update(schedule=schedule.expression, schedule_kind=schedule.kind, next_run_at=ts(first))
                raise_clock_mark(db, now)
                if job.state in ("completed", "disabled"):
                    sets.update(state="scheduled", last_error=None)
        changed = [k for k, val in sets.items() if _differs(job, k, val)]
        if sets:
            sets["updated_at"] = ts(now)
            columns = ", ".join(f"{k} = ?" for k in sets)
            db.execute(f"UPDATE scheduled_jobs SET {columns} WHERE id = ?", (*sets.values(), job.id))
        return fetch_job(db, job.id), changed


def _same_schedule(job: Job, schedule: Schedule) -> bool:
    """Whether a job that still runs already has this schedule (same kind, same times).

    A completed or disabled job given a schedule is being set going again, so that is never "the same".
    """
    if job.state in ("completed", "disabled"):
        return False
    try:
        current = parse_schedule(job.schedule, job.timezone)
    except ToolError:
        return False
    return current.kind == schedule.kind and current.parsed == schedule.parsed


def _refuse_used_instant(db: sqlite3.Connection, job: Job, schedule: Schedule) -> None:
    """Refuse a one-off instant the job already has a scheduled run (or skip) for: it can never fire again."""
    slot = ts(schedule.parsed)  # type: ignore[arg-type]
    row = db.execute(
        "SELECT id, status FROM job_runs WHERE job_id = ? AND trigger = 'schedule' AND scheduled_for = ?",
        (job.id, slot),
    ).fetchone()
    if row is not None:
        raise ToolError(
            "invalid_schedule",
            f"job {job.id} already has a run for {slot} ({row['id']}, {row['status']}); each instant of a job "
            "fires at most once. Give a later instant, or use run_job_now to run it again now.",
            {"job_id": job.id, "schedule": schedule.expression, "run_id": row["id"], "status": row["status"]},
        )


def _differs(job: Job, column: str, value: Any) -> bool:
    old = getattr(job, column, None)
    if column == "delivery_target":
        old = None if job.delivery_target is None else json.dumps(job.delivery_target, sort_keys=True)
    return bool(old != value)


def pause_job(ctx: ToolContext, job_id: str) -> tuple[Job, bool]:
    """Stop ticks for a job; (job, changed). A run in flight finishes; the job stays paused."""
    with ctx.state.write() as db:
        job = fetch_job(db, job_id)
        if job.state == "paused":
            return job, False
        if job.state not in ("scheduled", "running"):
            raise job_state_error(job, "pause_job")
        stamp = ts(ctx.now())
        db.execute(
            "UPDATE scheduled_jobs SET state = 'paused', paused_at = ?, updated_at = ? WHERE id = ?",
            (stamp, stamp, job.id),
        )
        return fetch_job(db, job.id), True


def resume_job(ctx: ToolContext, job_id: str) -> tuple[Job, bool]:
    """Recompute the next run and schedule the job again; refuses expired jobs and passed one-offs."""
    now = ctx.now()
    stamp = ts(now)
    with ctx.state.write() as db:
        job = fetch_job(db, job_id)
        if job.state in ("scheduled", "running"):
            return job, False
        if job.state != "paused":
            raise job_state_error(job, "resume_job")
        expired = job.expires_at is not None and parse_ts(job.expires_at) <= now
        if expired:  # committed before the refusal below: the job is expired whatever happens next
            db.execute(
                "UPDATE scheduled_jobs SET state = 'expired', next_run_at = NULL, updated_at = ? WHERE id = ?",
                (stamp, job.id),
            )
    if expired:
        raise ToolError(
            "job_state",
            f"job {job.id} expired at {job.expires_at}; resume_job refuses expired jobs. "
            "Create a new job with schedule_job.",
            {"job_id": job.id, "state": "expired"},
        )
    with ctx.state.write() as db:
        job = fetch_job(db, job_id)
        if job.state != "paused":
            return job, False
        schedule = parse_schedule(job.schedule, job.timezone)
        if schedule.kind == "once" and first_run(schedule, now) <= now:
            raise ToolError(
                "job_state",
                f"job {job.id} is a one-off for {schedule.expression}, which has passed; resume_job refuses "
                "passed one-offs. Give it a new time with update_job (it stays paused), then resume it.",
                {"job_id": job.id, "state": job.state, "schedule": schedule.expression},
            )
        first = _first_due(schedule, now, parse_ts(job.expires_at) if job.expires_at else None)
        state = "running" if active_run(db, job.id) else "scheduled"
        db.execute(
            "UPDATE scheduled_jobs SET state = ?, next_run_at = ?, paused_at = NULL, updated_at = ? WHERE id = ?",
            (state, ts(first), stamp, job.id),
        )
        raise_clock_mark(db, now)
        return fetch_job(db, job.id), True


def remove_job(ctx: ToolContext, job_id: str) -> Job:
    """Delete a job and its runs and tombstone its memory source; refused while a run is active."""
    set_aside: Path | None = None
    try:
        with ctx.state.write() as db:
            job = fetch_job(db, job_id)
            active = active_run(db, job.id)
            if active is not None:
                raise ToolError(
                    "job_busy",
                    f"job {job.id} has a {active['status']} run ({active['id']}); remove_job waits until it "
                    "ends. Pause the job now and remove it afterwards.",
                    {"job_id": job.id, "run_id": active["id"]},
                )
            doomed = trash.sweep(db, ctx.paths.data_dir)  # while the job's row is there: its output stays
            db.execute("DELETE FROM scheduled_jobs WHERE id = ?", (job.id,))
            memories.tombstone_job_source(db, job.id, ts(ctx.now()))
            # Set aside before the commit: a kill after it leaves trash, never a jobs/<id>/ that a job
            # added later under the same id would take for its own.
            set_aside = trash.set_aside(ctx.paths.data_dir, job.id)
    except BaseException:
        if set_aside is not None:
            trash.put_back(ctx.paths.data_dir, job.id, set_aside)
        raise
    trash.delete([*doomed, *([set_aside] if set_aside else [])])
    return job


def list_jobs(
    db: sqlite3.Connection, *, state: str | None = None, limit: int = 100, now: datetime | None = None
) -> tuple[list[Job], int]:
    """Jobs oldest first; with `now`, `state` filters by the state shown (`Job.shown_state`)."""
    where: str = ""
    params: tuple[Any, ...] = ()
    if state and now is not None:
        past = "(expires_at IS NOT NULL AND expires_at <= ? AND state IN ('scheduled', 'paused'))"
        if state == "expired":
            where, params = f"WHERE state = 'expired' OR {past}", (ts(now),)
        else:
            where, params = f"WHERE state = ? AND NOT {past}", (state, ts(now))
    elif state:
        where, params = "WHERE state = ?", (state,)
    total = int(db.execute(f"SELECT count(*) FROM scheduled_jobs {where}", params).fetchone()[0])
    rows = db.execute(
        f"SELECT * FROM scheduled_jobs {where} ORDER BY created_at, id LIMIT ?", (*params, limit)
    ).fetchall()
    return [Job.from_row(r) for r in rows], total


def list_runs(
    db: sqlite3.Connection, job_id: str, *, status: str | None = None, limit: int = RUNS_LIMIT_DEFAULT
) -> tuple[list[dict[str, Any]], int]:
    fetch_job(db, job_id)
    where, params = "WHERE job_id = ?", [job_id]
    if status:
        where += " AND status = ?"
        params.append(status)
    total = int(db.execute(f"SELECT count(*) FROM job_runs {where}", params).fetchone()[0])
    rows = db.execute(
        f"SELECT {RUN_SUMMARY_COLUMNS} FROM job_runs {where} ORDER BY queued_at DESC, scheduled_for DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [run_summary(r) for r in rows], total


def get_run(db: sqlite3.Connection, run_id: str) -> dict[str, Any]:
    row = db.execute("SELECT * FROM job_runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise ToolError(
            "not_found",
            f"No job run with id {run_id!r}. Run list_job_runs to see a job's runs.",
            {"run_id": run_id},
        )
    out = run_detail(row)
    out["attachments"] = run_attachments(db, run_id)
    return out
