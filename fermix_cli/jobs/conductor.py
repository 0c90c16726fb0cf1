"""The front of `fermix jobs run`: the scheduler lock and the idle check, before anything heavy is imported.

Most minutes nothing is due. Then a tick is: start Python, take the lock, five indexed reads, exit;
the claim machinery, the config validators and subprocess handling (`runner`) are imported only when
there is something to do. This module drives a tick and its runs; `tick` and `runner` sit below it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .liveness import SchedulerLock
from .tick import Summary, nothing_to_do

if TYPE_CHECKING:
    from ..core.context import ToolContext


def run_tick(ctx: ToolContext, *, use_lock: bool = True) -> tuple[int, Summary]:
    """One `fermix jobs run`: (exit code, summary). A held scheduler lock means another tick is claiming."""
    t0 = time.monotonic()
    lock = SchedulerLock(ctx.paths)
    if use_lock and not lock.try_acquire():
        return 0, Summary(status="busy")
    try:
        idle = nothing_to_do(ctx.state.conn, ctx.now())
    except BaseException:
        lock.release()
        raise
    if idle:
        lock.release()
        return 0, Summary(status="idle", timings_ms={"total": round((time.monotonic() - t0) * 1000, 2)})
    from .runner import run_scheduler

    return run_scheduler(ctx, lock if use_lock else None, t0)
