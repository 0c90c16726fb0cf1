"""The light pieces of a `fermix jobs run` tick: its summary, the idle check and the settings it reads.

`conductor` drives a tick with these before anything heavy is imported; `runner` reports into `Summary`.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.records import Record, field
from .job import ts

if TYPE_CHECKING:
    from ..core.context import ToolContext
    from .config import JobsConfig


class Summary(Record):
    """What `fermix jobs run` prints."""

    status: str = "ran"
    tick: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def merge(self, report: Any) -> None:
        for key, value in report.as_dict().items():
            self.tick.setdefault(key, []).extend(value)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, **self.tick, "runs": self.runs, "timings_ms": self.timings_ms}

    @property
    def quiet(self) -> bool:
        return self.status in ("idle", "busy") or not (self.runs or any(self.tick.values()))


# How far a tick's "now" may lie behind the clock mark without being taken for a backward clock step: it
# covers a tick that took its "now" and then waited for the write lock while a job was scheduled or
# another runner's tick claimed (overlapping runners), and small clock corrections.
CLOCK_STEP_MARGIN = timedelta(minutes=5)


def raise_clock_mark(db: sqlite3.Connection, now: datetime) -> None:
    """Raise the clock mark (`jobs_clock_mark`, one row) to `now` if that is later; inside a write that
    computes next runs anyway (a writing tick, schedule_job, update_job, resume_job)."""
    db.execute(
        "INSERT INTO jobs_clock_mark (id, high_water) VALUES (1, ?)"
        " ON CONFLICT(id) DO UPDATE SET high_water = max(high_water, excluded.high_water)",
        (ts(now),),
    )


def clock_stepped_back(db: sqlite3.Connection, now: datetime) -> bool:
    """Whether `now` lies more than CLOCK_STEP_MARGIN before the clock mark: some next run may have been
    computed at a later "now" than this one's clock will reach for a while. One primary-key read."""
    return (
        db.execute(
            "SELECT 1 FROM jobs_clock_mark WHERE id = 1 AND high_water > ?", (ts(now + CLOCK_STEP_MARGIN),)
        ).fetchone()
        is not None
    )


def nothing_to_do(db: sqlite3.Connection, now: datetime) -> bool:
    """The idle check a tick makes before taking any write lock: no active run, no due job, no expiry, no
    backward clock step to correct. It only reads: an idle tick writes nothing, not even the clock mark
    (which only writes that compute next runs raise, so it still bounds every stored next run)."""
    stamp = ts(now)
    return (
        db.execute("SELECT 1 FROM job_runs WHERE status IN ('queued', 'running') LIMIT 1").fetchone() is None
        and db.execute("SELECT 1 FROM job_runs WHERE delivery_status = 'pending' LIMIT 1").fetchone() is None
        and db.execute(
            "SELECT 1 FROM scheduled_jobs WHERE state = 'scheduled' AND next_run_at <= ? LIMIT 1", (stamp,)
        ).fetchone()
        is None
        and db.execute(
            "SELECT 1 FROM scheduled_jobs WHERE expires_at IS NOT NULL AND expires_at <= ?"
            " AND state IN ('scheduled', 'paused') LIMIT 1",
            (stamp,),
        ).fetchone()
        is None
        # The clock stepped back: next runs may need pulling back (claims.reschedule_after_clock_step).
        and not clock_stepped_back(db, now)
    )


def jobs_config(ctx: ToolContext) -> JobsConfig:
    """`[fermix_core.jobs]` for a tick, from the config loaded the normal way.

    A config that is invalid elsewhere does not stop the tick: its runs fail with `invalid_config`,
    recorded where `fermix jobs runs` shows them; the jobs section itself is still checked strictly
    (an error in it stops the tick, naming the key).
    """
    try:
        return ctx.config.fermix_core.jobs
    except ToolError as e:
        if e.code != "invalid_config" or str(e.details.get("key", "")).startswith("fermix_core.jobs"):
            raise
    cached = ctx.extras.get("jobs_section")
    if cached is None:
        from ..core.config import load_section

        cached = ctx.extras["jobs_section"] = load_section(ctx.paths.config_file, ("fermix_core", "jobs"))
    return cached  # type: ignore[no-any-return]
