"""`fermix jobs worker RUN_ID CLAIMANT PARENT_PID`: carry out one claimed run, report on stdout.

Started only by the runner. It never writes the run row (the runner does); it reports JSON lines on
its original stdout: `started` (prompt snapshot and config), `progress` pings (throttled; they feed
the inactivity timeout) and one `result`. Before reporting a finished run's result it saves it durably
in the run's directory (`runresult`), so a runner killed before recording it loses nothing known.
Anything else that would print goes to stderr instead.
On Linux it asks the kernel to kill it when its parent dies, so a SIGKILLed runner leaves no
worker behind to finish a run that is about to be declared interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from types import FrameType
from typing import IO, Any

from ..core.cancel import stop_signals
from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.logs import logger
from .claims import config_snapshot
from .execute import Prepared, RunOutcome, execute, prepare
from .job import Job
from .runresult import save_result

log = logger("fermix.jobs")

PROGRESS_INTERVAL = 0.5
STOP_GRACE_SECONDS = 2
_PR_SET_PDEATHSIG = 1


class StopSignal:
    """SIGTERM (from the runner, or the kernel when the runner dies), or SIGHUP: unwind like Ctrl-C, so the agent
    loop stops cleanly and the exec engine kills the command's process group on its way out; if
    unwinding hangs, SIGALRM's default action ends the process. Once received, whatever the run
    returns is a stopped run's, never saved as its result."""

    def __init__(self) -> None:
        self.received = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        signal.alarm(STOP_GRACE_SECONDS)
        raise KeyboardInterrupt


def die_with_parent(parent_pid: int, stop: StopSignal) -> None:
    """Ask the kernel for SIGTERM when the runner dies (Linux); exit at once if it is already gone.

    SIGHUP stops the run as SIGTERM does (unless ignored), never killing the worker outright: its run
    would end without a result and its command's own process group would run on."""
    for sig in stop_signals(signal.SIGTERM):
        signal.signal(sig, stop)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            log.warning("could not ask to die with the runner; a killed runner may leave this worker running")
    if os.getppid() != parent_pid:
        os._exit(1)


class Reporter:
    """The protocol stream back to the runner."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.last_progress = 0.0

    def send(self, event: dict[str, Any]) -> None:
        try:
            self.stream.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
            self.stream.flush()
        except BrokenPipeError:  # the runner is gone: nobody will record this run
            os._exit(1)

    def progress(self, what: str) -> None:
        now = time.monotonic()
        if now - self.last_progress >= PROGRESS_INTERVAL:
            self.last_progress = now
            self.send({"event": "progress", "what": what})


def _protocol_stream() -> IO[str]:
    """Keep the original stdout for the protocol; point fd 1 at stderr for everyone else."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def work(
    ctx: ToolContext, run_id: str, claimant: str, reporter: Reporter, stop: StopSignal | None = None
) -> RunOutcome:
    db = ctx.state.conn
    run = db.execute(
        "SELECT job_id, status, claimed_by, session_id FROM job_runs WHERE id = ?", (run_id,)
    ).fetchone()
    if run is None or run["claimed_by"] != claimant or run["status"] != "running":
        return RunOutcome.failure("not_claimed", f"run {run_id} is not running under this runner's claim")
    job = Job.from_row(db.execute("SELECT * FROM scheduled_jobs WHERE id = ?", (run["job_id"],)).fetchone())
    session = run["session_id"]
    try:
        prepared = prepare(ctx, job, session, run_id)
    except ToolError as e:
        return RunOutcome.failure(e.code, e.message)
    reporter.send(
        {
            "event": "started",
            "prompt": prepared.snapshot,
            "config": json.loads(config_snapshot(job, {"session_id": session})),
        }
    )
    outcome = execute_with_retries(ctx, job, session, prepared, reporter, run_id)
    if stop is not None and stop.received:  # stopped, not finished: nothing to save
        return outcome
    try:
        ctx.state.check_home()  # never recreate a deleted home's directories for it
        save_result(ctx.paths, job.id, run_id, outcome)
    except (OSError, ToolError) as e:
        # The runner still hears the result; only a runner killed before recording it loses it.
        log.warning("job run %s: result.json not written: %s", run_id, e)
    return outcome


def execute_with_retries(
    ctx: ToolContext,
    job: Job,
    session: str,
    prepared: Prepared,
    reporter: Reporter,
    run_id: str | None = None,
) -> RunOutcome:
    """Run; a transient provider failure before any tool ran is tried again, each time in a fresh loop,
    after a growing pause, as long as the pause still leaves room inside the job's timeout."""
    started = time.monotonic()
    outcome = execute(job, prepared, reporter.progress)
    attempt = 1
    while outcome.transient and attempt <= (settings := ctx.config.fermix_core.jobs).transient_retries:
        wait = settings.retry_backoff_seconds * 4 ** (attempt - 1)
        if time.monotonic() - started + wait >= job.timeout_seconds * 0.8:
            break
        log.warning("job run of %s: %s; trying again in %s s", job.id, outcome.error_code, wait)
        end = time.monotonic() + wait
        while (left := end - time.monotonic()) > 0:
            reporter.progress("retry_wait")  # waiting is not inactivity
            time.sleep(min(left, PROGRESS_INTERVAL))
        attempt += 1
        outcome = execute(job, prepare(ctx, job, f"{session}-r{attempt}", run_id), reporter.progress)
    outcome.attempts = attempt
    return outcome


def main(argv: list[str], home: str | None) -> int:
    if len(argv) != 3 or not argv[2].isdigit():
        sys.stderr.write(
            "usage: fermix jobs worker RUN_ID CLAIMANT PARENT_PID (started by fermix jobs run)\n"
        )
        return 2
    run_id, claimant, parent = argv
    stop = StopSignal()
    die_with_parent(int(parent), stop)
    reporter = Reporter(_protocol_stream())
    ctx = ToolContext.for_cli(home=home)
    from ..core.logs import setup_logging

    setup_logging(ctx.paths.log_file)
    try:
        outcome = work(ctx, run_id, claimant, reporter, stop)
    except KeyboardInterrupt:
        outcome = RunOutcome.failure("interrupted", "the runner stopped this run")
    except ToolError as e:
        outcome = RunOutcome.failure(e.code, e.message)
    except Exception as e:  # a bug: the run records it; the traceback goes to the log
        log.exception("job run %s failed in the worker", run_id)
        outcome = RunOutcome.failure("internal_error", f"{type(e).__name__}: {e}")
    finally:
        ctx.close()
    reporter.send({"event": "result", "outcome": outcome.to_dict()})
    return 0
