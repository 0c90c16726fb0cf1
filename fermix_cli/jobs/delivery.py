"""Where a finished run's result goes: nowhere, the run history, or a channel.

What fermix can reach today: the run history (`output.md` next to the run row, for every mode) and
the local inbox channel, `{"platform": "inbox", "recipient": NAME}`, an append-only JSON-lines file
`<data dir>/inbox/NAME.jsonl` that `fermix jobs inbox NAME` reads. Targets on platforms fermix has no
channel for are refused when the job is created (`unsupported_channel`), never accepted and dropped.
A final answer of exactly `[SILENT]` delivers nothing and writes no output.md.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.paths import FermixPaths
from ..core.records import Record
from .execute import RunOutcome
from .model import Job, ts
from .validate import ADDRESS_KEYS, THREAD_KEYS

INBOX_TEXT_MAX = 256 * 1024


class DeliveryResult(Record, frozen=True):
    status: str  # none | recorded | delivered | silent | failed
    detail: dict[str, Any] | None = None


def inbox_dir(paths: FermixPaths) -> Path:
    return paths.data_dir / "inbox"


def output_path(paths: FermixPaths, job_id: str, run_id: str) -> Path:
    return paths.data_dir / "jobs" / job_id / run_id / "output.md"


def write_output(paths: FermixPaths, job: Job, run_id: str, text: str) -> Path:
    """output.md for a run, written atomically (temp file, fsync, rename)."""
    target = output_path(paths, job.id, run_id)
    paths.ensure_dir(target.parent)
    tmp = target.with_name(f".output.md.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def message_text(job: Job, outcome: RunOutcome) -> str:
    """What a delivered message says: the final answer, or the failure and any output it left."""
    if outcome.status == "ok":
        return outcome.final_response or ""
    text = f"fermix job {job.name} ({job.id}) failed: {outcome.error_code}: {outcome.error}"
    if outcome.final_response:
        text += f"\n\n{outcome.final_response}"
    return text


def _append_inbox(paths: FermixPaths, address: str, record: dict[str, Any]) -> Path:
    """One JSON line appended with a single write (O_APPEND), then fsync."""
    folder = paths.ensure_dir(inbox_dir(paths))
    target = folder / f"{address}.jsonl"
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(f"short write to {target} ({written} of {len(line)} bytes)")
        os.fsync(fd)
    finally:
        os.close(fd)
    return target


def deliver(
    paths: FermixPaths,
    job: Job,
    run: dict[str, Any],
    outcome: RunOutcome,
    now: datetime,
) -> DeliveryResult:
    """Deliver one finished run per the job's snapshotted mode and target. Never raises."""
    if outcome.silent:
        return DeliveryResult("silent")
    if job.kind == "command" and outcome.status == "ok" and not (outcome.final_response or "").strip():
        return DeliveryResult("silent", {"reason": "the command printed nothing"})
    if job.delivery_mode == "none":
        return DeliveryResult("none")
    if job.delivery_mode == "local":
        return DeliveryResult("recorded")
    target = job.delivery_target or {}
    address_key = next((k for k in ADDRESS_KEYS if k in target), None)
    if target.get("platform") != "inbox" or address_key is None:
        return DeliveryResult(
            "failed", {"error": f"no channel can deliver to {target!r}; only the inbox platform exists"}
        )
    text = message_text(job, outcome)
    truncated = len(text) > INBOX_TEXT_MAX
    record = {
        "delivered_at": ts(now),
        "job_id": job.id,
        "job_name": job.name,
        "run_id": run["run_id"],
        "trigger": run["trigger"],
        "scheduled_for": run["scheduled_for"],
        "status": outcome.status,
        "text": text[:INBOX_TEXT_MAX],
        "truncated": truncated,
        **{k: target[k] for k in THREAD_KEYS if k in target},
    }
    address = str(target[address_key])
    try:
        where = _append_inbox(paths, address, record)
    except OSError as e:
        return DeliveryResult("failed", {"platform": "inbox", "address": address, "error": str(e)})
    return DeliveryResult("delivered", {"platform": "inbox", "address": address, "path": str(where)})


def read_inbox(paths: FermixPaths, address: str, limit: int) -> list[dict[str, Any]]:
    """The last `limit` messages of an inbox, oldest first; unreadable lines are skipped."""
    target = inbox_dir(paths) / f"{address}.jsonl"
    try:
        with open(target, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    for line in lines[-limit:] if limit else lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
