"""The harness's two gates and its execute-time authorization (seed 000 "Coding agents").

Registration: a tool exists only while `[fermix_core.harness] enabled` and its vendor CLI is on PATH
(the reading tools while either CLI is; the cloud tools also need `cloud_enabled`); an unregistered tool is listed nowhere and answers a call as
an unknown tool, the way the deferral bridges do. Advertisement: a registered tool is shown to a model
only once the owner set `approved = true`, and with both CLIs and a `default_vendor` only that vendor's
run tool is shown. Authorization, at dispatch and before anything is written: a live attended operator
turn, or a scheduled job whose persisted `allowed_tools` names the exact tool.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import ExitClass, ToolError

if TYPE_CHECKING:
    from ..core.context import ToolContext
    from .config import HarnessConfig

RUN_TOOLS = {"codex_run": "codex", "claude_code_run": "claude_code"}
VENDOR_TOOL = {vendor: tool for tool, vendor in RUN_TOOLS.items()}
CLOUD_TOOLS = ("codex_cloud_run", "stop_tracking_coding_run")
LAUNCH_TOOLS = (*RUN_TOOLS, "codex_cloud_run")
APPROVAL_FIX = (
    "the owner approves coding agents once on this machine, from their own terminal: "
    "fermix config set fermix_core.harness.approved true"
)


def settings(ctx: ToolContext) -> HarnessConfig:
    cfg: HarnessConfig = ctx.config.fermix_core.harness
    return cfg


def vendor_command(cfg: HarnessConfig, vendor: str) -> str:
    return cfg.codex_command if vendor == "codex" else cfg.claude_command


def vendor_executable(cfg: HarnessConfig, vendor: str) -> str | None:
    """The vendor CLI's absolute path, or None when it is not installed (not on PATH)."""
    command = vendor_command(cfg, vendor)
    if "/" in command:
        return command if os.path.isfile(command) and os.access(command, os.X_OK) else None
    return shutil.which(command)


def installed_vendors(ctx: ToolContext) -> list[str]:
    cfg = settings(ctx)
    if not cfg.enabled:
        return []
    return [v for v in ("codex", "claude_code") if vendor_executable(cfg, v) is not None]


def registered(ctx: ToolContext, tool: str) -> bool:
    """Whether `tool` exists here: enabled, and its vendor CLI (for the reading tools: either) installed."""
    vendors = installed_vendors(ctx)
    if tool in RUN_TOOLS:
        return RUN_TOOLS[tool] in vendors
    if tool in CLOUD_TOOLS:
        return settings(ctx).cloud_enabled and "codex" in vendors
    return bool(vendors)


def authorized(ctx: ToolContext, tool: str) -> bool:
    return refusal(ctx, tool) is None


def advertised(tool: str) -> Callable[[ToolContext], bool]:
    """Shown to a model (and callable by it): registered, approved and authorized here."""

    def available(ctx: ToolContext) -> bool:
        return registered(ctx, tool) and settings(ctx).approved and authorized(ctx, tool)

    return available


def shown_by_default(tool: str) -> Callable[[ToolContext], bool]:
    """With both CLIs and `default_vendor`, only that vendor's run tool is shown; the other is called by name."""

    def advertise(ctx: ToolContext) -> bool:
        default = settings(ctx).default_vendor
        if tool in RUN_TOOLS and default is not None and RUN_TOOLS[tool] != default:
            return VENDOR_TOOL[default] not in _registered_run_tools(ctx)
        return True

    return advertise


def _registered_run_tools(ctx: ToolContext) -> set[str]:
    return {VENDOR_TOOL[v] for v in installed_vendors(ctx)}


def _job_names(ctx: ToolContext, tool: str) -> bool:
    """Whether the job running `ctx` persisted an `allowed_tools` list that names `tool`."""
    if ctx.job_id is None:
        return False
    rows = ctx.state.query("SELECT allowed_tools FROM scheduled_jobs WHERE id = ?", (ctx.job_id,))
    if not rows or rows[0]["allowed_tools"] is None:
        return False
    try:
        names = json.loads(rows[0]["allowed_tools"])
    except ValueError:
        return False
    return isinstance(names, list) and tool in names


def refusal(ctx: ToolContext, tool: str) -> ToolError | None:
    """Why `ctx` may not call `tool`, as the typed error to raise, or None when it may."""
    details = {"tool": tool, "origin": ctx.origin, "trust": ctx.trust}
    if ctx.trust != "operator":
        return ToolError(
            "guest_refused",
            f"{tool} is for the owner only; a guest cannot start, read or control coding runs.",
            details,
            exit_class=ExitClass.REFUSED,
        )
    if ctx.origin == "subagent" or not isinstance(ctx.depth, int) or ctx.depth != 0:
        return ToolError(
            "subagent_refused",
            f"{tool} cannot be delegated: a subagent never drives a coding agent; ask from the top-level turn.",
            details,
            exit_class=ExitClass.REFUSED,
        )
    if ctx.origin == "scheduled":
        if _job_names(ctx, tool):
            return None
        return ToolError(
            "job_not_allowed",
            f"{tool} runs in a scheduled job only when the job's allowed_tools names it; "
            f'update the job with allowed_tools including "{tool}".',
            {**details, "job_id": ctx.job_id},
            exit_class=ExitClass.REFUSED,
        )
    if ctx.attended and ctx.origin in ("cli", "interactive") and ctx.job_id is None:
        if ctx.spawned_cli_call():
            return ToolError(
                "not_attended",
                f"{tool} refuses a call from a process fermix started (a tool's shell, a coding run); "
                "the owner calls it from their own terminal or a live chat.",
                details,
                exit_class=ExitClass.REFUSED,
            )
        return None
    return ToolError(
        "not_attended",
        f"{tool} is available only on a live attended turn of the owner or in a job that allows it; "
        "unattended runs, skills and MCP callers cannot use coding agents.",
        {**details, "attended": ctx.attended},
        exit_class=ExitClass.REFUSED,
    )


def gate(tool: str) -> Callable[[ToolContext], None]:
    """The dispatch-time check: registered (else unknown), authorized, and for a launch, approved."""

    def check(ctx: ToolContext) -> None:
        if not registered(ctx, tool):
            raise ToolError("unknown_tool", f"Unknown capability: {tool}", {"tool": tool})
        error = refusal(ctx, tool)
        if error is not None:
            raise error
        if tool in LAUNCH_TOOLS and not settings(ctx).approved:
            raise ToolError(
                "harness_not_approved",
                f"coding agents are not approved on this machine, so {tool} cannot start a run; "
                f"{APPROVAL_FIX}.",
                {"tool": tool, "fix": "fermix config set fermix_core.harness.approved true"},
                exit_class=ExitClass.REFUSED,
            )

    return check
