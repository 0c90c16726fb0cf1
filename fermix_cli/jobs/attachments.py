"""Files a scheduled run sends with send_attachment (reference 8.2): to the job's snapshotted target, ≤ 16.

A model job whose delivery is `origin` or `channel` gets a reply port to its delivery target, the one its
final result goes to, through the same channel (`delivery.destination`); a job whose delivery is `local` or
`none`, or whose target takes no files (a webhook), gets a typed refusal that says why instead
(`replyport.SENDS_REFUSED`), and the tool is not offered there.

Each send is at most once, like the run's own delivery: its row in `job_run_attachments` is committed
(durably) as `sending` before anything leaves, then set to `sent` or `failed`. A run ends only when its
worker has exited, so a row still `sending` then is a send the worker died in the middle of: the runner
(or a later tick's reconciliation) marks it `undelivered` (it may or may not have arrived) and it is never
sent again. Every send a run starts counts towards its 16, failed ones too, so a run cannot reach a channel
more often than that. The bytes sent are the ones the tool read through the sandbox, spooled into the
run's directory for the channel and removed when the send ends.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError

if TYPE_CHECKING:
    from ..core.context import ToolContext
    from .delivery import Destination
    from .job import Job

LIMIT = 16
UNFINISHED = (
    "the run ended while this file was being sent; it may or may not have reached the channel, and is not "
    "sent again"
)


def close_unfinished(db: sqlite3.Connection, run_id: str, now: str) -> int:
    """Sends of a run that ended mid-send become `undelivered` (inside the caller's transaction)."""
    detail = json.dumps({"code": "run_ended", "message": UNFINISHED})
    cur = db.execute(
        "UPDATE job_run_attachments SET status = 'undelivered', detail = ?, finished_at = ?"
        " WHERE run_id = ? AND status = 'sending'",
        (detail, now, run_id),
    )
    return cur.rowcount


def run_attachments(db: sqlite3.Connection, run_id: str) -> list[dict[str, Any]]:
    """A run's sends, in order, as get_job_run shows them."""
    rows = db.execute(
        "SELECT seq, filename, kind, mime_type, bytes, caption, source, status, detail, started_at,"
        " finished_at FROM job_run_attachments WHERE run_id = ? ORDER BY seq",
        (run_id,),
    ).fetchall()
    return [
        {
            "seq": r["seq"],
            "filename": r["filename"],
            "kind": r["kind"],
            "mime_type": r["mime_type"],
            "bytes": r["bytes"],
            "caption": r["caption"],
            "source": r["source"],
            "status": r["status"],
            "detail": None if r["detail"] is None else json.loads(r["detail"]),
            "started_at": r["started_at"],
            "finished_at": r["finished_at"],
        }
        for r in rows
    ]


def equip(ctx: ToolContext, job: Job, run_id: str) -> None:
    """Give a model job's run context its port to the delivery target, or the refusal that says why not."""
    from ..core.replyport import REPLY_PORT, SENDS_REFUSED
    from .delivery import destination

    if job.delivery_mode in ("local", "none"):
        where = (
            "recorded in the job's run history only" if job.delivery_mode == "local" else "not sent anywhere"
        )
        ctx.extras[SENDS_REFUSED] = ToolError(
            "no_delivery_channel",
            f"this job's delivery mode is {job.delivery_mode}: its result is {where}, so it sends no files. "
            "Save the file (in the workspace) and name its path in your final answer; to receive files, the "
            "owner switches the job to delivery_mode channel or origin with update_job.",
            {"job_id": job.id, "delivery_mode": job.delivery_mode},
        )
        return
    try:
        config = ctx.config
        where_to = destination(ctx.paths, job, config)
    except ToolError as e:  # no channel for the target any more, or config.toml unreadable
        ctx.extras[SENDS_REFUSED] = ToolError(
            "delivery_failed",
            f"this job's delivery target cannot be reached ({e.message}), so no file can be sent. Name the "
            "file's path in your final answer instead.",
            {"job_id": job.id, "code": e.code},
        )
        return
    if "file" not in where_to.channel.capabilities:
        ctx.extras[SENDS_REFUSED] = ToolError(
            "attachments_unsupported",
            f"this job delivers to {where_to.channel.platform}, which carries text only, so it sends no "
            "files. Name the file's path (or put its contents) in your final answer instead.",
            {"job_id": job.id, "platform": where_to.channel.platform},
        )
        return
    ctx.extras[REPLY_PORT] = JobAttachmentPort(ctx, job, run_id, where_to)


class JobAttachmentPort:
    """The reply port of a scheduled run: files to the job's delivery target, at most LIMIT per run."""

    reactions: frozenset[str] | None = None

    def __init__(self, ctx: ToolContext, job: Job, run_id: str, where: Destination) -> None:
        self.ctx = ctx
        self.job = job
        self.run_id = run_id
        self.where = where
        self.platform = where.channel.platform

    def send_attachment(
        self, data: bytes, *, kind: str, caption: str | None, filename: str, mime_type: str, source: str
    ) -> dict[str, Any]:
        from ..channels import ChannelError

        seq = self._claim(data, kind=kind, caption=caption, filename=filename, mime=mime_type, source=source)
        spool = None
        try:
            spool = self._spool(seq, filename, data)
            meta = {
                "delivered_at": self._now(),
                "job_id": self.job.id,
                "job_name": self.job.name,
                "run_id": self.run_id,
                "attachment": seq,
                "kind": kind,
                "mime_type": mime_type,
                **self.where.thread,
            }
            sent = self.where.channel.send_file(self.where.address, spool, caption or "", meta)
        except ChannelError as e:
            detail: dict[str, Any] = {"code": e.code, "error": str(e), "permanent": e.permanent}
            if e.retry_after is not None:
                detail["retry_after"] = e.retry_after
            self._finish(seq, "failed", detail)
            code = "rate_limited" if e.code == "rate_limited" else "delivery_failed"
            raise ToolError(
                code,
                f"{filename} was not delivered: {e}",
                {"platform": self.platform, "channel_code": e.code, "attachment": seq, **detail},
            ) from None
        except ToolError as e:  # the spool could not be written: nothing left
            self._finish(seq, "failed", {"code": e.code, "error": e.message, "permanent": True})
            raise
        except OSError as e:
            self._finish(seq, "failed", {"code": "spool_failed", "error": str(e), "permanent": True})
            raise ToolError(
                "delivery_failed",
                f"{filename} was not sent: it could not be staged for the channel ({e})",
                {},
            ) from None
        finally:
            if spool is not None:
                spool.unlink(missing_ok=True)
                with contextlib.suppress(OSError):  # the attachments folder, once it is empty
                    spool.parent.rmdir()
                    spool.parent.parent.rmdir()
        self._finish(seq, "sent", sent.as_dict())
        return {"attachment": seq, "sends_left": LIMIT - seq, "delivered": sent.as_dict()}

    def react(self, emoji: str) -> dict[str, Any]:
        raise ToolError(
            "reactions_unsupported", "a scheduled job has no message to react to; write a text answer.", {}
        )

    # ----- the record ----------------------------------------------------------------------------

    def _now(self) -> str:
        from .job import ts

        return ts(self.ctx.now())

    def _claim(
        self, data: bytes, *, kind: str, caption: str | None, filename: str, mime: str, source: str
    ) -> int:
        """Take the run's next send (or refuse the 17th), committed durably before anything leaves."""
        import hashlib

        with self.ctx.state.write(durable=True) as db:
            used = int(
                db.execute(
                    "SELECT count(*) FROM job_run_attachments WHERE run_id = ?", (self.run_id,)
                ).fetchone()[0]
            )
            if used >= LIMIT:
                raise ToolError(
                    "attachment_limit",
                    f"this run already sent {LIMIT} files, the most one scheduled run may send; {filename} was "
                    "not sent. Put the rest in one archive sent next run, or name their paths in your final "
                    "answer.",
                    {"limit": LIMIT, "sent": used, "filename": filename},
                )
            seq = used + 1
            db.execute(
                "INSERT INTO job_run_attachments (run_id, seq, call_id, filename, kind, mime_type, bytes,"
                " sha256, caption, source, status, started_at) VALUES (?,?,?,?,?,?,?,?,?,?, 'sending', ?)",
                (
                    self.run_id,
                    seq,
                    self.ctx.extras.get("call_id"),
                    filename,
                    kind,
                    mime,
                    len(data),
                    hashlib.sha256(data).hexdigest(),
                    caption,
                    source,
                    self._now(),
                ),
            )
        return seq

    def _finish(self, seq: int, status: str, detail: dict[str, Any]) -> None:
        with self.ctx.state.write(durable=True) as db:
            db.execute(
                "UPDATE job_run_attachments SET status = ?, detail = ?, finished_at = ?"
                " WHERE run_id = ? AND seq = ? AND status = 'sending'",
                (status, json.dumps(detail), self._now(), self.run_id, seq),
            )

    def _spool(self, seq: int, filename: str, data: bytes) -> Path:
        """The bytes as a file the channel can send, named as the recipient sees it."""
        from ..core.newfile import write_new_file

        paths = self.ctx.paths
        folder = paths.ensure_dir(
            paths.data_dir / "jobs" / self.job.id / self.run_id / "attachments" / str(seq)
        )
        return write_new_file(folder, filename, data)
