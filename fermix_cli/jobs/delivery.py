"""Where a finished run's result goes: nowhere, the run history, or a channel.

The run history (`output.md` next to the run row, for every mode) is the jobs domain's own; messages
go through `fermix_cli.channels`: the local inbox (`{"platform": "inbox", "recipient": NAME}`, which
`fermix inbox NAME` reads), Telegram, a named webhook, a desktop notification or an Apprise URL.
Targets on platforms fermix has no channel for are refused when the job is created
(`unsupported_channel`), never accepted and dropped. A failed send is recorded in the run's delivery
detail with the channel's error `code`, its `retry_after` hint and whether it is `permanent`; a run's
delivery is tried once. A final answer of exactly `[SILENT]` delivers nothing and writes no output.md.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from ..channels import Channel, ChannelError, channel_for
from ..core.errors import ToolError
from ..core.logs import logger
from ..core.paths import FermixPaths
from ..core.records import Record
from .execute import RunOutcome
from .job import Job, ts
from .validate import ADDRESS_KEYS, THREAD_KEYS


class DeliveryResult(Record, frozen=True):
    status: str  # none | recorded | delivered | silent | failed
    detail: dict[str, Any] | None = None


def output_path(paths: FermixPaths, job_id: str, run_id: str) -> Path:
    return paths.data_dir / "jobs" / job_id / run_id / "output.md"


def write_output(paths: FermixPaths, job: Job, run_id: str, text: str) -> Path:
    """output.md for a run, written atomically (a complete synced file renamed into place; a kill leaves
    no temp file behind)."""
    from ..core.fsops import atomic_write

    target = output_path(paths, job.id, run_id)
    paths.ensure_dir(target.parent)
    data = (text if text.endswith("\n") else text + "\n").encode("utf-8")
    atomic_write(str(target), data, new_mode=0o600)
    return target


def message_text(job: Job, outcome: RunOutcome) -> str:
    """What a delivered message says: the final answer, or the failure and any output it left."""
    if outcome.status == "ok":
        return outcome.final_response or ""
    text = f"fermix job {job.name} ({job.id}) failed: {outcome.error_code}: {outcome.error}"
    if outcome.final_response:
        text += f"\n\n{outcome.final_response}"
    return text


class Destination(Record, frozen=True):
    """Where a job's messages go: the channel, the address on it, and the thread keys of the target."""

    channel: Channel
    address: str
    thread: dict[str, Any]


NO_CHANNEL = "unsupported_channel"


def destination(paths: FermixPaths, job: Job, config: Any = None) -> Destination:
    """The job's snapshotted target as a channel and an address: the run's result and the files it sends
    go the same way. A ToolError when no channel delivers there (`unsupported_channel`), or when config.toml
    cannot be read."""
    target = job.delivery_target or {}
    address_key = next((k for k in ADDRESS_KEYS if k in target), None)
    channel = channel_for(str(target.get("platform", "")), paths, config)
    if channel is None or address_key is None:
        raise ToolError(NO_CHANNEL, f"no channel can deliver to {target!r}", {"target": target})
    thread = {k: target[k] for k in THREAD_KEYS if k in target}
    return Destination(channel, str(target[address_key]), thread)


def settled(job: Job, outcome: RunOutcome) -> DeliveryResult | None:
    """A run's delivery when it sends nothing (silent, mode none or local); None when a channel send is due."""
    if outcome.silent:
        return DeliveryResult("silent")
    if job.kind == "command" and outcome.status == "ok" and not (outcome.final_response or "").strip():
        return DeliveryResult("silent", {"reason": "the command printed nothing"})
    if job.delivery_mode == "none":
        return DeliveryResult("none")
    if job.delivery_mode == "local":
        return DeliveryResult("recorded")
    return None


def deliver(
    paths: FermixPaths,
    job: Job,
    run: dict[str, Any],
    outcome: RunOutcome,
    now: datetime,
    config: Any = None,
) -> DeliveryResult:
    """Deliver one finished run per the job's snapshotted mode and target. Never raises.

    `config` is the loaded config.toml (channels that need it read it from `paths` otherwise).
    """
    done = settled(job, outcome)
    if done is not None:
        return done
    try:
        where = destination(paths, job, config)
    except ToolError as e:
        if e.code == NO_CHANNEL:
            return DeliveryResult("failed", {"error": e.message})
        # config.toml became unreadable since the job was created
        return DeliveryResult("failed", {"error": e.message, "code": e.code, "permanent": False})
    channel, address = where.channel, where.address
    meta = {
        "delivered_at": ts(now),
        "job_id": job.id,
        "job_name": job.name,
        "run_id": run["run_id"],
        "trigger": run["trigger"],
        "scheduled_for": run["scheduled_for"],
        "status": outcome.status,
        **where.thread,
    }
    try:
        sent = channel.send_text(address, message_text(job, outcome), meta)
    except ChannelError as e:
        detail: dict[str, Any] = {
            "platform": channel.platform,
            "address": address,
            "error": str(e),
            "code": e.code,
            "permanent": e.permanent,
        }
        if e.retry_after is not None:
            detail["retry_after"] = e.retry_after
        return DeliveryResult("failed", detail)
    except Exception as e:  # a channel bug must not lose the run's record; the log keeps the traceback
        logger("fermix.jobs").exception("job run %s: the %s channel crashed", run["run_id"], channel.platform)
        error = f"the {channel.platform} channel failed unexpectedly ({type(e).__name__}); see the fermix log"
        return DeliveryResult(
            "failed",
            {"platform": channel.platform, "address": address, "error": error, "code": "internal_error"},
        )
    return DeliveryResult("delivered", sent.as_dict())
