"""Fanning tasks out to concurrent workers, each a delegated model loop on its own thread.

At most `max_concurrency` workers run at once; each has its own wall-clock limit from the moment it
starts. A worker past its limit is reported `timed_out` with what it had produced, told to stop (it does
at its next model or tool event) and no longer counted against the concurrency cap, so one stuck worker
never holds the others back. A cancelled caller (an MCP client's cancel) gives up on every worker at
once the same way, and starts no other. Threads are daemons: a worker blocked in a slow model call never
keeps the process alive after the call has answered.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core.cancel import interrupt_requested
from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.logs import logger
from ...core.records import Record, field
from ...core.registry import registry_of
from ..delegate import (
    Delegated,
    Delegation,
    Prepared,
    Stopwatch,
    child_session,
    narrowing,
    prepare,
    run_delegated,
)
from ..messages import valid_unicode
from ..transcripts import Transcript

if TYPE_CHECKING:
    from ...core.cancel import CancelToken

log = logger("fermix.subagents")
# How long a worker given up on has to stop the tool call it runs (a shell command's process group).
TOOL_STOP_GRACE = 2.0
# How often the caller looks at the Ctrl-C flag while it waits for its workers.
INTERRUPT_CHECK_S = 0.1


class Slot(Record):
    """One task's worker: what it runs, its stopwatch, and how it ended."""

    id: str
    delegation: Delegation
    session_id: str
    stopwatch: Stopwatch
    prepared: Prepared | None = None  # shared with the other tasks of the same narrowing
    done: threading.Event = field(default_factory=threading.Event)
    started: float | None = None
    deadline: float | None = None
    result: Delegated | None = None  # written by the worker
    final: Delegated | None = None  # what the caller reports (a late worker's result is ignored)


def _work(ctx: ToolContext, slot: Slot, changed: threading.Event) -> None:
    try:
        slot.result = run_delegated(
            ctx,
            slot.delegation,
            stopwatch=slot.stopwatch,
            session_id=slot.session_id,
            prepared=slot.prepared,
        )
    except BaseException as e:  # a bug in a worker must not hang the caller; it is reported as a failure
        log.exception("subagent worker %s crashed", slot.id)
        slot.result = Delegated(
            status="failed",
            output=slot.stopwatch.so_far(),
            session_id=slot.session_id,
            error={
                "code": "internal_error",
                "message": f"the worker crashed ({type(e).__name__})",
                "details": {},
            },
        )
    finally:
        slot.done.set()
        changed.set()


def _give_up(ctx: ToolContext, slots: Sequence[Slot], status: str, error: dict[str, Any]) -> None:
    """Stop waiting for `slots`: end each one's run in the transcript, which its thread may never get to
    do (the process can exit first), with what it had done (its model calls, their tokens, and the turn
    in flight, its running call `interrupted`); then cancel each (a tool in flight that watches the
    token, a shell command or git, has its process group killed now; the loop stops at its next step)."""
    try:
        # Recorded as things stand now, before the cancel lands: the worker's own late writes are kept
        # out of a run ended here, so what the transcript says does not depend on which thread is first.
        transcript = Transcript(ctx.state, ctx.clock)
        for slot in slots:
            done = slot.stopwatch.progress(error["message"])
            transcript.abandon_runs(
                slot.session_id, status, error, iterations=done.iterations, usage=done.usage, turn=done.turn
            )
    except Exception:  # the answer (or the interrupt) goes on; the run is left to the log
        log.exception("could not end the runs of workers given up on")
    for slot in slots:
        slot.stopwatch.cancel.cancel(error["message"])
    # A tool that watches the token is stopped by the worker's own thread: give it a moment, so its
    # process group is gone before the caller answers (and its process perhaps exits).
    until = time.monotonic() + TOOL_STOP_GRACE
    for slot in slots:
        if not slot.stopwatch.wait_tool_stopped(max(0.0, until - time.monotonic())):
            log.warning("subagent worker %s: its tool call was still running when given up on", slot.id)


def _timeout_error(timeout: float) -> dict[str, Any]:
    return {"code": "timeout", "message": f"the worker did not finish within {timeout:g} s", "details": {}}


def _stopped(
    slot: Slot, status: str, error: dict[str, Any], duration: float, *, started: bool = True
) -> Delegated:
    """What a worker given up on reports: what it had produced by then. One that never started created
    no conversation, so it names none (`session_id` null: `fermix logs --session` would find nothing)."""
    return Delegated(
        status=status,
        output=slot.stopwatch.so_far(),
        session_id=slot.session_id if started else None,
        iterations=slot.stopwatch.iterations,
        duration_ms=round(duration * 1000, 1),
        error=error,
    )


def _timed_out(slot: Slot, timeout: float) -> Delegated:
    return _stopped(slot, "timed_out", _timeout_error(timeout), timeout)


def fan_out(
    ctx: ToolContext, tasks: Sequence[tuple[str, Delegation]], *, max_concurrency: int, timeout: float
) -> list[Delegated]:
    """Run every (id, delegation); results in input order.

    What the workers share is built here, once, before any starts, and only read after: the caller's
    loaded config, its state connection (workers borrow connections from it, so the WAL is never
    checkpointed by a worker closing the last one), the registry's loaded families, and per narrowing
    (tasks alike in tools, policy and model) the child context with its sandbox and the toolbox.
    Each worker still runs in its own context (session, extras, connection), and policy is checked
    against it at every call.
    """
    ctx.config  # noqa: B018 - loaded once here, shared read-only by every worker
    ctx.state  # noqa: B018 - the workers' connections are lent from it
    # The workers' sandboxes are siblings of the caller's (its protected paths as it found them); a
    # caller that has not used its own yet builds it now, once, and keeps it for its next fan-outs.
    ctx.sandbox  # noqa: B018
    # Load the registry's families and declared toolsets once, here, rather than racing in every worker.
    registry = registry_of(ctx)
    registry.all()
    registry.toolset(ctx.toolset).get("-", ctx)
    kits: dict[tuple[Any, ...], Prepared | None] = {}
    for _task_id, d in tasks:
        key = narrowing(d)
        if key not in kits:
            try:
                kit = prepare(ctx, d, registry)
                # The workers' messages join the search index together, once they are done (below).
                kit.options = kit.options.replace(index_at_end=False)
                kits[key] = kit
            except Exception as e:  # each such worker prepares again and reports why it cannot start
                if not isinstance(e, ToolError):
                    log.exception("preparing subagent workers failed")
                kits[key] = None
    slots = [
        Slot(
            id=task_id,
            delegation=d,
            session_id=child_session(ctx.session_id, f"subagent-{task_id}"),
            stopwatch=Stopwatch(None, ctx.cancel.child() if ctx.cancel is not None else None),
            prepared=kits[narrowing(d)],
        )
        for task_id, d in tasks
    ]
    pending: deque[Slot] = deque(slots)
    running: list[Slot] = []
    changed = threading.Event()
    watch = _watch_cancel(ctx, changed)
    try:
        _supervise(ctx, pending, running, changed, max_concurrency, timeout)
    except BaseException:  # Ctrl-C (or a bug) in the caller: its workers stop with it
        message = "the caller was interrupted"
        _give_up(ctx, running, "interrupted", {"code": "interrupted", "message": message, "details": {}})
        raise
    finally:
        if watch is not None:
            watch.cancel("the fan-out ended")  # ends the watching thread
    _index_messages(ctx)
    return [s.final or _timed_out(s, timeout) for s in slots]


def _index_messages(ctx: ToolContext) -> None:
    """Add the workers' messages to the transcripts' search index in one batch (one FTS segment for
    all of them, not one per worker). Never fails the fan-out: what stays pending is indexed by the
    next run's end or before the next search (`ftsbatch.catch_up`)."""
    from ...core.ftsbatch import index_pending

    try:
        with ctx.state.write() as c:
            index_pending(c, "messages_fts")
    except Exception:
        log.warning("the subagents' messages were left for the next search index batch", exc_info=True)


def _watch_cancel(ctx: ToolContext, changed: threading.Event) -> CancelToken | None:
    """Wake the supervisor when the caller's call is cancelled (a worker stuck in a model call would
    otherwise hold it until its own deadline); the returned token, cancelled, ends the watch."""
    if ctx.cancel is None:
        return None
    watch = ctx.cancel.child()

    def wake() -> None:
        watch.wait()
        changed.set()

    threading.Thread(target=wake, name="subagents-cancel", daemon=True).start()
    return watch


def _cancel_all(ctx: ToolContext, pending: deque[Slot], running: list[Slot]) -> None:
    """The caller's call was cancelled: give up on every running worker now, start no other."""
    assert ctx.cancel is not None
    error = {"code": "canceled", "message": f"the run was cancelled: {ctx.cancel.reason}", "details": {}}
    now = time.monotonic()
    stopped = []
    for slot in running:
        if slot.done.is_set():
            slot.final = slot.result
        else:
            slot.final = _stopped(slot, "canceled", error, now - (slot.started or now))
            stopped.append(slot)
    for slot in pending:
        slot.final = _stopped(slot, "canceled", error, 0.0, started=False)
    running.clear()
    pending.clear()
    _give_up(ctx, stopped, "error", error)


def _supervise(
    ctx: ToolContext,
    pending: deque[Slot],
    running: list[Slot],
    changed: threading.Event,
    max_concurrency: int,
    timeout: float,
) -> None:
    """Start workers up to `max_concurrency`, collect them as they end, give up on each at `timeout`,
    and on all of them once the caller's call is cancelled."""
    while pending or running:
        if ctx.cancel is not None and ctx.cancel.cancelled:
            _cancel_all(ctx, pending, running)
            return
        while pending and len(running) < max_concurrency:
            slot = pending.popleft()
            slot.started = time.monotonic()
            slot.deadline = slot.started + timeout
            slot.stopwatch.deadline = slot.deadline
            threading.Thread(
                target=_work, args=(ctx, slot, changed), name=f"subagent-{slot.id}", daemon=True
            ).start()
            running.append(slot)
        soonest = min(s.deadline or 0.0 for s in running)
        # In slices: a Ctrl-C whose KeyboardInterrupt a finalizer swallowed (the garbage collector drops
        # exceptions raised in __del__) still stops the caller, through the flag it raised.
        changed.wait(max(0.0, min(soonest - time.monotonic(), INTERRUPT_CHECK_S)))
        changed.clear()
        if interrupt_requested():
            raise KeyboardInterrupt
        now = time.monotonic()
        for slot in list(running):
            if slot.done.is_set():
                slot.final = slot.result
                running.remove(slot)
            elif slot.deadline is not None and now >= slot.deadline:
                slot.final = _timed_out(slot, timeout)
                running.remove(slot)
                _give_up(ctx, [slot], "error", _timeout_error(timeout))


def clip_utf8(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes, never inside a character; and whether it was cut."""
    text = valid_unicode(text)
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore"), True


def result_entry(task_id: str, run: Delegated, budget: int) -> dict[str, Any]:
    output, truncated = clip_utf8(run.output, budget)
    return {
        "id": task_id,
        "status": run.status,
        "agent_name": f"subagent:{task_id}",
        "session_id": run.session_id,
        "duration_ms": run.duration_ms,
        "iterations": run.iterations,
        "output": output,
        "error": run.error,
        "truncated": truncated,
    }
