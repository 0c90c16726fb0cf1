"""Helpers for the scheduled-jobs tests: a fixed clock, in-process tool calls, and state.db peeks."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env, Result

NOW = datetime(2026, 3, 2, 7, 59, 30, tzinfo=UTC)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso(moment: datetime) -> str:
    """FERMIX_NOW's form."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Jobs:
    """One test's fermix home, seen through the job tools (in-process) and state.db."""

    def __init__(self, world: Env) -> None:
        self.world = world
        self.now = NOW

    # ----- in-process tool calls --------------------------------------------------------------

    def call(self, name: str, args: dict[str, Any], *, at: datetime | None = None, **ctx_kw: Any) -> Any:
        moment = at or self.now
        ctx = self.world.context(clock=lambda: moment, **ctx_kw)
        try:
            return default_registry().invoke(name, args, ctx)
        finally:
            ctx.close()

    def error(self, name: str, args: dict[str, Any], **kw: Any) -> ToolError:
        with pytest.raises(ToolError) as e:
            self.call(name, args, **kw)
        return e.value

    def add(
        self, name: str = "Digest", schedule: str = "every 5 minutes", task: str = "say hi", **extra: Any
    ) -> dict[str, Any]:
        at = extra.pop("at", None)
        return self.call("schedule_job", {"name": name, "schedule": schedule, "task": task, **extra}, at=at)[
            "job"
        ]

    # ----- state.db ---------------------------------------------------------------------------

    def db(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.world.fermix_home / "state.db", timeout=30)
        conn.row_factory = sqlite3.Row
        return conn

    def job(self, job_id: str) -> sqlite3.Row:
        with self.db() as c:
            return c.execute("SELECT * FROM scheduled_jobs WHERE id = ?", (job_id,)).fetchone()

    def runs(self, job_id: str) -> list[sqlite3.Row]:
        with self.db() as c:
            return c.execute(
                "SELECT * FROM job_runs WHERE job_id = ? ORDER BY scheduled_for, queued_at", (job_id,)
            ).fetchall()

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self.db() as c:
            return c.execute(query, params).fetchall()

    # ----- the real CLI ------------------------------------------------------------------------

    def env(self, at: datetime | None = None, **extra: str) -> dict[str, str]:
        env = self.world.env
        env["FERMIX_NOW"] = iso(at or self.now)
        env.update(extra)
        return env

    def cli(self, *args: str, at: datetime | None = None, timeout: float = 120, **env_extra: str) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "fermix_cli", *args],
            capture_output=True,
            text=True,
            cwd=self.world.project,
            env=self.env(at, **env_extra),
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def tick(self, at: datetime | None = None, **env_extra: str) -> dict[str, Any]:
        r = self.cli("jobs", "run", "--json", at=at, **env_extra)
        assert r.code == 0, r.stderr
        return json.loads(r.stdout)

    def config(self, text: str) -> None:
        self.world.fermix_home.mkdir(parents=True, exist_ok=True)
        (self.world.fermix_home / "config.toml").write_text(text)

    def mock_script(self, responses: list[dict[str, Any]], name: str = "script.json") -> str:
        path = self.world.root / name
        path.write_text(json.dumps(responses))
        return str(path)

    def inbox(self, name: str = "owner") -> list[dict[str, Any]]:
        path = self.world.fermix_home / "inbox" / f"{name}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


def wait_for(predicate: Callable[[], Any], timeout: float = 60, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has exited
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def later(moment: datetime, **delta: float) -> datetime:
    return moment + timedelta(**delta)


def skills_dir(world: Env) -> Path:
    return world.fermix_home / "skills"
