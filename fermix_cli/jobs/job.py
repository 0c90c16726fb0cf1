"""Scheduled jobs as data: the row shapes of `scheduled_jobs` and `job_runs`, timestamps, states.

Everything here is pure. Timestamps in the database are fixed-width ISO-8601 UTC with six-digit
microseconds and `Z`, so string comparison in SQL is time comparison.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from datetime import UTC, datetime
from typing import Any

from ..core.errors import ToolError
from ..core.records import Record

JOB_STATES = ("scheduled", "paused", "running", "completed", "disabled", "expired")
RUN_STATUSES = ("queued", "running", "ok", "error", "skipped")
ACTIVE_RUN_STATUSES = ("queued", "running")
TRIGGERS = ("schedule", "manual")
DELIVERY_MODES = ("none", "origin", "channel", "local")
JOB_KINDS = ("agent", "command")

# A final answer of exactly this delivers nothing (reference 8.2).
SILENT = "[SILENT]"

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_SLUG_DROP = re.compile(r"[^a-z0-9]+")
SLUG_MAX = 48


def ts(moment: datetime) -> str:
    """A stored timestamp: fixed-width UTC, so string order is time order."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment.isoformat()}")
    utc = moment.astimezone(UTC)
    # strftime's %Y does not zero-pad years before 1000 (glibc): "999-06-01" would sort after "2026-...".
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S.%fZ}"


def parse_ts(text: str) -> datetime:
    """The aware UTC instant of a stored timestamp."""
    return datetime.strptime(text, _TS_FORMAT).replace(tzinfo=UTC)


def compact_ts(moment: datetime) -> str:
    """`20260329T060000123456Z`: for session ids and file names."""
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}{utc:%m%dT%H%M%S%fZ}"


def slugify(name: str) -> str:
    """A job id from its name: lower-case ASCII letters and digits joined by `-`; `job` if nothing is left."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    slug = _SLUG_DROP.sub("-", folded).strip("-")[:SLUG_MAX].strip("-")
    return slug or "job"


def session_id_for(job_id: str, moment: datetime, run_id: str) -> str:
    """A run's session id: `cron_<job>_<ts>`, plus a piece of the run id so no two runs share a transcript."""
    return f"cron_{job_id}_{compact_ts(moment)}_{run_id[-6:]}"


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class Job(Record, frozen=True):
    """One `scheduled_jobs` row."""

    id: str
    name: str
    kind: str
    task: str
    description: str | None
    schedule: str
    schedule_kind: str
    timezone: str
    state: str
    next_run_at: str | None
    expires_at: str | None
    allowed_tools: tuple[str, ...] | None
    skill_name: str | None
    provider: str | None
    model: str | None
    timeout_seconds: int
    inactivity_timeout_seconds: int
    delivery_mode: str
    delivery_target: dict[str, Any] | None
    created_by_agent_id: str
    created_by_session_id: str
    created_by_channel: str
    created_by_trust: str
    policy_ceiling: tuple[str, ...]
    created_at: str
    updated_at: str
    paused_at: str | None
    last_run_id: str | None
    last_run_at: str | None
    last_status: str | None
    last_error: str | None
    run_count: int

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Job:
        data = {k: row[k] for k in cls.__record_fields__}
        tools = _loads(data["allowed_tools"])
        data["allowed_tools"] = None if tools is None else tuple(tools)
        data["delivery_target"] = _loads(data["delivery_target"])
        data["policy_ceiling"] = tuple(_loads(data["policy_ceiling"]))
        return cls(**data)

    @property
    def recurring(self) -> bool:
        return self.schedule_kind != "once"

    def shown_state(self, now: datetime | None) -> str:
        """The state as shown: a job past its `expires_at` is `expired` even before a tick records it."""
        if (
            now is not None
            and self.state in ("scheduled", "paused")
            and self.expires_at is not None
            and self.expires_at <= ts(now)
        ):
            return "expired"
        return self.state

    def as_dict(self, now: datetime | None = None) -> dict[str, Any]:
        """The job as tools and `fermix jobs` show it.

        `next_run_at` is null for a paused job (resume_job computes it afresh from the time of resuming)
        and, given `now`, for one past its `expires_at`, shown `expired`.
        """
        state = self.shown_state(now)
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "task_prompt": self.task if self.kind == "agent" else None,
            "command": self.task if self.kind == "command" else None,
            "description": self.description,
            "schedule": self.schedule,
            "schedule_kind": self.schedule_kind,
            "timezone": self.timezone,
            "state": state,
            "next_run_at": None if state in ("paused", "expired") else self.next_run_at,
            "expires_at": self.expires_at,
            "allowed_tools": None if self.allowed_tools is None else list(self.allowed_tools),
            "skill_name": self.skill_name,
            "route_pin": {"provider": self.provider, "model": self.model} if self.provider else None,
            "timeout_seconds": self.timeout_seconds,
            "inactivity_timeout_seconds": self.inactivity_timeout_seconds,
            "delivery": {"mode": self.delivery_mode, "target": self.delivery_target},
            "created_by": {
                "agent_id": self.created_by_agent_id,
                "session_id": self.created_by_session_id,
                "channel": self.created_by_channel,
                "trust": self.created_by_trust,
            },
            "policy_ceiling": list(self.policy_ceiling),
            "memory_source": f"job:{self.id}",
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "paused_at": self.paused_at,
            "run_count": self.run_count,
            "last_run": (
                {
                    "run_id": self.last_run_id,
                    "at": self.last_run_at,
                    "status": self.last_status,
                    "error": self.last_error,
                }
                if self.last_run_id or self.last_error
                else None
            ),
        }


RUN_SUMMARY_COLUMNS = (
    "id, job_id, trigger, scheduled_for, status, reason, queued_at, started_at, finished_at, duration_ms,"
    " session_id, final_response, error_code, error, silent, delivery_status"
)


def run_summary(row: sqlite3.Row) -> dict[str, Any]:
    """A run as `list_job_runs` shows it: status, trigger, timing, final response, error."""
    return {
        "run_id": row["id"],
        "job_id": row["job_id"],
        "trigger": row["trigger"],
        "scheduled_for": row["scheduled_for"],
        "status": row["status"],
        "reason": row["reason"],
        "queued_at": row["queued_at"],
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
        "duration_ms": row["duration_ms"],
        "session_id": row["session_id"],
        "final_response": row["final_response"],
        "error": {"code": row["error_code"], "message": row["error"]} if row["error_code"] else None,
        "silent": bool(row["silent"]),
        "delivery_status": row["delivery_status"],
    }


def run_detail(row: sqlite3.Row) -> dict[str, Any]:
    """A run in full, as `get_job_run` shows it."""
    out = run_summary(row)
    out.update(
        {
            "claimed_by": row["claimed_by"],
            "lease_until": row["lease_until"],
            "task_prompt": row["task_prompt"],
            "prompt_snapshot": row["prompt_snapshot"],
            "config_snapshot": _loads(row["config_snapshot"]),
            "usage": _loads(row["usage"]),
            "iterations": row["iterations"],
            "attempts": row["attempts"],
            "tool_failures": _loads(row["tool_failures"]) or [],
            "delivery": {"status": row["delivery_status"], "detail": _loads(row["delivery_detail"])},
            "output_path": row["output_path"],
        }
    )
    return out


# ----- reads every part of jobs needs -------------------------------------------------------------


def not_found(job_id: str) -> ToolError:
    return ToolError(
        "not_found", f"No job with id {job_id!r}. Run list_jobs to see the ids.", {"job_id": job_id}
    )


def job_state_error(job: Job, action: str, why: str = "") -> ToolError:
    return ToolError(
        "job_state",
        f"job {job.id} is {job.state}; {action} refuses {job.state} jobs.{(' ' + why) if why else ''}",
        {"job_id": job.id, "state": job.state},
    )


def fetch_job(db: sqlite3.Connection, job_id: str) -> Job:
    row = db.execute("SELECT * FROM scheduled_jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        raise not_found(job_id)
    return Job.from_row(row)


def active_run(db: sqlite3.Connection, job_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute(
        "SELECT id, status, trigger FROM job_runs WHERE job_id = ? AND status IN ('queued', 'running')",
        (job_id,),
    ).fetchone()
    return row
