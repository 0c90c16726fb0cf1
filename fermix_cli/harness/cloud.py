"""The cloud rail: `codex cloud exec` submits a task to a Codex cloud environment; fermix only tracks it.

Nothing runs locally beyond short CLI calls. The query rides one command-line argument under the same
cap as a local prompt, and an oversized query is refused, never truncated. `codex cloud exec` prints the
task's URL; `codex cloud status TASK_ID` prints `[READY|PENDING|APPLIED|ERROR] title` (exit 0 only when
READY) and `codex cloud diff TASK_ID` the diff of a finished task. `fermix jobs run` polls every
`cloud_poll_seconds` (120) until `cloud_deadline_minutes` (90) after submission; past the deadline, or on
stop_tracking_coding_run, tracking stops (`untracked`) and the task URL is delivered. The vendor has no
cancel, and fermix never claims the task stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.procid import process_start
from ..core.shell.procgroup import SPAWN_MARKER
from .gates import settings, vendor_executable
from .launch import child_env, new_run_id, prompt_arg_limit
from .outcome import RESULT_TAIL_BYTES, tail_bytes
from .store import SUBMIT_RECORD, describe, get_row, parse_ts, settle, ts

if TYPE_CHECKING:
    from ..core.context import ToolContext

URL = re.compile(r"https?://\S+")
STATUS = re.compile(r"^\[(READY|PENDING|APPLIED|ERROR)\]", re.MULTILINE)


def _call(ctx: ToolContext, argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    from ..core.shell.procgroup import run_captured

    cfg = settings(ctx)
    outcome = run_captured(
        argv,
        cwd=str(ctx.paths.data_dir),
        env=env if env is not None else child_env(ctx, str(ctx.paths.data_dir)),
        timeout_s=cfg.cloud_call_timeout_seconds,
        cap=256 * 1024,
    )
    if outcome.timed_out:
        return 124, outcome.text() + f"\n(no answer within {cfg.cloud_call_timeout_seconds} s)"
    return outcome.exit_code, outcome.text()


def _codex(ctx: ToolContext) -> str:
    exe = vendor_executable(settings(ctx), "codex")
    if exe is None:
        raise ToolError(
            "vendor_cli_missing", "the codex CLI is no longer on PATH; install it and try again", {}
        )
    return exe


def task_id_of(url: str) -> str:
    return url.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def submit(
    ctx: ToolContext, query: str, env_id: str, branch: str | None, attempts: int | None
) -> dict[str, Any]:
    cfg = settings(ctx)
    size = len(query.encode("utf-8"))
    cap = prompt_arg_limit(cfg.max_prompt_arg_bytes)
    if size > cap:
        raise ToolError(
            "query_too_long",
            f"the query is {size} bytes; a cloud run takes at most {cap} as one argument and never truncates "
            "it: shorten it, or run locally with codex_run (which spills long prompts to a file)",
            {"bytes": size, "max_bytes": cap},
        )
    exe = _codex(ctx)
    run_id = new_run_id()
    run_dir = str(ctx.paths.data_dir / "harness" / run_id)
    now = ctx.now()
    where = f"cloud:{env_id}"
    with ctx.state.write() as db:
        db.execute(
            "INSERT INTO coding_runs (id, tool, vendor, rail, status, cwd, worktree, run_dir, prompt_bytes,"
            " timeout_seconds, session_id, origin, job_id, created_at, deadline_at)"
            " VALUES (?, 'codex_cloud_run', 'codex', 'cloud', 'starting', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id, where, where, run_dir, size, cfg.cloud_deadline_minutes * 60, ctx.session_id, ctx.origin,
                ctx.job_id, ts(now), ts(now + timedelta(minutes=cfg.cloud_deadline_minutes)),
            ),
        )  # fmt: skip
    argv = [exe, "cloud", "exec", "--env", env_id]
    if branch:
        argv += ["--branch", branch]
    if attempts is not None:
        argv += ["--attempts", str(attempts)]
    argv += ["--", query]
    try:
        ctx.paths.ensure_dir(ctx.paths.data_dir / "harness")
        os.mkdir(run_dir, 0o700)
        env = child_env(ctx, str(ctx.paths.data_dir))
        # Who submits, and the marker the CLI call carries: if this process dies mid-call, a later settle
        # ends the orphaned call and marks the run lost instead of leaving it `starting` for ever.
        me = os.getpid()
        with open(os.path.join(run_dir, SUBMIT_RECORD), "w", encoding="utf-8") as f:
            json.dump({"pid": me, "pid_start": process_start(me), "spawn_id": env[SPAWN_MARKER]}, f)
        code, text = _call(ctx, argv, env)
    except OSError as e:
        code, text = -1, f"{type(e).__name__}: {e}"
    with (
        contextlib.suppress(OSError),  # the run directory may be what failed
        open(os.path.join(run_dir, "stdout.log"), "a", encoding="utf-8") as f,
    ):
        f.write(text)
    urls = URL.findall(text)
    shown = json.dumps([*argv[:-1], f"<query: {size} bytes>"])
    if code != 0 or not urls:
        with ctx.state.write() as db:
            db.execute(
                "UPDATE coding_runs SET status = 'failed', reason = ?, exit_code = ?, result_tail = ?, argv = ?,"
                " ended_at = ?, delivery_state = 'pending' WHERE id = ? AND status = 'starting'",
                (
                    "codex cloud exec did not submit the task", code, tail_bytes(text.strip(), RESULT_TAIL_BYTES) or None,
                    shown, ts(ctx.now()), run_id,
                ),
            )  # fmt: skip
        raise ToolError(
            "cloud_submit_failed",
            f"codex cloud exec failed (exit {code}): {text.strip()[-500:]}",
            {"run_id": run_id, "exit_code": code},
        )
    url = urls[-1]
    with ctx.state.write() as db:
        db.execute(
            "UPDATE coding_runs SET status = 'running', started_at = ?, task_url = ?, vendor_session = ?, argv = ?,"
            " next_poll_at = ? WHERE id = ? AND status = 'starting'",
            (
                ts(ctx.now()), url, task_id_of(url), shown,
                ts(ctx.now() + timedelta(seconds=cfg.cloud_poll_seconds)), run_id,
            ),
        )  # fmt: skip
    return {
        "run_id": run_id,
        "status": "running",
        "rail": "cloud",
        "task_url": url,
        "note": "the task runs on Codex cloud; fermix polls it and its outcome arrives on its own",
    }


def _finish(ctx: ToolContext, run_id: str, fields: dict[str, Any]) -> None:
    fields = {**fields, "ended_at": ts(ctx.now()), "delivery_state": "pending", "next_poll_at": None}
    cols = ", ".join(f"{k} = ?" for k in fields)
    with ctx.state.write() as db:
        db.execute(
            f"UPDATE coding_runs SET {cols} WHERE id = ? AND status = 'running'", (*fields.values(), run_id)
        )


def _untracked(row: Any, why: str) -> dict[str, Any]:
    return {
        "status": "untracked",
        "reason": f"{why}; the task keeps running on ChatGPT: {row['task_url']}",
        "result_tail": row["task_url"],
    }


def poll_due(ctx: ToolContext) -> list[str]:
    """Poll each tracked cloud run that is due; the ids that reached an end (or their deadline) now."""
    now = ctx.now()
    rows = ctx.state.query(
        "SELECT * FROM coding_runs WHERE rail = 'cloud' AND status = 'running' AND next_poll_at <= ?",
        (ts(now),),
    )
    ended = []
    cfg = settings(ctx)
    for row in rows:
        if now >= parse_ts(row["deadline_at"]):
            _finish(
                ctx,
                row["id"],
                _untracked(row, f"tracking stopped at the {cfg.cloud_deadline_minutes}-minute deadline"),
            )
            ended.append(row["id"])
            continue
        code, text = _call(ctx, [_codex(ctx), "cloud", "status", row["vendor_session"]])
        found = STATUS.search(text)
        label = found.group(1) if found else None
        if label in ("READY", "APPLIED"):
            diff_code, diff = _call(ctx, [_codex(ctx), "cloud", "diff", row["vendor_session"]])
            body = text.strip() + ("\n\n" + diff if diff_code == 0 and diff.strip() else "")
            _finish(
                ctx,
                row["id"],
                {
                    "status": "completed",
                    "reason": None,
                    "exit_code": code,
                    "result_tail": tail_bytes(body, RESULT_TAIL_BYTES),
                },
            )
            ended.append(row["id"])
        elif label == "ERROR":
            _finish(
                ctx,
                row["id"],
                {
                    "status": "failed",
                    "reason": "the cloud task ended in error",
                    "exit_code": code,
                    "result_tail": tail_bytes(text.strip(), RESULT_TAIL_BYTES),
                },
            )
            ended.append(row["id"])
        else:  # pending, or the status call itself failed: try again at the next poll
            with ctx.state.write() as db:
                db.execute(
                    "UPDATE coding_runs SET next_poll_at = ?, diagnostics_tail = ? WHERE id = ?",
                    (
                        ts(now + timedelta(seconds=cfg.cloud_poll_seconds)),
                        None if label == "PENDING" else tail_bytes(text.strip(), 2048),
                        row["id"],
                    ),
                )
    return ended


def stop_tracking(ctx: ToolContext, run_id: str) -> dict[str, Any]:
    settle(ctx)  # a submission whose process is gone is settled first, so the answer matches the ledger
    row = get_row(ctx, run_id)
    if row["rail"] != "cloud":
        raise ToolError(
            "not_cloud_run",
            f"{run_id} is a local run; stop_tracking_coding_run is for cloud runs (cancel_coding_run ends a local run)",
            {"run_id": run_id},
        )
    if row["status"] == "starting":
        raise ToolError(
            "run_starting",
            f"cloud run {run_id} is still being submitted (codex cloud exec has not reported its task yet); "
            "try again in a moment: it then runs and can be untracked, or it failed and needs nothing",
            {"run_id": run_id, "status": "starting"},
        )
    if row["status"] != "running":
        raise ToolError(
            "run_finished", f"cloud run {run_id} is no longer tracked ({row['status']})", {"run_id": run_id}
        )
    _finish(ctx, run_id, _untracked(row, "tracking stopped by the owner"))
    out = describe(get_row(ctx, run_id), full=True)
    out["note"] = "fermix stopped tracking; the vendor-side task was not stopped and keeps running on ChatGPT"
    return out
