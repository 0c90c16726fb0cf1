"""`fermix runs list|show|cancel|logs`: the owner's view of coding-agent runs (the harness's ledger).

These read the ledger directly rather than through the tools, so a run stays visible and cancellable
after its vendor CLI was uninstalled or the harness disabled.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any

import typer

from .common import context, emit_json, handles_errors

app = typer.Typer(
    help="Coding-agent runs (codex_run, claude_code_run): list, show, cancel, logs.", no_args_is_help=True
)
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output.")]
RunArg = Annotated[str, typer.Argument(help="The run id (hr_ + 12 hex).")]
FOLLOW_POLL_S = 0.2


def _check_id(run_id: str) -> None:
    import re

    from ..core.errors import ToolError

    if not re.fullmatch(r"hr_[0-9a-f]{12}", run_id):
        raise ToolError(
            "invalid_run_id",
            f"{run_id!r} is not a coding run id (hr_ + 12 lowercase hex)",
            {"run_id": run_id},
        )


def _line(r: dict[str, Any]) -> str:
    delivery = r["delivery"]["state"]
    reason = f"  {r['reason']}" if r.get("reason") else ""
    return f"{r['run_id']}  {r['status']:<9} {r['vendor']:<11} {r['created_at'][:19]}  {r['cwd']}  [{delivery}]{reason}"


@app.command("list")
@handles_errors
def list_cmd(
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Active, recent and dead-lettered runs, newest first."""
    from ..harness.store import describe, settle

    ctx = context()
    try:
        settle(ctx)
        where, args = ("WHERE status = ?", (status,)) if status else ("", ())
        rows = ctx.state.query(f"SELECT * FROM coding_runs {where} ORDER BY created_at DESC LIMIT 200", args)
        runs = [describe(r, full=False) for r in rows]
    finally:
        ctx.close()
    if as_json:
        emit_json(runs)
        return
    if not runs:
        typer.echo("no coding runs")
    for r in runs:
        typer.echo(_line(r))


@app.command("show")
@handles_errors
def show_cmd(run_id: RunArg, as_json: JsonOpt = False) -> None:
    """One run in full: status, reason, usage, exit code, result and diagnostics tails, log paths."""
    from ..harness.store import describe, get_row, settle

    _check_id(run_id)
    ctx = context()
    try:
        settle(ctx)
        run = describe(get_row(ctx, run_id), full=True)
    finally:
        ctx.close()
    if as_json:
        emit_json(run)
        return
    typer.echo(_line(run))
    for key in ("worktree", "posture", "exit_code", "duration_ms", "usage", "vendor_session"):
        if run.get(key) is not None:
            typer.echo(f"  {key}: {run[key]}")
    typer.echo(f"  logs: {run['logs']['stdout']}")
    if run.get("result_tail"):
        typer.echo("--- result ---\n" + run["result_tail"])
    if run.get("diagnostics_tail"):
        typer.echo("--- diagnostics ---\n" + run["diagnostics_tail"])


@app.command("cancel")
@handles_errors
def cancel_cmd(run_id: RunArg, as_json: JsonOpt = False) -> None:
    """End the run's whole process group and mark it cancelled."""
    from ..harness.store import cancel

    _check_id(run_id)
    ctx = context()
    try:
        run = cancel(ctx, run_id)
    finally:
        ctx.close()
    if as_json:
        emit_json(run)
    else:
        typer.echo(f"cancelled {run_id}")


@app.command("logs")
@handles_errors
def logs_cmd(
    run_id: RunArg,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing until the run ends.")] = False,
    stderr: Annotated[
        bool, typer.Option("--stderr", help="The CLI's stderr instead of its stdout (the event stream).")
    ] = False,
) -> None:
    """Print the vendor CLI's output stream; with -f, follow it until the run ends."""
    from ..harness.store import ACTIVE, get_row, settle

    _check_id(run_id)
    ctx = context()
    try:
        row = get_row(ctx, run_id)
        path = os.path.join(row["run_dir"], "stderr.log" if stderr else "stdout.log")
        offset = 0
        while True:
            offset = _copy_from(path, offset)
            if not follow:
                return
            settle(ctx)
            if get_row(ctx, run_id)["status"] not in ACTIVE:
                _copy_from(path, offset)
                return
            time.sleep(FOLLOW_POLL_S)
    finally:
        ctx.close()


def _copy_from(path: str, offset: int) -> int:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return offset
    if data:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return offset + len(data)
