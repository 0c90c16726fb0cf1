"""Helpers for the end-to-end coding tool tests: CLI calls with a session, and state.db inspection."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import Env, Result


def cli(
    world: Env, name: str, args: dict[str, Any], *, session: str | None = None, cwd: Path | None = None
) -> Result:
    """One real `fermix tool NAME` process, optionally with `--session`."""
    head = ("--session", session) if session else ()
    return world.run(*head, "tool", name, "--json", json.dumps(args), cwd=cwd)


def header(result: Result) -> str:
    """The `[path#TAG]` first line of a successful read, write or hash_edit."""
    content = result.json()["content"]
    return next(line for line in content.split("\n") if line.startswith("["))


def snapshots(world: Env) -> list[dict[str, Any]]:
    """Every stored snapshot row, oldest first."""
    db = world.fermix_home / "state.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [
            dict(r)
            for r in conn.execute(
                "SELECT session_id, path, tag, text, seen, recorded_at FROM hashline_snapshots ORDER BY seq"
            )
        ]
    finally:
        conn.close()


def config(world: Env, text: str) -> None:
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(text)


def leftovers(directory: Path) -> list[str]:
    """Temp files an atomic write might have left behind."""
    return sorted(n for n in os.listdir(directory) if ".tmp-" in n)
