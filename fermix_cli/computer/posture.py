"""Who may drive the desktop, and how far: the origin rules and the posture the sandbox mode implies.

- Origin: operator-only, top level, attended, and only from the owner's terminal (`fermix tool`,
  `fermix ask`) or an interactive chat. Subagents, skills, MCP clients, scheduled and cron runs fail closed.
- Posture (there is no separate knob): `strict` looks only; `standard` acts, but the owner confirms any
  input that commits or destroys (Enter, Delete, save/close/quit chords, text ending a line); `open` acts,
  and the owner confirms only catastrophic input (session kill, VT switch, logout, SysRq).
- `/pause` in `fermix agent` hands the cursor back: every action is refused until `/resume`.
"""

from __future__ import annotations

from typing import Literal

from ..core.approval import can_confirm, confirm_with_owner
from ..core.context import ToolContext
from ..core.errors import ExitClass, ToolError

Posture = Literal["look_only", "confirm_irreversible", "act"]
POSTURES: dict[str, Posture] = {"strict": "look_only", "standard": "confirm_irreversible", "open": "act"}

READ_ONLY_ACTIONS = frozenset(
    {"screenshot", "inspect", "elements", "windows", "wait_for_change", "mouse_move", "wait"}
)
MUTATING_ACTIONS = frozenset(
    {"left_click", "right_click", "double_click", "left_click_drag", "scroll", "type", "paste", "key"}
)
ALLOWED_ORIGINS = ("cli", "interactive")

# Keys whose press commits or destroys something: submit, delete, and the save/close/quit chords.
_COMMIT_KEYS = frozenset({"Return", "KP_Enter", "Delete", "KP_Delete"})
_COMMIT_CHORDS = frozenset(
    frozenset(c)
    for c in (
        ("ctrl", "s"),
        ("ctrl", "w"),
        ("ctrl", "q"),
        ("ctrl", "x"),
        ("ctrl", "d"),
        ("ctrl", "Return"),
        ("alt", "F4"),
        ("shift", "Delete"),
        ("super", "q"),
        ("super", "w"),
    )
)
_CATASTROPHIC = frozenset(
    frozenset(c)
    for c in (
        ("alt", "ctrl", "Delete"),
        ("alt", "ctrl", "BackSpace"),
        ("alt", "Sys_Req"),
        ("Sys_Req",),
        ("super", "l"),  # screen lock (GNOME, KDE)
        ("alt", "ctrl", "l"),  # screen lock (Xfce, Cinnamon, MATE, older GNOME)
        *(("alt", "ctrl", f"F{n}") for n in range(1, 13)),
    )
)


_MODIFIERS = frozenset({"ctrl", "alt", "shift", "super"})


def _holds(keys: frozenset[str], table: frozenset[frozenset[str]]) -> bool:
    """Whether `keys` is a chord of `table` with, at most, more modifiers held (ctrl+shift+s is ctrl+s to
    an application that does not bind it, and save-as where it does: never less than ctrl+s)."""
    return any(base <= keys and keys - base <= _MODIFIERS for base in table)


def posture_of(ctx: ToolContext) -> Posture:
    return POSTURES.get(ctx.config.sandbox.mode, "look_only")


def origin_refusal(ctx: ToolContext) -> ToolError | None:
    """Why this context may not drive the desktop at all, or None."""
    if ctx.trust != "operator":
        why = "computer_use is operator-only"
    elif ctx.depth > 0 or ctx.origin == "subagent":
        why = "computer_use is never delegated to a subagent"
    elif ctx.spawned_cli_call():
        why = (
            "computer_use cannot be run by a command fermix itself started (a model's shell call, a job's "
            "command): the owner runs it at the terminal, or a model calls it directly"
        )
    elif ctx.origin not in ALLOWED_ORIGINS or ctx.job_id is not None or not ctx.attended:
        why = (
            f"computer_use cannot start from a {ctx.origin} origin: a desktop session begins only from an "
            "interactive chat or the owner's terminal (fermix ask, fermix tool); scheduled and cron runs "
            "fail closed"
        )
    else:
        return None
    return ToolError(
        "not_attended", f"{why}.", {"origin": ctx.origin, "trust": ctx.trust, "depth": ctx.depth}
    )


def severity(action: str, chord: tuple[str, ...] | None, text: str | None) -> str | None:
    """`catastrophic`, `irreversible`, or None for input that commits nothing by itself."""
    if action == "key" and chord:
        keys = frozenset(chord)
        if _holds(keys, _CATASTROPHIC):
            return "catastrophic"
        if _holds(keys, _COMMIT_CHORDS) or chord[-1] in _COMMIT_KEYS:
            return "irreversible"
    if action in ("type", "paste") and text is not None and ("\n" in text or "\r" in text):
        return "irreversible"
    return None


def check_posture(ctx: ToolContext, action: str, summary: str, grade: str | None) -> None:
    """Refuse a mutating action `strict` forbids; ask the owner where the posture says so."""
    if action not in MUTATING_ACTIONS:
        return
    posture = posture_of(ctx)
    if posture == "look_only":
        raise ToolError(
            "look_only",
            f"the sandbox mode is strict, so computer_use is look-only: {action} was not performed. "
            "Screenshots, windows and waits still work; the owner can allow input by switching the sandbox "
            "mode to standard (fermix config set sandbox.mode standard).",
            {"action": action, "posture": posture},
            exit_class=ExitClass.REFUSED,
        )
    needs = grade == "catastrophic" or (grade == "irreversible" and posture == "confirm_irreversible")
    if not needs:
        return
    if ctx.origin == "cli" and "call_id" not in ctx.extras:
        return  # the owner typed this exact action at the terminal (`fermix tool computer_use`)
    if not can_confirm(ctx):
        raise ToolError(
            "needs_confirmation",
            f"{summary} may be {grade} and the owner must confirm it, but nobody can be asked here. "
            "Ask the owner in your reply, or let them perform it themselves.",
            {"action": action, "severity": grade, "posture": posture},
            exit_class=ExitClass.REFUSED,
        )
    if not confirm_with_owner(ctx, f"Let the agent {summary} on your desktop?", {"severity": grade}):
        raise ToolError(
            "declined",
            f"the owner declined: {summary} was not performed. Do not retry it; ask the owner what to do.",
            {"action": action, "severity": grade},
            exit_class=ExitClass.REFUSED,
        )
