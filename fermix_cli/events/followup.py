"""The follow-up check-in (seed `followup`): after a reminder is delivered, one short, best-effort agent
turn may offer help or ask one question, sent to the same channel; `[SILENT]` sends nothing.

The turn runs like an owner's scheduled job (origin scheduled, unattended) restricted to event_list,
memory_recall and memory_store, on the cron route (`[fermix_core.routing] cron_provider`, `cron_model`,
`cron_reasoning_effort`). Its outcome never changes the reminder's own delivery record, only
`followup_status`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

    from ..core.context import ToolContext

FOLLOWUP_TOOLS = ("event_list", "memory_recall", "memory_store")
SILENT = "[SILENT]"
MAX_ITERATIONS = 4
SYSTEM = (
    "You are fermix, checking in right after a reminder reached the owner. In one or two short sentences, "
    "offer concrete help or ask one question about the date; you may look at event_list and at memories. "
    f"If there is nothing useful to add, answer exactly {SILENT}."
)


def followup_turn(ctx: ToolContext, r: sqlite3.Row, reminder_text: str) -> tuple[str, str | None]:
    """(status, text to send or None): `silent`, `ready`, or `error: ...` (recorded, never raised)."""
    from ..agent.assemble import Agent, AgentOptions
    from ..core.errors import ToolError

    try:
        routing = ctx.config.fermix_core.routing
        run_ctx = ctx.derive(
            origin="scheduled",
            attended=False,
            depth=0,
            allowed_tools=frozenset(FOLLOWUP_TOOLS),
            job_id=f"followup_{r['event_id']}",
            session_id=f"followup_{r['id']}",
        )
        options = AgentOptions(
            provider=routing.cron_provider,
            model=routing.cron_model,
            reasoning_effort=routing.cron_reasoning_effort,
            system=SYSTEM,
            tools=list(FOLLOWUP_TOOLS),
            session=run_ctx.session_id,
            max_iterations=MAX_ITERATIONS,
            cap_source=f"the follow-up check-in's fixed cap of {MAX_ITERATIONS} model calls",
        )
        agent = Agent(run_ctx, options)
        try:
            result = agent.run(f"The reminder just delivered:\n{reminder_text}")
        finally:
            agent.close()
    except ToolError as e:
        return f"error: {e.code}: {e.message}"[:500], None
    if result.status != "ok":
        said = f": {result.error.message}" if result.error is not None else ""
        return f"error: {result.status}{said}"[:500], None
    text = (result.response or "").strip()
    if not text or text == SILENT:
        return "silent", None
    return "ready", text


def run_followups(ctx: ToolContext, rows: list[Any], send: Any, record: Any) -> None:
    """For each delivered reminder of a follow-up event: one turn, then its text to the same channel."""
    from .messages import reminder_text

    for r in rows:
        status, text = followup_turn(ctx, r, reminder_text(r, ctx.now()))
        if text is not None:
            status = send(r, text)
        record(r, status)
