"""Progress notices of a run launched with `progress: milestones`: at most one per 60 s, only when it moved.

A milestone is a finished step in the vendor's event stream: a Codex `item.completed` (a command run, a
file change, a message) or a Claude Code `assistant` event. A notice says how many steps are done and
what the latest was. It goes where the outcome will go: the owner's channel for a job launch (sent by
`fermix jobs run`), the next turn of the launching session otherwise. Notices are best effort; the
outcome's delivery is the one that is retried.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .outcome import read_tail
from .store import parse_ts, ts

if TYPE_CHECKING:
    import sqlite3

    from ..core.context import ToolContext

MIN_GAP_S = 60
SCAN_BYTES = 4 * 1024 * 1024


def _step(vendor: str, event: dict[str, Any]) -> str | None:
    """A short description of the milestone `event` is, or None when it is none."""
    if vendor == "codex":
        item = event.get("item") if event.get("type") == "item.completed" else None
        if not isinstance(item, dict) or item.get("type") == "reasoning":
            return None
        kind = item.get("type")
        if kind == "command_execution":
            return f"ran {str(item.get('command', ''))[:120]}"
        if kind == "file_change":
            paths = [c.get("path") for c in item.get("changes", []) if isinstance(c, dict)]
            return "changed " + ", ".join(str(p) for p in paths[:5])
        return str(kind or "step")
    if event.get("type") != "assistant":
        return None
    content = (event.get("message") or {}).get("content") or []
    tools = [c.get("name") for c in content if isinstance(c, dict) and c.get("type") == "tool_use"]
    return f"used {', '.join(str(t) for t in tools)}" if tools else "wrote a message"


def milestones(row: sqlite3.Row) -> tuple[int, str]:
    """(steps done, latest step) of a run, read from its event stream."""
    count, latest = 0, ""
    for line in read_tail(os.path.join(row["run_dir"], "stdout.log"), SCAN_BYTES).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        step = _step(row["vendor"], event) if isinstance(event, dict) else None
        if step is not None:
            count, latest = count + 1, step
    return count, latest


def due_notices(ctx: ToolContext, rows: list[sqlite3.Row]) -> list[tuple[sqlite3.Row, str]]:
    """(run, text) for each running milestones run that moved and was last reported 60 s ago or more."""
    now = ctx.now()
    out = []
    for row in rows:
        if row["status"] != "running" or row["progress"] != "milestones" or row["rail"] != "local":
            continue
        if row["progress_at"] and now - parse_ts(row["progress_at"]) < timedelta(seconds=MIN_GAP_S):
            continue
        count, latest = milestones(row)
        if count <= row["progress_mark"]:
            continue
        out.append(
            (
                row,
                f"[coding run {row['id']}] still running in {row['cwd']}: {count} steps so far; latest: {latest}",
            )
        )
        with ctx.state.write() as db:
            db.execute(
                "UPDATE coding_runs SET progress_mark = ?, progress_at = ? WHERE id = ?",
                (count, ts(now), row["id"]),
            )
    return out
