"""Claim before dispatch: what one `fermix jobs run` tick decides, inside one BEGIN IMMEDIATE transaction.

A tick, in order: runs whose claimant died are closed: with the result their worker saved if it saved
one (`runresult`), else as `error: interrupted` (or `runner_lost` once their lease passes); jobs past
`expires_at` become `expired`; when now lies well behind the clock mark (the clock stepped back), a
recurring job whose next run lies further ahead than its schedule gives from now is pulled back, and the
mark is set to now (otherwise raised to now); then every due job is either skipped (a recurring slot
later than the freshness window), left waiting (the concurrency cap is reached) or
claimed: its run row is inserted `queued` with `claimed_by` and a lease, and a recurring job's
`next_run_at` moves past now, all before the transaction commits. Nothing here runs a task; the runner
does that after the commit, and records the outcome with `finish_run`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timedelta
from typing import Any

from ..core.errors import ToolError
from ..core.logs import logger
from ..core.paths import FermixPaths
from ..core.records import Record, asdict, field
from .attachments import close_unfinished
from .execute import RunOutcome
from .job import Job, parse_ts, ts
from .liveness import Runner, liveness, split_claimant
from .runresult import load_result
from .schedule import Schedule, is_stale, next_run, parse_schedule
from .tick import CLOCK_STEP_MARGIN, clock_stepped_back, raise_clock_mark

# A claim's lease: the job's timeout plus this grace, after which any host may call the run lost.
LEASE_GRACE_SECONDS = 300
# Missed slots counted one by one at most this far (a minutely cron after a month off).
MISSED_COUNT_CAP = 1000


class ClaimedRun(Record, frozen=True):
    run_id: str
    job_id: str
    trigger: str
    scheduled_for: str


class TickReport(Record):
    """What a tick did; `fermix jobs run` prints it."""

    reconciled: list[dict[str, Any]] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    rescheduled: list[dict[str, Any]] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    claimed: list[ClaimedRun] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "reconciled": self.reconciled,
            "expired": self.expired,
            "rescheduled": self.rescheduled,
            "disabled": self.disabled,
            "skipped": self.skipped,
            "claimed": [asdict(c) for c in self.claimed],
            "waiting": self.waiting,
        }

    def is_empty(self) -> bool:
        return not (
            self.reconciled
            or self.expired
            or self.rescheduled
            or self.disabled
            or self.skipped
            or self.claimed
            or self.waiting
        )


def new_run_id() -> str:
    return f"run_{os.urandom(10).hex()}"


def lease_until(now: datetime, timeout_seconds: int) -> str:
    return ts(now + timedelta(seconds=timeout_seconds + LEASE_GRACE_SECONDS))


# ----- the job row after a run ends ----------------------------------------------------------------


def release_job(
    db: sqlite3.Connection,
    job_id: str,
    run_id: str,
    status: str,
    error: str | None,
    now: datetime,
) -> None:
    """Record a run's outcome on its job and free the job: scheduled, completed (one-off) or expired.

    A job paused (or otherwise changed) while the run was in flight keeps its new state, except a
    one-off paused during the run of its instant, which is used up all the same: completed. A one-off is
    completed only if the run used up its instant (claiming it cleared `next_run_at`): one whose schedule
    update_job set to a new instant meanwhile is scheduled for that instant.
    """
    stamp = ts(now)
    db.execute(
        """
        UPDATE scheduled_jobs SET
            last_run_id = ?, last_run_at = ?, last_status = ?, last_error = ?, run_count = run_count + 1,
            updated_at = ?,
            state = CASE
                WHEN state = 'paused' AND schedule_kind = 'once' AND next_run_at IS NULL THEN 'completed'
                WHEN state != 'running' THEN state
                WHEN schedule_kind = 'once' AND next_run_at IS NULL THEN 'completed'
                WHEN expires_at IS NOT NULL AND expires_at <= ? THEN 'expired'
                ELSE 'scheduled' END,
            next_run_at = CASE
                WHEN state = 'running' AND expires_at IS NOT NULL AND expires_at <= ? THEN NULL
                ELSE next_run_at END
        WHERE id = ?
        """,
        (run_id, stamp, status, error, stamp, stamp, stamp, job_id),
    )


# ----- reconciliation ----------------------------------------------------------------------------


def reconcile(
    db: sqlite3.Connection, now: datetime, paths: FermixPaths, me: str | None
) -> list[dict[str, Any]]:
    """Close active runs whose claimant is gone; they are never run again.

    A run whose worker saved its result before the claimant died is recorded with that result (a
    finished command is `ok`); any other becomes `error: interrupted` (or `runner_lost`).
    """
    out: list[dict[str, Any]] = []
    stamp = ts(now)
    rows = db.execute(
        "SELECT id, job_id, status, claimed_by, lease_until, session_id FROM job_runs"
        " WHERE status IN ('queued', 'running')"
    ).fetchall()
    for row in rows:
        claimant = row["claimed_by"]
        if claimant == me:
            continue
        state = liveness(paths, claimant)
        if state == "alive":
            # A claimant on this host that still holds its lock is at work, whatever its lease says (a
            # suspend or a clock step passes a lease in an instant): it polices its own timeouts, and
            # taking its job again would run it twice.
            continue
        lease_passed = row["lease_until"] is not None and row["lease_until"] < stamp
        if state == "remote" and not lease_passed:
            continue
        saved = load_result(paths, row["job_id"], row["id"])
        if saved is not None:
            closed = _close_with_result(db, row, saved, now)
        else:
            closed = _close_lost(db, row, state == "dead", now)
        if closed is not None:
            out.append({"run_id": row["id"], "job_id": row["job_id"], **closed})
    out += _close_pending_deliveries(db, stamp, paths, me)
    return out


def _close_pending_deliveries(
    db: sqlite3.Connection, stamp: str, paths: FermixPaths, me: str | None
) -> list[dict[str, Any]]:
    """A finished run whose delivery was still `pending` when its runner died becomes `undelivered`."""
    out: list[dict[str, Any]] = []
    rows = db.execute(
        "SELECT id, job_id, claimed_by, lease_until FROM job_runs WHERE delivery_status = 'pending'"
    ).fetchall()
    for row in rows:
        claimant = row["claimed_by"]
        if claimant == me or claimant is None:
            continue
        state = liveness(paths, claimant)
        lease_passed = row["lease_until"] is not None and row["lease_until"] < stamp
        if state == "alive" or (state == "remote" and not lease_passed):
            continue
        detail = {
            "code": "runner_died",
            "message": "the runner ended while this run was being delivered; the message may or may not "
            "have reached the channel, and is not sent again",
        }
        cur = db.execute(
            "UPDATE job_runs SET delivery_status = 'undelivered', delivery_detail = ?"
            " WHERE id = ? AND delivery_status = 'pending'",
            (json.dumps(detail), row["id"]),
        )
        if cur.rowcount:
            out.append({"run_id": row["id"], "job_id": row["job_id"], "delivery_status": "undelivered"})
    return out


def lost_message(row: sqlite3.Row, dead: bool) -> tuple[str, str]:
    """(error code, message) for a run whose claimant is gone without a saved result."""
    host, pid, _ = split_claimant(row["claimed_by"])
    never = "a run is never re-run (at most once)"
    if row["session_id"]:
        never += f"; check what it did before it stopped: fermix jobs show, session {row['session_id']}"
    if dead:
        did = "ran" if row["status"] == "running" else "claimed"
        return "interrupted", (
            f"the fermix process that {did} this run (pid {pid} on {host}) ended before the run finished"
            f" or saved a result; {never}"
        )
    return "runner_lost", (
        f"no result from {host} (pid {pid}) before the lease ended at {row['lease_until']}; "
        f"the run is given up; {never}"
    )


def _close_lost(db: sqlite3.Connection, row: sqlite3.Row, dead: bool, now: datetime) -> dict[str, Any] | None:
    code, message = lost_message(row, dead)
    cur = db.execute(
        "UPDATE job_runs SET status = 'error', error_code = ?, error = ?, finished_at = ?"
        " WHERE id = ? AND status IN ('queued', 'running')",
        (code, message, ts(now), row["id"]),
    )
    if not cur.rowcount:
        return None
    close_unfinished(db, row["id"], ts(now))
    release_job(db, row["job_id"], row["id"], "error", f"{code}: {message}", now)
    return {"status": "error", "error_code": code}


def _close_with_result(
    db: sqlite3.Connection, row: sqlite3.Row, outcome: RunOutcome, now: datetime
) -> dict[str, Any] | None:
    """Record the result the worker saved; it was never delivered (the runner died first)."""
    detail = {
        "code": "runner_died",
        "message": "the runner ended after the run finished but before recording it; the saved result "
        "was recorded by a later `fermix jobs run` and not delivered",
    }
    cur = db.execute(
        """
        UPDATE job_runs SET status = ?, finished_at = ?, final_response = ?, error_code = ?, error = ?,
            usage = ?, iterations = ?, attempts = ?, tool_failures = ?, silent = ?,
            delivery_status = 'undelivered', delivery_detail = ?
        WHERE id = ? AND status IN ('queued', 'running')
        """,
        (
            outcome.status,
            ts(now),
            outcome.final_response,
            outcome.error_code,
            outcome.error,
            None if outcome.usage is None else json.dumps(outcome.usage),
            outcome.iterations,
            outcome.attempts,
            json.dumps(outcome.tool_failures),
            int(outcome.silent),
            json.dumps(detail),
            row["id"],
        ),
    )
    if not cur.rowcount:
        return None
    close_unfinished(db, row["id"], ts(now))
    error = f"{outcome.error_code}: {outcome.error}" if outcome.status == "error" else None
    release_job(db, row["job_id"], row["id"], outcome.status, error, now)
    return {"status": outcome.status, "error_code": outcome.error_code, "recovered": True}


# ----- expiry ------------------------------------------------------------------------------------


def expire(db: sqlite3.Connection, now: datetime, job_id: str | None = None) -> list[str]:
    """Mark jobs past `expires_at` expired (only `job_id` when given); a slot that fell due before expiry
    is recorded as skipped."""
    stamp = ts(now)
    rows = db.execute(
        "SELECT id, state, next_run_at, expires_at FROM scheduled_jobs"
        " WHERE expires_at IS NOT NULL AND expires_at <= ? AND state IN ('scheduled', 'paused')"
        + (" AND id = ?" if job_id is not None else ""),
        (stamp,) if job_id is None else (stamp, job_id),
    ).fetchall()
    for row in rows:
        if row["state"] == "scheduled" and row["next_run_at"] and row["next_run_at"] < row["expires_at"]:
            _insert_skipped(
                db,
                row["id"],
                row["next_run_at"],
                now,
                f"expired: the job expired at {row['expires_at']} before this slot was run",
            )
        db.execute(
            "UPDATE scheduled_jobs SET state = 'expired', next_run_at = NULL, updated_at = ? WHERE id = ?",
            (stamp, row["id"]),
        )
    return [r["id"] for r in rows]


# ----- claims ------------------------------------------------------------------------------------


def _insert_skipped(db: sqlite3.Connection, job_id: str, slot: str, now: datetime, reason: str) -> str | None:
    run_id = new_run_id()
    stamp = ts(now)
    cur = db.execute(
        "INSERT OR IGNORE INTO job_runs (id, job_id, trigger, scheduled_for, status, reason, queued_at,"
        " finished_at) VALUES (?, ?, 'schedule', ?, 'skipped', ?, ?, ?)",
        (run_id, job_id, slot, reason, stamp, stamp),
    )
    return run_id if cur.rowcount else None


def advance(schedule: Schedule, slot: datetime, now: datetime) -> tuple[datetime, int, datetime | None]:
    """(next slot after now, slots passed over strictly between `slot` and now, the first of them).

    The count stops at MISSED_COUNT_CAP for a cron; intervals are counted exactly.
    """
    if isinstance(schedule.parsed, timedelta):
        nxt = next_run(schedule, now, previous=slot)
        assert nxt is not None
        missed = int((now - slot) // schedule.parsed)
        return nxt, missed, slot + schedule.parsed if missed else None
    missed, first = 0, None
    t = next_run(schedule, slot)
    assert t is not None
    while t <= now:
        missed += 1
        first = first or t
        if missed >= MISSED_COUNT_CAP:
            t = next_run(schedule, now)
            assert t is not None
            break
        t = next_run(schedule, t)
        assert t is not None
    return t, missed, first


def _missed_note(missed: int, first: datetime | None) -> str:
    if not missed:
        return ""
    more = "or more " if missed >= MISSED_COUNT_CAP else ""
    return (
        f"{missed} {more}later slot{'s' if missed != 1 else ''} from {ts(first) if first else '?'} also passed"
        " unchecked; missed slots never fire in a burst"
    )


def _claim_insert(
    db: sqlite3.Connection, job: Job, trigger: str, slot: str, now: datetime, runner: str
) -> str | None:
    run_id = new_run_id()
    cur = db.execute(
        "INSERT OR IGNORE INTO job_runs (id, job_id, trigger, scheduled_for, status, claimed_by, lease_until,"
        " queued_at, task_prompt) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
        (run_id, job.id, trigger, slot, runner, lease_until(now, job.timeout_seconds), ts(now), job.task),
    )
    return run_id if cur.rowcount else None


def _disable(db: sqlite3.Connection, job: Job, err: ToolError, now: datetime) -> None:
    message = f"{err.code}: {err.message}"
    if job.next_run_at:
        _insert_skipped(db, job.id, job.next_run_at, now, f"disabled: {message}")
    db.execute(
        "UPDATE scheduled_jobs SET state = 'disabled', next_run_at = NULL, last_error = ?, updated_at = ?"
        " WHERE id = ?",
        (message, ts(now), job.id),
    )


def latest_fresh_slot(
    schedule: Schedule, slot: datetime, now: datetime, window_seconds: int
) -> datetime | None:
    """The latest slot after `slot` (which is stale) and at or before `now` that is still inside the
    freshness window, or None: after a long outage the current slot still runs, once."""
    start = max(slot, now - timedelta(seconds=window_seconds))
    if isinstance(schedule.parsed, timedelta):
        steps = int((now - slot) // schedule.parsed)
        latest = slot + steps * schedule.parsed
        return latest if steps and latest >= start else None
    found = None
    t = next_run(schedule, start - timedelta(microseconds=1))  # slots at `start` count
    while t is not None and t <= now:
        if t > slot:
            found = t
        t = next_run(schedule, t)
    return found


def _slot_already_used(db: sqlite3.Connection, job: Job, slot: str) -> str:
    """The state of a one-off whose instant already has a run row (the claim insert was ignored).

    Its instant is used up, so it must not stay `scheduled` with no next run, stuck: it is completed
    (or `running` while that run is still active, which completes it when it ends).
    """
    row = db.execute(
        "SELECT id, status FROM job_runs WHERE job_id = ? AND trigger = 'schedule' AND scheduled_for = ?",
        (job.id, slot),
    ).fetchone()
    logger("fermix.jobs").warning(
        "job %s: its one-off instant %s already has a run (%s, %s); the job is completed without another run",
        job.id,
        slot,
        row["id"] if row else "?",
        row["status"] if row else "?",
    )
    return "running" if row is not None and row["status"] in ("queued", "running") else "completed"


def reschedule_after_clock_step(db: sqlite3.Connection, now: datetime) -> list[dict[str, Any]]:
    """Pull back the next run of recurring jobs that lies further ahead than their schedule allows from now.

    Called only when the clock stepped back (`tick.clock_stepped_back`: now lies more than the margin M
    before the clock mark); left alone, such a job would not run for the length of the step. A next run
    computed at a time no later than now + M (a tick that waited for the lock, an overlapping runner) is at
    most N after it for an interval N, at most the first match after now + M for a cron: only a next run
    beyond that is pulled back. An interval keeps its phase: its next run becomes the first
    `next_run_at - k*N` after now; a cron's becomes its first matching minute after now. Nothing is
    recorded as skipped: no slot passed, and a slot that already ran never runs again (one run row per job
    and slot). Each change is logged and listed in the tick's report (`rescheduled`).
    """
    stamp = ts(now)
    rows = db.execute(
        "SELECT * FROM scheduled_jobs WHERE state IN ('scheduled', 'running') AND schedule_kind != 'once'"
        " AND next_run_at > ?",
        (stamp,),
    ).fetchall()
    horizon = now + CLOCK_STEP_MARGIN
    out: list[dict[str, Any]] = []
    for row in rows:
        job = Job.from_row(row)
        assert job.next_run_at is not None
        stored = parse_ts(job.next_run_at)
        try:
            schedule = parse_schedule(job.schedule, job.timezone)
            if isinstance(schedule.parsed, timedelta):
                step = schedule.parsed
                if stored <= horizon + step:
                    continue
                earlier = stored - ((stored - now) // step) * step
                nxt: datetime | None = earlier if earlier > now else earlier + step
            else:
                allowed = next_run(schedule, horizon)
                if allowed is None or stored <= allowed:
                    continue
                nxt = next_run(schedule, now)
        except ToolError:
            continue  # claim_due disables it when it falls due
        if nxt is None or nxt >= stored:
            continue
        db.execute(
            "UPDATE scheduled_jobs SET next_run_at = ?, updated_at = ? WHERE id = ?", (ts(nxt), stamp, job.id)
        )
        logger("fermix.jobs").warning(
            "job %s: next run %s is past what its schedule gives from now (%s; the clock stepped back);"
            " moved to %s",
            job.id,
            job.next_run_at,
            stamp,
            ts(nxt),
        )
        out.append({"job_id": job.id, "was": job.next_run_at, "next_run_at": ts(nxt), "reason": "clock_step"})
    return out


def claim_due(
    db: sqlite3.Connection, now: datetime, runner: str, *, max_concurrent: int, window_seconds: int
) -> TickReport:
    """Skip, claim or leave waiting every due job (see the module docstring)."""
    report = TickReport()
    stamp = ts(now)
    active = int(
        db.execute(
            "SELECT count(*) FROM job_runs WHERE status IN ('queued', 'running') AND trigger = 'schedule'"
        ).fetchone()[0]
    )
    free = max_concurrent - active
    due = db.execute(
        "SELECT * FROM scheduled_jobs WHERE state = 'scheduled' AND next_run_at <= ? ORDER BY next_run_at, id",
        (stamp,),
    ).fetchall()
    for row in due:
        job = Job.from_row(row)
        assert job.next_run_at is not None
        slot = parse_ts(job.next_run_at)
        try:
            schedule = parse_schedule(job.schedule, job.timezone)
            if schedule.kind == "once":
                nxt, missed, first_missed = None, 0, None
            else:
                nxt, missed, first_missed = advance(schedule, slot, now)
        except ToolError as e:  # the zone or grammar no longer reads this job: disabled, never retried
            _disable(db, job, e, now)
            report.disabled.append(job.id)
            continue
        stale = schedule.kind != "once" and is_stale(slot, now, window_seconds)
        fresh = latest_fresh_slot(schedule, slot, now, window_seconds) if stale else None
        if (not stale or fresh is not None) and free <= 0:
            report.waiting.append(job.id)
            continue
        note = _missed_note(missed, first_missed)
        claim = job.next_run_at
        if stale and fresh is not None:
            # The slot found stale is skipped; the latest, still fresh, runs (once), as any due slot does.
            late = int((now - slot).total_seconds())
            # The slots passed between the stale one and the fresh one (past the cap, a floor).
            others = missed if missed >= MISSED_COUNT_CAP else missed - 1
            between = _missed_note(others, first_missed) if first_missed != fresh else ""
            reason = (
                f"stale: due {job.next_run_at}, found {late} s late, over the {window_seconds} s freshness "
                f"window; the run of {ts(fresh)}, still inside it, ran instead"
            ) + (f"; {between}" if between else "")
            skipped_id = _insert_skipped(db, job.id, job.next_run_at, now, reason)
            report.skipped.append({"run_id": skipped_id, "job_id": job.id, "scheduled_for": job.next_run_at})
            claim, first_missed, stale = ts(fresh), None, False
        if stale:
            late = int((now - slot).total_seconds())
            reason = (
                f"stale: due {job.next_run_at}, found {late} s late, over the {window_seconds} s freshness "
                f"window; the schedule moved on to {ts(nxt) if nxt else '-'}"
            ) + (f"; {note}" if note else "")
            run_id = _insert_skipped(db, job.id, job.next_run_at, now, reason)
            report.skipped.append({"run_id": run_id, "job_id": job.id, "scheduled_for": job.next_run_at})
            db.execute(
                "UPDATE scheduled_jobs SET next_run_at = ?, last_status = 'skipped', updated_at = ? WHERE id = ?",
                (ts(nxt) if nxt else None, stamp, job.id),
            )
            continue
        run_id = _claim_insert(db, job, "schedule", claim, now, runner)
        state = "running" if run_id else "scheduled"
        if run_id is None and nxt is None:
            state = _slot_already_used(db, job, claim)
        if first_missed is not None:
            skipped_id = _insert_skipped(
                db, job.id, ts(first_missed), now, f"missed: {note}; the run of {claim} ran instead"
            )
            report.skipped.append({"run_id": skipped_id, "job_id": job.id, "scheduled_for": ts(first_missed)})
        db.execute(
            "UPDATE scheduled_jobs SET state = ?, next_run_at = ?, updated_at = ? WHERE id = ?",
            (state, ts(nxt) if nxt else None, stamp, job.id),
        )
        if run_id:
            report.claimed.append(ClaimedRun(run_id, job.id, "schedule", claim))
            free -= 1
    return report


def claim_manual(db: sqlite3.Connection, job: Job, now: datetime, runner: str) -> ClaimedRun:
    """run_job_now's claim: a `manual` run row, the job `running`; a one-off is used up by it."""
    stamp = ts(now)
    run_id = _claim_insert(db, job, "manual", stamp, now, runner)
    assert run_id is not None
    db.execute(
        "UPDATE scheduled_jobs SET state = 'running', next_run_at = CASE WHEN schedule_kind = 'once' THEN NULL"
        " ELSE next_run_at END, updated_at = ? WHERE id = ?",
        (stamp, job.id),
    )
    return ClaimedRun(run_id, job.id, "manual", stamp)


def tick(
    db_write: Any,
    now: datetime,
    paths: FermixPaths,
    runner: Runner,
    *,
    max_concurrent: int,
    window_seconds: int,
) -> TickReport:
    """Reconcile, expire and claim in one durable (synchronous=FULL) BEGIN IMMEDIATE transaction.

    The clock mark is checked and moved in the same transaction: after a backward step it is set to now
    (the step is handled once), otherwise raised to now.
    """
    with db_write(durable=True) as db:
        reconciled = reconcile(db, now, paths, runner.claimed_by)
        expired = expire(db, now)
        rescheduled: list[dict[str, Any]] = []
        if clock_stepped_back(db, now):
            rescheduled = reschedule_after_clock_step(db, now)
            db.execute("UPDATE jobs_clock_mark SET high_water = ? WHERE id = 1", (ts(now),))
        else:
            raise_clock_mark(db, now)
        report = claim_due(
            db, now, runner.claimed_by, max_concurrent=max_concurrent, window_seconds=window_seconds
        )
    report.reconciled, report.expired, report.rescheduled = reconciled, expired, rescheduled
    return report


def config_snapshot(job: Job, extra: dict[str, Any]) -> str:
    return json.dumps(
        {
            "kind": job.kind,
            "schedule": job.schedule,
            "timezone": job.timezone,
            "trust": job.created_by_trust,
            "policy_ceiling": list(job.policy_ceiling),
            "allowed_tools": None if job.allowed_tools is None else list(job.allowed_tools),
            "skill_name": job.skill_name,
            "timeout_seconds": job.timeout_seconds,
            "inactivity_timeout_seconds": job.inactivity_timeout_seconds,
            "delivery": {"mode": job.delivery_mode, "target": job.delivery_target},
            **extra,
        },
        sort_keys=True,
    )
