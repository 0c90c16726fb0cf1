"""Helpers for the events tests: a fake clock, in-process tool calls, the real CLI and state.db peeks."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env, Result

NOW = datetime(2026, 9, 1, 8, 0, tzinfo=UTC)
CONFIG = """
[fermix_core.personalization]
timezone = "{zone}"
[fermix_core.jobs]
default_delivery_target = {{platform = "inbox", recipient = "owner"}}
"""


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class Events:
    def __init__(self, world: Env) -> None:
        self.world = world
        self.now = NOW

    def config(self, zone: str | None = "Europe/Berlin", text: str | None = None) -> None:
        self.world.fermix_home.mkdir(parents=True, exist_ok=True)
        body = CONFIG.format(zone=zone) if text is None else text
        if zone is None and text is None:
            body = "\n".join(line for line in body.splitlines() if "timezone" not in line)
        (self.world.fermix_home / "config.toml").write_text(body)

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

    def store(self, title: str = "Dentist", kind: str = "appointment", **args: Any) -> dict[str, Any]:
        at = args.pop("at", None)
        args.setdefault("when", {"type": "datetime", "date": "2026-09-10", "time": "09:30:00"})
        return self.call("event_store", {"title": title, "kind": kind, **args}, at=at)

    def env(self, at: datetime | None = None) -> dict[str, str]:
        env = self.world.env
        env["FERMIX_NOW"] = iso(at or self.now)
        return env

    def cli(
        self, *args: str, at: datetime | None = None, timeout: float = 120, env: dict[str, str] | None = None
    ) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "fermix_cli", *args],
            capture_output=True,
            text=True,
            cwd=self.world.project,
            env={**self.env(at), **(env or {})},
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def tick(self, at: datetime) -> dict[str, Any]:
        r = self.cli("jobs", "run", "--json", at=at)
        assert r.code == 0, r.stderr
        out: dict[str, Any] = json.loads(r.stdout)
        return out.get("due_work", {}).get("reminders", {"status": "idle"})

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        conn = sqlite3.connect(self.world.fermix_home / "state.db", timeout=30)
        conn.row_factory = sqlite3.Row
        try:
            return conn.execute(query, params).fetchall()
        finally:
            conn.close()

    def count(self, table: str) -> int:
        if not (self.world.fermix_home / "state.db").exists():
            return 0
        return int(self.sql(f"SELECT count(*) FROM {table}")[0][0])

    def inbox(self, name: str = "owner") -> list[dict[str, Any]]:
        path = self.world.fermix_home / "inbox" / f"{name}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]
