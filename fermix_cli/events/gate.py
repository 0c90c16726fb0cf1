"""Who may use the events tools (reference 9.1): an attended, top-level owner turn; event_list also in
a scheduled job the owner created. Checked at advertisement (`available`) and at dispatch (`gate`)."""

from __future__ import annotations

from ..core.context import ToolContext
from ..core.errors import ToolError


def attended_turn(ctx: ToolContext) -> bool:
    """An owner at the keyboard or in a live chat: operator, attended, top level, not a job.

    A CLI call from a process fermix started (a tool's shell, a coding run) is not the owner at the
    keyboard: it counts as unattended (reference 9.1 "Spawned processes").
    """
    return (
        ctx.trust == "operator"
        and ctx.attended
        and ctx.origin in ("cli", "interactive")
        and isinstance(ctx.depth, int)
        and ctx.depth == 0
        and ctx.job_id is None
        and not ctx.spawned_cli_call()
    )


def owners_job(ctx: ToolContext) -> bool:
    """A scheduled job the owner created (its trust is stamped operator at creation and never widens)."""
    return ctx.trust == "operator" and ctx.origin == "scheduled" and ctx.job_id is not None and ctx.depth == 0


def _refuse(tool: str, ctx: ToolContext, also: str = "") -> ToolError:
    """`not_attended`, in the reference's words (9.1), saying who is refused and what to do instead."""
    details = {"tool": tool, "origin": ctx.origin, "trust": ctx.trust, "attended": ctx.attended}
    if ctx.spawned_cli_call():
        return ToolError(
            "not_attended",
            f"{tool} is available only on an attended, top-level turn of the owner{also}; this call comes "
            "from a process fermix started (a tool's shell, a coding run), which counts as unattended. "
            "The owner runs it from their own terminal or a live chat.",
            {**details, "spawned": True},
        )
    if also:  # event_list: it also runs in the owner's scheduled jobs
        who = "guests, subagents, skills and other background work cannot read reminders"
    else:
        who = (
            "background work (a scheduled job), guests, subagents and skills cannot change reminders; "
            "say in your reply what should change, and the owner can do it in a chat or with `fermix events`"
        )
    return ToolError(
        "not_attended",
        f"{tool} is available only on an attended, top-level turn of the owner{also}; {who}.",
        details,
    )


def attended_gate(tool: str):  # type: ignore[no-untyped-def]
    def gate(ctx: ToolContext) -> None:
        if not attended_turn(ctx):
            raise _refuse(tool, ctx)

    return gate


def list_available(ctx: ToolContext) -> bool:
    return attended_turn(ctx) or owners_job(ctx)


def list_gate(ctx: ToolContext) -> None:
    if not list_available(ctx):
        raise _refuse("event_list", ctx, " or in a scheduled job the owner created")


def conversation_of(ctx: ToolContext) -> str | None:
    """This turn's conversation: the chat's id when a channel set one, `cli` for the owner's terminal."""
    chat = ctx.extras.get("conversation_id")
    if isinstance(chat, str) and chat:
        return chat
    return "cli" if ctx.origin == "cli" else None


def delivery_conversation(platform: str, address: str) -> str:
    """The conversation a delivery lands in: the local inbox is read at the owner's terminal (`cli`)."""
    return "cli" if platform == "inbox" else f"{platform}:{address}"
