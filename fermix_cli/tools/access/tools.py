"""request_directory_access: ask the owner to approve a directory the sandbox denies.

Only an attended, top-level operator turn may ask. The request becomes a single-use token that lives
60 s; the owner approves it with `fermix sandbox confirm TOKEN` (or `/confirm TOKEN` in a chat) and
the grant persists to `[sandbox] allowed_roots`.
"""

from __future__ import annotations

from typing import Annotated, Any

from ...core.approval import can_confirm, confirm_with_owner
from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.grants import check_grantable
from ...core.params import Field
from ...core.pathcanon import canonicalize
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from .requests import TOKEN_TTL_S, AccessRequest, confirm_request, create_request, deny_request

NOT_ATTENDED = "directory access requests need an attended owner conversation"


class RequestDirectoryAccessParams(Params):
    path: Annotated[
        str,
        Field(
            max_length=4096, description="The directory to request access to (the path the sandbox denied)"
        ),
    ]
    reason: Annotated[
        str,
        Field(
            max_length=1000,
            description="Short, honest reason the task needs this directory, shown to the owner",
        ),
    ]


def attended_owner_turn(ctx: ToolContext) -> bool:
    """An operator at the keyboard or in an attended conversation: not a guest, a delegated run (a
    subagent, a skill), a job, any other background run, or a CLI call from a process fermix started (a
    model's shell command asking on its own). Where it is not, the tool is not offered."""
    return (
        ctx.trust == "operator"
        and ctx.origin in ("cli", "interactive")
        and ctx.attended
        and ctx.depth == 0
        and ctx.job_id is None
        and not ctx.spawned_cli_call()
    )


def attended_owner_only(ctx: ToolContext) -> None:
    """Gate: refused (`not_attended`) outside an attended owner turn, however the call got here."""
    if not attended_owner_turn(ctx):
        details = {"origin": ctx.origin, "attended": ctx.attended}
        if ctx.spawned_cli_call():
            raise ToolError(
                "not_attended",
                f"{NOT_ATTENDED}; this call comes from a process fermix started (a tool's shell, a coding "
                "run), which counts as unattended. The owner grants from their own terminal: fermix grant "
                "path DIR",
                {**details, "spawned": True},
            )
        raise ToolError("not_attended", NOT_ATTENDED, details)


def request_directory_access(p: RequestDirectoryAccessParams, ctx: ToolContext) -> dict[str, Any]:
    if not p.reason.strip():
        raise ToolError(
            "missing_reason", "reason must say why the task needs this directory", {"field": "reason"}
        )
    sandbox = ctx.sandbox
    canonical = canonicalize(sandbox.anchor(p.path))
    if sandbox.allows(canonical):
        return {
            "status": "already_allowed",
            "path": canonical,
            "message": f"Access to {canonical} is already allowed — no approval needed; retry the operation.",
        }
    canonical = check_grantable(sandbox, canonical)  # unsafe_root / not_found before anyone is asked
    req, created = create_request(ctx, canonical, p.reason.strip())
    if ctx.origin == "interactive" and can_confirm(ctx):
        return _ask_now(ctx, req)
    now = ctx.now().timestamp()
    confirm = f"fermix sandbox confirm {req.token}"
    approve = (
        f"Approve with: {confirm}"
        if ctx.origin == "cli"
        else f"Approve with /confirm {req.token} or run: {confirm}"
    )
    expires = max(0, round(req.expires_at - now))
    lead = (
        f"Directory access request for {req.path}"
        if created
        else f"A request for {req.path} is already pending with token {req.token}"
    )
    deny = f"fermix sandbox deny {req.token}"
    refuse = f"Deny with: {deny}" if ctx.origin == "cli" else f"Deny with /deny {req.token} or run: {deny}"
    message = (
        f"{lead}\nReason: {req.reason}\n"
        f'Config change: [sandbox] allowed_roots += ["{req.path}"]\n'
        f"{approve} (expires in {expires}s). {refuse}"
    )
    return {
        "status": "pending" if created else "already_pending",
        "token": req.token,
        "path": req.path,
        "reason": req.reason,
        "expires_in_s": expires,
        "ttl_s": TOKEN_TTL_S,
        "config_change": {"section": "sandbox", "key": "allowed_roots", "add": req.path},
        "confirm_command": confirm,
        "deny_command": deny,
        "message": message,
    }


def _ask_now(ctx: ToolContext, req: AccessRequest) -> dict[str, Any]:
    """In an interactive session the owner answers on the spot; the token is consumed either way."""
    approved = confirm_with_owner(
        ctx,
        f"Allow fermix to access {req.path}?",
        {"reason": req.reason, "config change": f'[sandbox] allowed_roots += ["{req.path}"]'},
    )
    if approved:
        confirm_request(ctx, req.token)
        message = f"The owner granted access to {req.path}; retry the operation."
    else:
        deny_request(ctx, req.token)
        message = f"The owner did not grant access to {req.path}. Do not retry; work within the roots."
    return {
        "status": "granted" if approved else "denied",
        "token": req.token,
        "path": req.path,
        "reason": req.reason,
        "message": message,
    }


TOOLS = specs(
    ToolSpec(
        name="request_directory_access",
        category="system",
        policy_class="external_api",
        owner_only=True,
        description=(
            "Ask the owner to approve access to a directory the sandbox denied. Creates a single-use token "
            "that expires in 60 s; the owner approves with `fermix sandbox confirm TOKEN` and the grant "
            "persists to [sandbox] allowed_roots. Only on attended owner turns; roots that can never be "
            "granted (home, fermix home, ~/.ssh, OS roots) are refused up front."
        ),
        params=RequestDirectoryAccessParams,
        handler=request_directory_access,
        render=lambda r: r["message"],
        hints=Hints(open_world=True),
        gate=attended_owner_only,
        available=attended_owner_turn,  # seed 000: never offered to guests, subagents or unattended runs
        when_to_use=(
            "A file operation was refused as outside the sandbox roots and the task genuinely needs "
            "that directory."
        ),
        examples=(
            Example(
                {"path": "~/src/other-project", "reason": "compare its config with this project"},
                "ask for access",
            ),
        ),
        failure_modes=(
            FailureMode(
                "not_attended", "the caller is not an attended owner conversation (job, subagent, skill, MCP)"
            ),
            FailureMode(
                "unsafe_root", "the directory can never be granted (/, home, fermix home, protected paths)"
            ),
            FailureMode("not_found", "the path is not an existing directory"),
        ),
    ),
)
