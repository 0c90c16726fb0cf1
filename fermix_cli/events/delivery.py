"""The reminder delivery engine (reference 9.5), one pass per `fermix jobs run`.

1. Reconcile: a send whose process died (on this host; on another, whose lease ran out) is marked
   failed (`runner_lost`), never re-sent: whether the channel got it is unknown, and a reminder must not
   arrive twice. A live process's sends are never taken, however long they take.
2. Roll: a yearly event whose day passed gets its next occurrence materialised; a one-time one completes.
3. Then one reminder at a time: claim the next due one (`delivering`, attempt counted) in a durable
   BEGIN IMMEDIATE transaction, so a concurrent tick cannot claim it too; send it through the
   snapshotted channel only; record it: delivered, or retried at due + 1, 5, 15, 60 min (later if the
   channel asked, clamped to the validity window), or failed where everyone sees it. Only the reminder
   being sent is ever `delivering`: a process that dies or is stopped leaves the others pending.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..channels import ChannelError, channel_for
from ..channels.targets import THREAD_KEYS
from ..core.procid import owner_gone, owner_identity
from . import stamps
from .gate import delivery_conversation
from .messages import reminder_text
from .stops import StopGuard, Stopped

if TYPE_CHECKING:
    from ..channels import Channel
    from ..core.context import ToolContext
    from ..core.paths import FermixPaths

ChannelLookup = Callable[[str, "FermixPaths"], "Channel | None"]
BACKOFF_MINUTES = (0, 1, 5, 15, 60)  # attempt n is due at scheduled_for + BACKOFF_MINUTES[n - 1]
MAX_ATTEMPTS = len(BACKOFF_MINUTES)
ERROR_MAX = 500
# A send claimed on another host and not reported back after this long is lost (never re-sent). On this
# host the claimant's process is asked instead: a live one is never taken over.
SEND_LEASE_SECONDS = 600
MAX_SENDS = 200  # reminders claimed per tick; the rest wait for the next one


class DeliveryReport:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.retrying: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []
        self.expired: list[str] = []
        self.rolled: list[str] = []
        self.followups: list[dict[str, Any]] = []
        self.timings_ms: dict[str, float] = {}
        # Due reminders this tick left for the next one (past its claim cap); 0 when it took them all.
        self.more_due = 0
        self.stopped: str | None = None  # the signal that ended the pass early

    @property
    def quiet(self) -> bool:
        return not (
            self.sent
            or self.retrying
            or self.failed
            or self.expired
            or self.rolled
            or self.more_due
            or self.stopped
        )

    def as_dict(self) -> dict[str, Any]:
        out = {
            "status": "ran",
            "sent": self.sent,
            "retrying": self.retrying,
            "failed": self.failed,
            "expired": self.expired,
            "rolled": self.rolled,
            "followups": self.followups,
            "more_due": self.more_due,
            "timings_ms": self.timings_ms,
        }
        if self.stopped:
            out["stopped"] = self.stopped
        return out


def _short(text: str) -> str:
    raw = text.encode("utf-8")[:ERROR_MAX]
    return raw.decode("utf-8", errors="ignore")


def _thread_of(target: dict[str, Any]) -> dict[str, Any]:
    """The snapshotted thread (Telegram topic, Slack thread) a send goes to, as the channels' meta keys."""
    return {k: target[k] for k in THREAD_KEYS if k in target}


def _lost(r: sqlite3.Row, stamp: str) -> bool:
    """Whether a send in flight has no process behind it any more."""
    claimant = r["claimed_by"] or ""
    if claimant.partition(":")[0] == os.uname().nodename:
        return owner_gone(claimant)  # this host: the process itself says (a live one is never taken)
    return bool(r["lease_until"] <= stamp)  # another host's process cannot be asked: its lease decides


def reconcile(db: sqlite3.Connection, now: datetime, report: DeliveryReport) -> None:
    stamp = stamps.ts(now)
    rows = db.execute(
        "SELECT id, claimed_by, lease_until FROM reminder_occurrences WHERE status = 'delivering'"
    ).fetchall()
    for r in rows:
        if not _lost(r, stamp):
            continue
        db.execute(
            "UPDATE reminder_occurrences SET status = 'failed', next_attempt_at = NULL, last_error_code = 'runner_lost',"
            " last_error = ? WHERE id = ? AND status = 'delivering' AND claimed_by = ?",
            (
                "the process sending this reminder stopped mid-send; it may or may not have arrived, so it is not "
                "sent again",
                r["id"],
                r["claimed_by"],
            ),
        )
        report.failed.append({"reminder_id": r["id"], "code": "runner_lost"})


def roll(db: sqlite3.Connection, now: datetime, report: DeliveryReport) -> None:
    from . import store  # zones and plans, only when an event's day has passed

    passed = (now - timedelta(days=1)).date().isoformat()
    for event in db.execute(
        "SELECT * FROM temporal_events e WHERE status = 'active' AND next_date < ? AND (recurrence = 'yearly'"
        " OR NOT EXISTS (SELECT 1 FROM reminder_occurrences r WHERE r.event_id = e.id"
        " AND r.status IN ('pending', 'delivering'))) ORDER BY next_date LIMIT 500",
        (passed,),
    ).fetchall():
        today = store.local_today(now, event["timezone"])
        if event["recurrence"] == "yearly":
            occ = store.next_occurrence(
                store.when_of(event), event["timezone"], event["leap_day_policy"], today
            )
            db.execute(
                "UPDATE temporal_events SET next_date = ?, next_at = ? WHERE id = ?",
                (occ.day.isoformat(), stamps.ts(occ.start), event["id"]),
            )
            store.materialise(db, store.get_event(db, event["id"]), now, today)
        else:
            # A one-time event completes once nothing of it is left to send: a reminder snoozed past its
            # day keeps it active just long enough to deliver (reference 9.4).
            completed = db.execute(
                "UPDATE temporal_events SET status = 'completed', completed_at = ?, updated_at = ? WHERE id = ?"
                " AND NOT EXISTS (SELECT 1 FROM reminder_occurrences WHERE event_id = ?"
                " AND status IN ('pending', 'delivering'))",
                (stamps.ts(now), stamps.ts(now), event["id"], event["id"]),
            ).rowcount
            if not completed:
                continue
        report.rolled.append(event["id"])


CLAIM_COLUMNS = (
    "r.*, e.title, e.kind, e.time_kind, e.event_time, e.timezone, e.delivery_target, e.status AS event_status,"
    " e.followup, e.description"
)


def claim_next(
    db: sqlite3.Connection, now: datetime, claimant: str, lease_until: datetime, report: DeliveryReport
) -> sqlite3.Row | None:
    """Claim the next due reminder (None when none is left), settling on the way the due ones that are
    not to be sent: of a cancelled event, past their validity window, or superseded by a later rule."""
    stamp = stamps.ts(now)
    while True:
        r = db.execute(
            f"SELECT {CLAIM_COLUMNS} FROM reminder_occurrences r JOIN temporal_events e ON e.id = r.event_id"
            " WHERE r.status = 'pending' AND r.next_attempt_at <= ? ORDER BY r.next_attempt_at, r.id LIMIT 1",
            (stamp,),
        ).fetchone()
        if r is None:
            return None
        if r["event_status"] == "cancelled":
            db.execute(
                "UPDATE reminder_occurrences SET status = 'cancelled', next_attempt_at = NULL WHERE id = ?",
                (r["id"],),
            )
            continue
        if r["valid_until"] <= stamp:
            db.execute(
                "UPDATE reminder_occurrences SET status = 'expired', next_attempt_at = NULL, last_error = ? WHERE id = ?",
                ("its validity window closed before it could be sent", r["id"]),
            )
            report.expired.append(r["id"])
            continue
        newest = db.execute(
            "SELECT max(scheduled_for) FROM reminder_occurrences WHERE event_id = ? AND status = 'pending'"
            " AND next_attempt_at <= ?",
            (r["event_id"], stamp),
        ).fetchone()[0]
        if r["attempt_count"] > 0 and r["scheduled_for"] < newest:
            db.execute(
                "UPDATE reminder_occurrences SET status = 'superseded', next_attempt_at = NULL WHERE id = ?",
                (r["id"],),
            )
            continue
        db.execute(  # an older reminder of this event still retrying is now noise: this one says more
            "UPDATE reminder_occurrences SET status = 'superseded', next_attempt_at = NULL WHERE event_id = ?"
            " AND status = 'pending' AND attempt_count > 0 AND scheduled_for < ?",
            (r["event_id"], r["scheduled_for"]),
        )
        db.execute(
            "UPDATE reminder_occurrences SET status = 'delivering', claimed_by = ?, lease_until = ?,"
            " attempt_count = attempt_count + 1 WHERE id = ? AND status = 'pending'",
            (claimant, stamps.ts(lease_until), r["id"]),
        )
        return r


def release(ctx: ToolContext, r: sqlite3.Row, claimant: str) -> None:
    """Give back a claim that was never sent (a stop came before its send began): pending again."""
    with ctx.state.write(durable=True) as db:
        db.execute(
            "UPDATE reminder_occurrences SET status = 'pending', claimed_by = NULL, lease_until = NULL,"
            " attempt_count = attempt_count - 1 WHERE id = ? AND status = 'delivering' AND claimed_by = ?",
            (r["id"], claimant),
        )


def count_due(db: sqlite3.Connection, now: datetime) -> int:
    return int(
        db.execute(
            "SELECT count(*) FROM reminder_occurrences WHERE status = 'pending' AND next_attempt_at <= ?",
            (stamps.ts(now),),
        ).fetchone()[0]
    )


def next_attempt(r: sqlite3.Row, attempts: int, now: datetime, retry_after: float | None) -> datetime | None:
    """When to try again after `attempts` failed sends, or None when no attempt fits any more."""
    if attempts >= MAX_ATTEMPTS:
        return None
    due = stamps.parse_ts(r["scheduled_for"]) + timedelta(minutes=BACKOFF_MINUTES[attempts])
    if retry_after:
        due = max(due, now + timedelta(seconds=retry_after))
    due = max(due, now)
    valid = stamps.parse_ts(r["valid_until"])
    if due >= valid:
        return valid - timedelta(seconds=1) if valid - timedelta(seconds=1) > now else None
    return due


def send_one(
    ctx: ToolContext, r: sqlite3.Row, channels: ChannelLookup
) -> tuple[dict[str, Any] | None, ChannelError | None]:
    target = json.loads(r["delivery_target"])
    channel = channels(target["platform"], ctx.paths)
    if channel is None:
        return None, ChannelError(
            f"no channel for platform {target['platform']!r} in this fermix; reminders never fall back to another",
            code="unsupported_channel",
            permanent=True,
        )
    meta = {
        "kind": "reminder",
        "event_id": r["event_id"],
        "reminder_id": r["id"],
        "rule_id": r["rule_id"],
        "sent_at": stamps.ts(ctx.now()),
        **_thread_of(target),
    }
    try:
        sent = channel.send_text(target["address"], reminder_text(r, ctx.now()), meta)
    except ChannelError as e:
        return None, e
    except Exception as e:  # a channel bug must not lose the record of the attempt
        from ..core.logs import logger

        logger("fermix.events").exception("reminder %s: channel %s failed", r["id"], target["platform"])
        return None, ChannelError(f"{type(e).__name__}: {e}", code="channel_error")
    return sent.as_dict(), None


def record(
    ctx: ToolContext,
    r: sqlite3.Row,
    claimant: str,
    sent: dict[str, Any] | None,
    error: ChannelError | None,
    report: DeliveryReport,
) -> None:
    now = ctx.now()
    target = json.loads(r["delivery_target"])
    with ctx.state.write(durable=True) as db:
        if error is None:
            # The send happened: that is recorded even over a `runner_lost` guess another tick made.
            done = db.execute(
                "UPDATE reminder_occurrences SET status = 'delivered', sent_at = ?, next_attempt_at = NULL,"
                " platform = ?, address = ?, conversation_id = ?, last_error = NULL, last_error_code = NULL"
                " WHERE id = ? AND claimed_by = ?"
                " AND (status = 'delivering' OR (status = 'failed' AND last_error_code = 'runner_lost'))",
                (
                    stamps.ts(now),
                    target["platform"],
                    target["address"],
                    delivery_conversation(target["platform"], target["address"]),
                    r["id"],
                    claimant,
                ),
            ).rowcount
            if done:
                report.sent.append({"reminder_id": r["id"], "event_id": r["event_id"], "to": sent})
            else:
                _claim_lost(r, report, "it was sent")
            return
        attempts = r["attempt_count"] + 1
        retry = None if error.permanent else next_attempt(r, attempts, now, error.retry_after)
        status = "pending" if retry else "failed"
        done = db.execute(
            "UPDATE reminder_occurrences SET status = ?, next_attempt_at = ?, last_error = ?, last_error_code = ?,"
            " claimed_by = NULL, lease_until = NULL WHERE id = ? AND status = 'delivering' AND claimed_by = ?",
            (status, stamps.ts(retry) if retry else None, _short(str(error)), error.code, r["id"], claimant),
        ).rowcount
        if not done:
            _claim_lost(r, report, f"its send failed ({error.code})")
            return
        entry = {"reminder_id": r["id"], "event_id": r["event_id"], "attempts": attempts, "code": error.code}
        if retry:
            report.retrying.append({**entry, "next_attempt_at": stamps.ts(retry)})
        else:
            report.failed.append(entry)


def _claim_lost(r: sqlite3.Row, report: DeliveryReport, what: str) -> None:
    """The row stopped being this tick's claim while it sent: its record is left as it is, and said."""
    from ..core.logs import logger

    logger("fermix.events").warning(
        "reminder %s: %s, but it is no longer this tick's to record", r["id"], what
    )
    report.failed.append(
        {"reminder_id": r["id"], "event_id": r["event_id"], "code": "claim_lost", "detail": what}
    )


def record_interrupted(
    ctx: ToolContext, r: sqlite3.Row, claimant: str, signal_name: str, report: DeliveryReport
) -> None:
    """A stop cut this reminder's send short: it may or may not have arrived, so it is not sent again."""
    with ctx.state.write(durable=True) as db:
        db.execute(
            "UPDATE reminder_occurrences SET status = 'failed', next_attempt_at = NULL, last_error_code = 'interrupted',"
            " last_error = ?, claimed_by = NULL, lease_until = NULL WHERE id = ? AND status = 'delivering'"
            " AND claimed_by = ?",
            (
                f"fermix jobs run was stopped ({signal_name}) while sending this reminder; it may or may not have "
                "arrived, so it is not sent again",
                r["id"],
                claimant,
            ),
        )
    report.failed.append(
        {
            "reminder_id": r["id"],
            "event_id": r["event_id"],
            "attempts": r["attempt_count"] + 1,
            "code": "interrupted",
        }
    )


def deliver_due(
    ctx: ToolContext,
    channels: ChannelLookup = channel_for,
    *,
    lease: int = SEND_LEASE_SECONDS,
    limit: int = MAX_SENDS,
) -> tuple[int, DeliveryReport]:
    """One pass of the engine: (exit code, report). `channels` is the seam tests hand a fake channel to.

    A SIGTERM, SIGINT or SIGHUP ends the pass early (exit 143, 130 or 129): see `stops`."""
    t0 = time.perf_counter()
    report = DeliveryReport()
    now = ctx.now().astimezone(UTC)
    claimant = owner_identity()
    with StopGuard() as guard:
        with ctx.state.write(durable=True) as db:
            reconcile(db, now, report)
            roll(db, now, report)
        report.timings_ms["claim"] = round((time.perf_counter() - t0) * 1000, 2)
        t1 = time.perf_counter()
        followups = _send_due(ctx, channels, guard, now, claimant, lease, limit, report)
        report.timings_ms["send"] = round((time.perf_counter() - t1) * 1000, 2)
        if followups and not guard.stopped:
            from .followup import run_followups

            try:
                with guard.interruptible():  # best effort: a stop ends the check-ins, unrecorded
                    run_followups(ctx, followups, lambda r, text: send_followup(ctx, r, text, channels),
                                  lambda r, status: record_followup(ctx, r, status, report))  # fmt: skip
            except Stopped:
                pass
    report.stopped = guard.stopped
    return guard.exit_code, report


def _send_due(
    ctx: ToolContext,
    channels: ChannelLookup,
    guard: StopGuard,
    now: datetime,
    claimant: str,
    lease: int,
    limit: int,
    report: DeliveryReport,
) -> list[sqlite3.Row]:
    """Claim, send and record the due reminders one at a time; returns the delivered follow-up ones."""
    followups: list[sqlite3.Row] = []
    claimed = 0
    while not guard.stopped:
        if claimed >= limit:
            with ctx.state.read() as db:
                report.more_due = count_due(db, now)
            break
        with ctx.state.write(durable=True) as db:
            # The lease counts from this claim: one send's worth, however many come before it.
            r = claim_next(db, now, claimant, ctx.now() + timedelta(seconds=lease), report)
        if r is None:
            break
        claimed += 1
        if guard.stopped:  # the stop came during the claim: this one was never sent
            release(ctx, r, claimant)
            break
        try:
            with guard.interruptible():
                sent, error = send_one(ctx, r, channels)
        except Stopped as e:
            record_interrupted(ctx, r, claimant, str(e), report)
            break
        record(ctx, r, claimant, sent, error, report)
        if error is None and r["followup"]:
            followups.append(r)
    return followups


def send_followup(ctx: ToolContext, r: sqlite3.Row, text: str, channels: ChannelLookup) -> str:
    """The check-in's text to the reminder's own channel and address (never another)."""
    target = json.loads(r["delivery_target"])
    channel = channels(target["platform"], ctx.paths)
    if channel is None:
        return "error: no channel"
    meta = {
        "kind": "reminder_followup",
        "event_id": r["event_id"],
        "reminder_id": r["id"],
        **_thread_of(target),
    }
    try:
        channel.send_text(target["address"], text, meta)
    except ChannelError as e:
        return _short(f"error: {e.code}: {e}")
    return "sent"


def record_followup(ctx: ToolContext, r: sqlite3.Row, status: str, report: DeliveryReport) -> None:
    with ctx.state.write() as db:
        db.execute(
            "UPDATE reminder_occurrences SET followup_status = ? WHERE id = ?", (_short(status), r["id"])
        )
    report.followups.append({"reminder_id": r["id"], "status": status})
