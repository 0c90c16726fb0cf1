"""The front of `fermix jobs run`: the scheduler lock and the idle check, before anything heavy is imported.

Most minutes nothing is due. Then a tick is: start Python, take the lock, three indexed reads, exit;
the claim machinery, the config validators and subprocess handling are imported only when there is
something to do.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .liveness import SchedulerLock
from .model import ts

if TYPE_CHECKING:
    from ..core.context import ToolContext


@dataclass
class Summary:
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


def nothing_to_do(db: sqlite3.Connection, now: datetime) -> bool:
    """The idle check a tick makes before taking any write lock: no active run, no due job, no expiry."""
    stamp = ts(now)
    return (
        db.execute("SELECT 1 FROM job_runs WHERE status IN ('queued', 'running') LIMIT 1").fetchone() is None
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
    )


@dataclass(frozen=True)
class JobsSettings:
    """The `[fermix_core.jobs]` keys a tick reads, as validated by `JobsConfig`."""

    run_freshness_window_seconds: int
    max_concurrent_runs: int
    max_runs_per_job: int


_SETTINGS = tuple(JobsSettings.__dataclass_fields__)


def _stat_key(path: Path) -> list[int] | str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "absent"
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def jobs_config(ctx: ToolContext) -> JobsSettings:
    """`[fermix_core.jobs]` for a tick, validated once per version of config.toml.

    Validating means importing pydantic and building the section's validator, which costs more than the
    rest of a tick; so the validated values are kept in `<data dir>/run/jobs-config.json`, keyed by the
    file's inode, size and times, and a tick whose config.toml is unchanged reads them back. Any change
    to the file (or a missing or unreadable cache) means a full, strict validation again.
    """
    cached = ctx.extras.get("jobs_settings")
    if isinstance(cached, JobsSettings):
        return cached
    if ctx._config is not None:
        section = ctx._config.fermix_core.jobs
        settings = JobsSettings(**{k: getattr(section, k) for k in _SETTINGS})
    else:
        settings = _cached_settings(ctx)
    ctx.extras["jobs_settings"] = settings
    return settings


def _cached_settings(ctx: ToolContext) -> JobsSettings:
    source = ctx.paths.config_file
    cache = ctx.paths.run_dir / "jobs-config.json"
    key = _stat_key(source)
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data["key"] == key:
            return JobsSettings(**{k: int(data["values"][k]) for k in _SETTINGS})
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no usable cache: validate
    from ..core.config import load_jobs_config

    section = load_jobs_config(source)
    values = {k: getattr(section, k) for k in _SETTINGS}
    try:
        ctx.paths.ensure_dir(cache.parent)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"key": key, "values": values}), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # the cache only saves time
    return JobsSettings(**values)


def run_tick(ctx: ToolContext, *, use_lock: bool = True) -> tuple[int, Summary]:
    """One `fermix jobs run`: (exit code, summary). A held scheduler lock means another tick is claiming."""
    t0 = time.monotonic()
    lock = SchedulerLock(ctx.paths)
    if use_lock and not lock.try_acquire():
        return 0, Summary(status="busy")
    try:
        idle = nothing_to_do(ctx.state.conn, ctx.now())
    except BaseException:
        lock.release()
        raise
    if idle:
        lock.release()
        return 0, Summary(status="idle", timings_ms={"total": round((time.monotonic() - t0) * 1000, 2)})
    from .runner import run_scheduler

    return run_scheduler(ctx, lock if use_lock else None, t0)
