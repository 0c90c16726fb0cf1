"""The run ledger in state.db: reading runs, settling the ones whose process ended, cancelling.

Every reader settles first (`settle`): a running run whose supervisor wrote `exit.json` becomes
completed, failed or timed_out with its harvested outcome; one whose supervisor is gone without a word
(machine reboot, kill) becomes `lost`, once what it left in its process group (the vendor CLI goes on
without its supervisor) has been ended: until then the run stays active, holding its worktree and
cancellable. A cloud run still `starting` whose submitting process is gone is `lost` too, after the
`codex cloud exec` it left behind is ended. A run is never left "running" once its process has vanished.
Each terminal run's outcome is then pending delivery, exactly once per run id.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.procid import process_start
from ..core.shell import group_members, marked_processes
from .outcome import RESULT_TAIL_BYTES, diagnostics, harvest, tail_bytes

if TYPE_CHECKING:
    import sqlite3

    from ..core.context import ToolContext

ACTIVE = ("starting", "running")
TERMINAL = ("completed", "failed", "cancelled", "timed_out", "lost", "untracked")
STARTING_GRACE_S = 60  # a row still `starting` after this long lost its launcher before the spawn
KILL_GRACE_S = 1.0
# A cloud run's submission: who runs `codex cloud exec` and the spawn marker its child carries.
SUBMIT_RECORD = "submit.json"


def ts(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(text: str) -> datetime:
    from datetime import UTC

    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def alive(row: sqlite3.Row | dict[str, Any]) -> bool:
    """Whether the run's supervisor (the leader of its process group) is still the process we started."""
    pid, start = row["pid"], row["pid_start"]
    return pid is not None and start is not None and process_start(int(pid)) == start


def _exit_record(run_dir: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(run_dir, "exit.json"), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _finish_fields(row: sqlite3.Row, record: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
    """The ledger fields of a run that ended: status, reason, exit code, tails, usage, vendor session."""
    run_dir = row["run_dir"]
    h = harvest(row["vendor"], run_dir)
    diag = diagnostics(run_dir)
    fields: dict[str, Any] = {
        "ended_at": (record or {}).get("ended_at") or ts(now),
        "diagnostics_tail": diag or None,
        "usage": json.dumps(h.usage) if h.usage else None,
        "vendor_session": h.session or row["vendor_session"],
        "delivery_state": "pending",
    }
    if record is None:
        fields.update(
            status="lost", reason="the run's process vanished (machine restart or killed) before it finished"
        )
        fields["result_tail"] = tail_bytes(h.error or h.text, RESULT_TAIL_BYTES) or None
        return fields
    code = record.get("exit_code")
    fields["exit_code"] = code if isinstance(code, int) else None
    if record.get("spawn_error"):
        fields.update(status="failed", reason=f"the vendor CLI could not be started: {record['spawn_error']}")
    elif record.get("timed_out"):
        fields.update(
            status="timed_out", reason=f"the wall-clock limit of {row['timeout_seconds'] // 60} min ran out"
        )
    elif code == 0 and not h.error:
        fields.update(status="completed", reason=None)
    else:
        why = (
            f"exit code {code}"
            if isinstance(code, int) and code >= 0
            else f"killed by signal {record.get('signal')}"
        )
        fields.update(status="failed", reason=f"the vendor CLI failed ({why})")
    text = h.text if fields["status"] == "completed" else (h.error or h.text or diag)
    fields["result_tail"] = tail_bytes(text, RESULT_TAIL_BYTES) or None
    return fields


def _update(db: sqlite3.Connection, run_id: str, fields: dict[str, Any], *, only_active: bool = True) -> bool:
    cols = ", ".join(f"{k} = ?" for k in fields)
    guard = " AND status IN ('starting', 'running')" if only_active else ""
    cur = db.execute(f"UPDATE coding_runs SET {cols} WHERE id = ?{guard}", (*fields.values(), run_id))
    return cur.rowcount > 0


def settle(ctx: ToolContext) -> list[str]:
    """Settle every active run whose process ended; the ids settled now."""
    state = ctx.state
    rows = state.query("SELECT * FROM coding_runs WHERE status IN ('starting', 'running')")
    if not rows:
        return []
    now = ctx.now()
    done: list[tuple[str, dict[str, Any]]] = []
    for row in rows:
        if row["rail"] != "local":
            continue
        if row["status"] == "starting":
            if row["pid"] is None and now - parse_ts(row["created_at"]) > timedelta(seconds=STARTING_GRACE_S):
                done.append(
                    (
                        row["id"],
                        {
                            **_finish_fields(row, None, now),
                            "reason": "fermix stopped before the run's process started",
                        },
                    )
                )
            continue
        record = _exit_record(row["run_dir"])
        if record is None and alive(row):
            continue
        if record is None:
            record = _exit_record(row["run_dir"])  # it may have finished between the two looks
        fields = None
        if record is None and group_left(row) and not _empties_by_itself(row):
            # The supervisor was killed, not the CLI: end what it left, or the CLI would go on working
            # in a worktree whose lock a lost run no longer holds, with nothing left to cancel it.
            if not end_group(row):
                continue  # still there: the run stays active (and cancellable) until a later look
            fields = {
                **_finish_fields(row, None, now),
                "reason": "the run's supervisor was killed before the run finished; the vendor CLI it left "
                "running was ended",
            }
        done.append((row["id"], fields or _finish_fields(row, record, now)))
    done += _settle_submissions(ctx, now)
    settled = []
    if done:
        with state.write() as db:
            for run_id, fields in done:
                if _update(db, run_id, fields):
                    settled.append(run_id)
    return settled


def _settle_submissions(ctx: ToolContext, now: datetime) -> list[tuple[str, dict[str, Any]]]:
    """Cloud runs left `starting` by a submitting process that is gone: their orphan ended, marked lost."""
    from .gates import settings

    rows = ctx.state.query("SELECT * FROM coding_runs WHERE status = 'starting' AND rail = 'cloud'")
    done = []
    for row in rows:
        submit = _submit_record(row["run_dir"])
        if submit is None:
            # Written right after the row, before anything is spawned: none after a call's whole
            # time and a grace means the submitter ended in between (or predates the record).
            stale = STARTING_GRACE_S + settings(ctx).cloud_call_timeout_seconds
            if now - parse_ts(row["created_at"]) <= timedelta(seconds=stale):
                continue
        else:
            if process_start(int(submit["pid"])) == submit["pid_start"]:
                continue  # still submitting
            if not _end_pids(partial(marked_processes, str(submit["spawn_id"]))):
                continue
        done.append(
            (
                row["id"],
                {
                    "status": "lost",
                    "reason": "the submission was interrupted: the fermix process running codex cloud exec ended "
                    "before it reported a task URL, so the task may or may not exist on Codex cloud; check "
                    "your tasks on ChatGPT before submitting it again",
                    "ended_at": ts(now),
                    "delivery_state": "pending",
                    "next_poll_at": None,
                },
            )
        )
    return done


def _submit_record(run_dir: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(run_dir, SUBMIT_RECORD), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not all(k in record for k in ("pid", "pid_start", "spawn_id")):
        return None
    return record


def group_left(row: sqlite3.Row | dict[str, Any]) -> list[int]:
    """The live members of a local run's process group (its supervisor leads it while it lives)."""
    pgid = row["pid"]
    if pgid is None:
        return []
    members = group_members(int(pgid))
    if int(pgid) in members and not alive(row):
        # The number leads a group again, so the group is someone else's: the kernel hands out no pid
        # still in use as a group id, so ours had emptied before the number came back.
        return []
    return members


def _empties_by_itself(row: sqlite3.Row | dict[str, Any], wait: float = 0.3) -> bool:
    """Whether a dead supervisor's group empties within `wait` seconds without a signal from us: a
    group killed whole (a reboot-like SIGKILL to every member) is still dying when its leader is gone,
    and such a run vanished, it was not left running."""
    deadline = time.monotonic() + wait
    while group_left(row):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def end_group(row: sqlite3.Row | dict[str, Any]) -> bool:
    """SIGTERM a local run's whole process group, SIGKILL after the grace; whether it is empty now."""
    pgid = int(row["pid"])

    def left() -> list[int]:
        return group_left(row)

    return _end_pids(left, lambda sig: _signal_group(pgid, sig))


def _end_pids(left: Callable[[], list[int]], send: Callable[[int], object] | None = None) -> bool:
    """SIGTERM what `left()` lists, SIGKILL what is still there after the grace; whether none is left.

    `send(sig)` signals them all at once (a process group); without it each pid is signalled.
    """

    def signal_all(sig: int) -> None:
        if send is not None:
            send(sig)
            return
        for pid in left():
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                continue  # gone meanwhile, or not ours to signal: the next look decides

    if not left():
        return True
    for sig in (signal.SIGTERM, signal.SIGKILL):
        signal_all(sig)
        deadline = time.monotonic() + KILL_GRACE_S
        while left() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not left():
            return True
    return False


def get_row(ctx: ToolContext, run_id: str) -> sqlite3.Row:
    rows = ctx.state.query("SELECT * FROM coding_runs WHERE id = ?", (run_id,))
    if not rows:
        raise ToolError(
            "not_found",
            f"no coding run {run_id}; list_coding_runs shows the runs fermix knows",
            {"run_id": run_id},
        )
    return rows[0]


def describe(row: sqlite3.Row, *, full: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": row["id"],
        "vendor": row["vendor"],
        "rail": row["rail"],
        "status": row["status"],
        "reason": row["reason"],
        "cwd": row["cwd"],
        "created_at": row["created_at"],
        "ended_at": row["ended_at"],
        "delivery": {"state": row["delivery_state"], "attempts": row["delivery_attempts"]},
    }
    if not full:
        return out
    started, ended = row["started_at"], row["ended_at"]
    out.update(
        tool=row["tool"],
        task_url=row["task_url"],
        tracking_deadline=row["deadline_at"],
        worktree=row["worktree"],
        add_dirs=json.loads(row["add_dirs"]),
        posture=row["posture"],
        resumable=bool(row["vendor_session"]) and not row["ephemeral"],
        vendor_session=row["vendor_session"],
        resume_of=row["resume_of"],
        started_at=started,
        duration_ms=(
            int((parse_ts(ended) - parse_ts(started)).total_seconds() * 1000) if started and ended else None
        ),
        exit_code=row["exit_code"],
        usage=json.loads(row["usage"]) if row["usage"] else None,
        result_tail=row["result_tail"],
        diagnostics_tail=row["diagnostics_tail"],
        timeout_minutes=row["timeout_seconds"] // 60,
        prompt_bytes=row["prompt_bytes"],
        brief_path=row["brief_path"],
        session_id=row["session_id"],
        origin=row["origin"],
        job_id=row["job_id"],
        logs={
            "stdout": os.path.join(row["run_dir"], "stdout.log"),
            "stderr": os.path.join(row["run_dir"], "stderr.log"),
        },
    )
    out["delivery"].update(
        error=row["delivery_error"], delivered_at=row["delivered_at"], to=row["delivered_to"]
    )
    return out


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cancel(ctx: ToolContext, run_id: str) -> dict[str, Any]:
    """End a local run's whole process group (TERM, then KILL after a grace), then mark it cancelled."""
    settle(ctx)
    row = get_row(ctx, run_id)
    if row["rail"] == "cloud":
        raise ToolError(
            "vendor_cancel_unsupported",
            "a Codex cloud run cannot be cancelled (the vendor has no cancel); use stop_tracking_coding_run",
            {"run_id": run_id},
        )
    if row["status"] not in ACTIVE:
        raise ToolError(
            "run_finished",
            f"coding run {run_id} already ended ({row['status']}); get_coding_run shows its outcome",
            {"run_id": run_id, "status": row["status"]},
        )
    now = ctx.now()
    with ctx.state.write() as db:
        # Marked first, so the supervisor's own exit record (written as it dies) cannot turn it into a failure.
        fields = {
            "status": "cancelled",
            "reason": "cancelled by the owner",
            "ended_at": ts(now),
            "delivery_state": "pending",
        }
        if not _update(db, run_id, fields):
            raise ToolError("run_finished", f"coding run {run_id} ended meanwhile", {"run_id": run_id})
    if row["pid"] is not None:
        end_group(row)  # the supervisor's whole group, or what it left there if it died first
    h = harvest(row["vendor"], row["run_dir"])
    with ctx.state.write() as db:
        db.execute(
            "UPDATE coding_runs SET usage = COALESCE(?, usage), vendor_session = COALESCE(?, vendor_session),"
            " diagnostics_tail = ? WHERE id = ?",
            (
                json.dumps(h.usage) if h.usage else None,
                h.session,
                diagnostics(row["run_dir"]) or None,
                run_id,
            ),
        )
    return describe(get_row(ctx, run_id), full=True)
