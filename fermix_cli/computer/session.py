"""What the latest look of a session showed, and the owner's pause switch, in state.db.

Each process (`fermix tool computer_use` calls, or one model run) reads the session's latest view before
acting on coordinates, so the aiming rules hold across calls.
"""

from __future__ import annotations

import json

from ..core.context import ToolContext
from ..core.errors import ExitClass, ToolError
from .geometry import View


def latest_view(ctx: ToolContext) -> View | None:
    rows = ctx.state.query("SELECT view_json FROM computer_use_views WHERE session_id = ?", (ctx.session_id,))
    return View.of(json.loads(rows[0]["view_json"])) if rows else None


def remember_view(ctx: ToolContext, view: View, screenshot: str) -> None:
    now = ctx.now().isoformat()
    with ctx.state.write() as db:
        db.execute(
            "INSERT INTO computer_use_views (session_id, view_json, screenshot, updated_at) VALUES (?,?,?,?)"
            " ON CONFLICT(session_id) DO UPDATE SET view_json = excluded.view_json,"
            " screenshot = excluded.screenshot, updated_at = excluded.updated_at",
            (ctx.session_id, json.dumps(view.to_json()), screenshot, now),
        )


def is_paused(ctx: ToolContext) -> bool:
    rows = ctx.state.query("SELECT paused FROM computer_use_control WHERE id = 1")
    return bool(rows and rows[0]["paused"])


def set_paused(ctx: ToolContext, paused: bool) -> bool:
    """Set the switch; True when it changed."""
    before = is_paused(ctx)
    with ctx.state.write() as db:
        db.execute(
            "INSERT INTO computer_use_control (id, paused, changed_at) VALUES (1, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET paused = excluded.paused, changed_at = excluded.changed_at",
            (int(paused), ctx.now().isoformat()),
        )
    return before != paused


def check_not_paused(ctx: ToolContext, action: str) -> None:
    if is_paused(ctx):
        raise ToolError(
            "paused",
            f"the owner paused computer use (/pause), so {action} was not performed. Wait for the owner to "
            "/resume; do not try to work around it.",
            {"action": action},
            exit_class=ExitClass.REFUSED,
        )
