"""`fermix sandbox status|explain|mode|grant|revoke|confirm|deny` and the `fermix grant|revoke path` aliases."""

from __future__ import annotations

import posixpath
from enum import StrEnum
from typing import Annotated, Any

import typer

from ..core.config import set_key
from ..core.grants import grant_path, revoke_path, update_config
from .common import context, emit_json, handles_errors_as

# A refusal on a terminal reads `fermix sandbox: unsafe_root: P cannot be granted ...` (reference 2.3);
# the exit code stays the contract's (3 for a sandbox refusal, ARCHITECTURE section 6).
handles_errors = handles_errors_as("fermix sandbox")


class Mode(StrEnum):
    strict = "strict"
    standard = "standard"
    open = "open"


app = typer.Typer(
    help="Inspect and change the sandbox (an in-process policy gate, not an OS jail).", no_args_is_help=True
)
grant_app = typer.Typer(help="Grant the sandbox access to a directory.", no_args_is_help=True)
revoke_app = typer.Typer(help="Withdraw a directory grant.", no_args_is_help=True)


def explain_data() -> dict[str, Any]:
    ctx = context()
    sb = ctx.sandbox
    cfg = ctx.config.sandbox
    return {
        "mode": sb.mode,
        "workspace": str(ctx.paths.workspace),
        "default_working_dir": sb.default_working_dir(),
        "roots": [{"path": r.path, "source": r.source} for r in sb.roots],
        "allowed_roots": list(cfg.allowed_roots),
        "refused_grants": list(sb.refused_grants),
        "blocked_roots": sb.blocked_roots,
        "protected": sb.protected,
        "env": {
            "mode": cfg.env.mode,
            "allow": list(cfg.env.allow),
            "deny": list(cfg.env.deny),
            "vars": {name: src.source for name, src in cfg.env.vars.items()},
        },
        "note": "The sandbox is an in-process policy gate for fermix's own tools, not an OS sandbox.",
    }


@app.command("status")
@handles_errors
def status_cmd(as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False) -> None:
    """One line: the mode and the effective roots."""
    data = explain_data()
    if as_json:
        emit_json({k: data[k] for k in ("mode", "workspace", "default_working_dir", "roots")})
        return
    roots = ", ".join(r["path"] for r in data["roots"]) or "(none)"
    typer.echo(f"mode {data['mode']}; roots: {roots}")


@app.command("explain")
@handles_errors
def explain_cmd(as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False) -> None:
    """Everything that decides a path: mode, roots and where they come from, blocked and protected paths."""
    data = explain_data()
    if as_json:
        emit_json(data)
        return
    lines = [
        f"mode:       {data['mode']}",
        f"workspace:  {data['workspace']}",
        f"working dir (default): {data['default_working_dir']}",
        "effective roots:",
        *[
            f"  {r['path']}  ({'granted' if r['source'] == 'granted' else r['source']})"
            for r in data["roots"]
        ],
    ]
    if data["refused_grants"]:
        lines += [
            "refused grants (unsafe, or inside a blocked root; ignored):",
            *[f"  {p}" for p in data["refused_grants"]],
        ]
    lines += ["blocked roots:", *([f"  {p}" for p in data["blocked_roots"]] or ["  (none)"])]
    lines += [
        "protected (denied in every mode, even inside a grant):",
        *[f"  {p}" for p in data["protected"]],
    ]
    env = data["env"]
    named = [*env["allow"], *[f"{n} ({src})" for n, src in env["vars"].items() if n not in env["allow"]]]
    lines += [f"env: mode {env['mode']}; allowed names: {', '.join(named) or '(none)'}"]
    if env["deny"]:
        lines += [f"env: denied names: {', '.join(env['deny'])}"]
    lines += [data["note"], "Grant a directory with: fermix grant path DIR"]
    typer.echo("\n".join(lines))


@app.command("mode")
@handles_errors
def mode_cmd(mode: Annotated[Mode, typer.Argument(help="strict, standard or open")]) -> None:
    """Set the sandbox mode."""
    update_config(context().paths, lambda doc: set_key(doc, "sandbox.mode", mode.value))
    typer.echo(f"sandbox mode: {mode.value}")


def _typed_path(ctx: Any, path: str) -> str:
    """A path as the person typed it: a relative one is taken from their directory (--cwd, else the
    shell's), wherever that is. Not from the sandbox's turn directory, which refuses a directory outside
    the roots, and a directory outside the roots is just what one grants."""
    if path.startswith("/") or path == "~" or path.startswith("~/") or not path.strip():
        return path
    return posixpath.join(ctx.cwd or ctx.launch_cwd, path)


def _grant(path: str) -> None:
    ctx = context()
    canonical, _ = grant_path(ctx.sandbox, ctx.paths, _typed_path(ctx, path))
    typer.echo(f"granted: {canonical}")


def _revoke(path: str) -> None:
    ctx = context()
    typer.echo(f"revoked: {revoke_path(ctx.sandbox, ctx.paths, _typed_path(ctx, path))}")


@app.command("grant")
@handles_errors
def sandbox_grant(path: Annotated[str, typer.Argument(help="Directory to allow")]) -> None:
    """Allow a directory (persisted to [sandbox] allowed_roots)."""
    _grant(path)


@app.command("revoke")
@handles_errors
def sandbox_revoke(path: Annotated[str, typer.Argument(help="Directory to stop allowing")]) -> None:
    """Withdraw a directory grant."""
    _revoke(path)


@grant_app.command("path")
@handles_errors
def grant_path_cmd(path: Annotated[str, typer.Argument(help="Directory to allow")]) -> None:
    """Allow a directory (persisted to [sandbox] allowed_roots)."""
    _grant(path)


@revoke_app.command("path")
@handles_errors
def revoke_path_cmd(path: Annotated[str, typer.Argument(help="Directory to stop allowing")]) -> None:
    """Withdraw a directory grant."""
    _revoke(path)


@app.command("confirm")
@handles_errors
def confirm_cmd(token: Annotated[str, typer.Argument(help="Token from request_directory_access")]) -> None:
    """Approve a pending directory access request (single use, 60 s); the grant goes to allowed_roots."""
    from ..core.errors import ToolError
    from ..core.spawned import spawned_by_fermix
    from ..tools.access.requests import confirm_request

    if spawned_by_fermix():
        raise ToolError(
            "not_attended",
            "fermix sandbox confirm refuses to run from a process fermix started (a tool's shell or git "
            "command); the owner confirms from their own terminal",
            {"token": token},
        )
    ctx = context()
    try:
        req, added = confirm_request(ctx, token)
    finally:
        ctx.close()
    typer.echo(f"granted: {req.path}" if added else f"granted: {req.path} (already in allowed_roots)")


@app.command("deny")
@handles_errors
def deny_cmd(token: Annotated[str, typer.Argument(help="Token from request_directory_access")]) -> None:
    """Discard a pending directory access request."""
    from ..tools.access.requests import deny_request

    ctx = context()
    try:
        req = deny_request(ctx, token)
    finally:
        ctx.close()
    typer.echo(f"denied: {req.path} (token {req.token})")


from .sandbox_env_cmd import register as register_env  # noqa: E402  (`fermix sandbox env`, its own module)

register_env(app)
