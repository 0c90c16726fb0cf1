"""`fermix jobs run`: claim what is due, run each claimed run in a worker process, record and deliver.

One invocation: take the scheduler lock without waiting (held by another process: exit 0), reconcile,
expire and claim in one transaction, let go of the lock, then supervise the workers. Each claimed run
executes in its own `fermix jobs worker` process (its own process group, killed with this process on
Linux), so the wall-clock and inactivity timeouts can stop it whatever it is doing. When a run ends, the
runner records its outcome (with delivery `pending` if a channel send is due), hands the send to its
delivery thread, so a slow channel never holds up the policing of the other runs, and claims again if a
slot came free; it exits when no run or delivery of its own is left. Manual runs (run_job_now) go through the same `Dispatcher`, uncapped and without the
scheduler lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from types import FrameType
from typing import Any, TypeVar

from ..core.cancel import stop_signals
from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.logs import logger
from ..core.records import Record
from ..core.state import is_busy, patiently
from . import outcomes as records
from .claims import ClaimedRun, TickReport, claim_manual, expire, tick
from .delivery import DeliveryResult, deliver, message_text, settled, write_output
from .execute import RunOutcome, command_spawn_id
from .job import Job, active_run, fetch_job, job_state_error, run_summary
from .liveness import Runner, SchedulerLock, sweep_dead
from .runresult import discard_result
from .tick import Summary, jobs_config

log = logger("fermix.jobs")

KILL_GRACE_SECONDS = 3.0
# While its runs are in flight a runner keeps ticking, just after each minute boundary of the wall clock:
# where the next `fermix jobs run` cannot start (a systemd timer never overlaps its own service), due
# jobs still start on time.
TICK_SECONDS = 60.0
TICK_OFFSET_SECONDS = 0.5
# A command job's own timeout (in the exec engine) fires first; the runner's is the backstop.
COMMAND_TIMEOUT_SLACK = 10.0
LINE_MAX = 16 * 1024 * 1024
# How long a run's record waits for state.db when another process holds its write lock (on top of
# SQLite's own busy timeout per try): one slow transaction elsewhere must not cost the runs in flight.
RECORD_PATIENCE_SECONDS = 300.0

T = TypeVar("T")


def _patiently(what: str, call: Callable[[], T]) -> T:
    return patiently(call, patience=RECORD_PATIENCE_SECONDS, what=what)


def _lost_to_state(exc: BaseException) -> bool:
    """A record this process could not write (state.db busy past patience, or failing): that run's
    loss alone, never a reason to stop supervising the others. A vanished home stops everything."""
    if isinstance(exc, ToolError):
        return exc.code != "home_vanished"
    return type(exc).__module__ == "sqlite3"  # any of its errors (sqlite3 is imported where used)


class Stopped(Exception):
    """SIGTERM, SIGINT or SIGHUP reached the runner."""


class Active(Record):
    """A run whose worker is alive (or not yet reaped)."""

    claimed: ClaimedRun
    job: Job
    proc: subprocess.Popen[bytes]
    started_mono: float
    last_activity: float
    wall_deadline: float
    inactivity: float | None
    buffer: bytes = b""
    eof_at: float | None = None
    result: RunOutcome | None = None
    stop: tuple[str, str] | None = None
    stop_sent: float | None = None
    session_id: str | None = None


class Sending(Record):
    """A finished, recorded run whose channel send is under way on the delivery thread."""

    run_id: str
    job: Job
    result: dict[str, Any]  # its entry in the summary, completed when the send is recorded
    future: Future[DeliveryResult]


def worker_command(ctx: ToolContext, run_id: str, claimant: str) -> list[str]:
    cmd = [sys.executable, "-m", "fermix_cli"]
    if ctx.paths.explicit_home:
        cmd += ["--home", str(ctx.paths.data_dir)]
    return [*cmd, "jobs", "worker", run_id, claimant, str(os.getpid())]


def child_env() -> dict[str, str]:
    """The environment of fermix's own child processes: this one, with this fermix importable."""
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.dirname(package_root)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    return env


def spawn_worker(ctx: ToolContext, run_id: str, claimant: str) -> subprocess.Popen[bytes]:
    workspace = ctx.paths.ensure_dir(ctx.paths.workspace)
    return subprocess.Popen(
        worker_command(ctx, run_id, claimant),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        cwd=workspace,
        env=child_env(),
        start_new_session=True,
    )


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _end_leftovers(a: Active) -> None:
    """SIGKILL what an ended worker may have left: its group, and a command job's command, which runs in
    a group of its own that a worker killed outright (SIGKILL, the OOM killer) never got to end."""
    _signal_group(a.proc, signal.SIGKILL)
    if a.job.kind != "command" or a.session_id is None:
        return
    from ..core.shell import marked_processes

    spawn_id = command_spawn_id(a.session_id)
    for _ in range(8):  # a child forked meanwhile is found on the next pass
        found = marked_processes(spawn_id)
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # the command's shell leads its group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


class Dispatcher:
    """Supervises the workers of this process's claimed runs, then records and delivers each one."""

    def __init__(
        self,
        ctx: ToolContext,
        runner: Runner,
        *,
        summary: Summary,
        scheduling: bool = False,
        lock: SchedulerLock | None = None,
    ) -> None:
        self.ctx = ctx
        self.runner = runner
        self.scheduling = scheduling  # claim more as slots free up (False: manual runs only)
        self.lock = lock
        self.summary = summary
        self.jobs_cfg = jobs_config(ctx)
        # Keyed by run id: a closed pipe's descriptor number can be reused by the next worker at once.
        self.active: dict[str, Active] = {}
        self.waiting: list[ClaimedRun] = []  # claimed by this process, not launched yet
        self.sending: list[Sending] = []  # recorded runs whose delivery is under way
        self.sender: ThreadPoolExecutor | None = None
        self.wake: tuple[int, int] | None = None  # the delivery thread's "a send ended" pipe
        self.selector = selectors.DefaultSelector()
        self.first_start: float | None = None
        self.last_end: float | None = None
        self.next_tick = next_minute(time.time())

    # ----- starting ----------------------------------------------------------------------------

    def start(self, claimed: list[ClaimedRun]) -> None:
        self.waiting += claimed  # claimed, not launched yet: a stop now records them too (`abort`)
        for run in claimed:
            self._launch(run)

    def _launch(self, run: ClaimedRun) -> None:
        # A stop that arrives meanwhile waits: a worker is never left spawned but not supervised.
        with _held_stop():
            self._launch_now(run)
            self.waiting.remove(run)

    def _launch_now(self, run: ClaimedRun) -> None:
        state = self.ctx.state
        job = fetch_job(state.conn, run.job_id)
        now = self.ctx.now()
        session = _patiently(
            f"job run {run.run_id}: marking it running",
            lambda: records.mark_running(state.write, run.run_id, self.runner.claimed_by, job, now),
        )
        if session is None:
            return
        mono = time.monotonic()
        self.first_start = self.first_start or mono
        try:
            proc = spawn_worker(self.ctx, run.run_id, self.runner.claimed_by)
        except OSError as e:
            self._record(
                run, job, RunOutcome.failure("spawn_failed", f"could not start the run's worker: {e}"), mono
            )
            return
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        wall = job.timeout_seconds + (COMMAND_TIMEOUT_SLACK if job.kind == "command" else 0.0)
        self.active[run.run_id] = Active(
            claimed=run,
            job=job,
            proc=proc,
            started_mono=mono,
            last_activity=mono,
            wall_deadline=mono + wall,
            inactivity=None if job.kind == "command" else float(job.inactivity_timeout_seconds),
            session_id=session,
        )
        self.selector.register(fd, selectors.EVENT_READ, run.run_id)

    # ----- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        """Supervise until no run (and no delivery) of this process is left."""
        while self.active or self.sending:
            self._step()
            if self.scheduling and time.time() >= self.next_tick:
                self.next_tick = next_minute(time.time())
                with _held_stop():  # a claim and its launch are not cut in two by a stop
                    self._refill_or_wait()

    def _next_wakeup(self, now: float) -> float:
        soonest = max(0.0, self.next_tick - time.time()) if self.scheduling else 1.0
        soonest = min(soonest, 1.0)
        for a in self.active.values():
            if a.eof_at is not None:
                soonest = min(soonest, 0.02)
                continue
            if a.stop_sent is not None:
                soonest = min(soonest, a.stop_sent + KILL_GRACE_SECONDS - now)
                continue
            soonest = min(soonest, a.wall_deadline - now)
            if a.inactivity is not None:
                soonest = min(soonest, a.last_activity + a.inactivity - now)
        return max(0.01, soonest)

    def _step(self) -> None:
        now = time.monotonic()
        for key, _ in self.selector.select(self._next_wakeup(now)):
            if key.data is None:
                _drain(int(key.fd))
            else:
                self._read(int(key.fd), self.active[key.data])
        now = time.monotonic()
        for run_id, a in list(self.active.items()):
            self._police(a, now)
            if a.eof_at is None:
                continue
            if a.proc.poll() is None:
                if now >= a.eof_at + KILL_GRACE_SECONDS:  # closed its output but lingers
                    _signal_group(a.proc, signal.SIGKILL)
                continue
            # A stop that arrives meanwhile waits: a finished run is recorded and delivered whole.
            with _held_stop():
                del self.active[run_id]
                _end_leftovers(a)
                self._finish(a)
        self._collect()

    def _read(self, fd: int, a: Active) -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            a.eof_at = time.monotonic()
            self.selector.unregister(fd)
            assert a.proc.stdout is not None
            a.proc.stdout.close()
            return
        a.buffer += chunk
        if len(a.buffer) > LINE_MAX:
            a.buffer = b""
            self._stop(a, "worker_failed", "the worker wrote an oversized protocol line")
            return
        *lines, a.buffer = a.buffer.split(b"\n")
        for line in lines:
            self._event(a, line)

    def _event(self, a: Active, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            log.warning("job run %s: unreadable worker line %r", a.claimed.run_id, line[:200])
            return
        a.last_activity = time.monotonic()
        kind = event.get("event")
        if kind == "started":
            try:
                _patiently(
                    f"job run {a.claimed.run_id}: recording its prompt",
                    partial(
                        records.record_prompt,
                        self.ctx.state.write,
                        a.claimed.run_id,
                        self.runner.claimed_by,
                        str(event.get("prompt", "")),
                        json.dumps(event.get("config", {}), sort_keys=True),
                    ),
                )
            except Exception as e:
                if not _lost_to_state(e):
                    raise
                log.error("job run %s: its prompt snapshot could not be recorded: %s", a.claimed.run_id, e)
        elif kind == "result":
            a.result = RunOutcome.from_dict(event.get("outcome", {}))

    def _police(self, a: Active, now: float) -> None:
        """Enforce the wall-clock and inactivity timeouts: SIGTERM the group, SIGKILL after a grace."""
        if a.eof_at is not None:
            return
        if a.result is not None:  # finished; only a worker that lingers past its deadline is killed
            if now >= a.wall_deadline:
                _signal_group(a.proc, signal.SIGKILL)
            return
        if a.stop_sent is not None:
            if now >= a.stop_sent + KILL_GRACE_SECONDS:
                _signal_group(a.proc, signal.SIGKILL)
            return
        if now >= a.wall_deadline:
            self._stop(
                a,
                "timeout",
                f"the run passed its timeout_seconds ({a.job.timeout_seconds} s) and was stopped",
            )
        elif a.inactivity is not None and now >= a.last_activity + a.inactivity:
            self._stop(
                a,
                "inactivity_timeout",
                f"the run made no progress for {a.job.inactivity_timeout_seconds} s "
                "(inactivity_timeout_seconds) and was stopped",
            )

    def _stop(self, a: Active, code: str, message: str) -> None:
        a.stop = (code, message)
        a.stop_sent = time.monotonic()
        _signal_group(a.proc, signal.SIGTERM)

    # ----- ending ------------------------------------------------------------------------------

    def _finish(self, a: Active) -> None:
        if a.stop is not None:  # the runner stopped it: that is the error, whatever the worker said after
            partial = a.result or RunOutcome("error")
            outcome = RunOutcome.failure(
                *a.stop,
                final_response=partial.final_response,
                usage=partial.usage,
                iterations=partial.iterations,
                tool_failures=partial.tool_failures,
            )
        elif a.result is not None:
            outcome = a.result
        else:
            outcome = RunOutcome.failure(
                "worker_failed",
                f"the run's worker exited with code {a.proc.returncode} without a result; see the fermix log",
            )
        try:
            self._record(a.claimed, a.job, outcome, a.started_mono)
        except Exception as e:
            if not _lost_to_state(e):
                raise
            # This run's row stays `running` under this runner's claim: once the runner has exited, the
            # next tick closes it (reconcile: with the result its worker kept, else interrupted). The
            # other runs go on.
            log.error(
                "job run %s: its outcome (%s) could not be recorded: %s", a.claimed.run_id, outcome.status, e
            )
            self.summary.runs.append(
                {
                    "run_id": a.claimed.run_id,
                    "job_id": a.job.id,
                    "trigger": a.claimed.trigger,
                    "status": outcome.status,
                    "error_code": outcome.error_code,
                    "note": f"its outcome could not be recorded ({getattr(e, 'code', 'state_unavailable')}); "
                    "a later tick closes it",
                }
            )
        self._refill_or_wait()

    def _refill_or_wait(self) -> None:
        """`refill`, unless state.db is busy: then the next minute's tick claims instead."""
        try:
            self.refill()
        except Exception as e:
            if not (is_busy(e) or getattr(e, "code", None) == "state_busy"):
                raise
            log.warning("jobs run: no new claims this minute, state.db is busy: %s", e)

    def _record(self, run: ClaimedRun, job: Job, outcome: RunOutcome, started_mono: float) -> None:
        ctx, state = self.ctx, self.ctx.state
        state.check_home()  # a vanished home: fail before output.md would recreate its directories
        self.last_end = time.monotonic()
        duration_ms = (self.last_end - started_mono) * 1000
        now = ctx.now()
        text = message_text(job, outcome)
        output = None
        if not outcome.silent and text.strip():
            try:
                output = write_output(ctx.paths, job, run.run_id, text)
            except OSError as e:
                log.warning("job run %s: output.md not written: %s", run.run_id, e)
        done = settled(job, outcome)
        mine = _patiently(
            f"job run {run.run_id}: recording its outcome",
            lambda: records.finish_run(
                state.write,
                run.run_id,
                self.runner.claimed_by,
                job.id,
                outcome,
                now,
                duration_ms,
                output,
                delivery=(records.PENDING, None) if done is None else (done.status, done.detail),
            ),
        )
        result: dict[str, Any] = {
            "run_id": run.run_id,
            "job_id": job.id,
            "trigger": run.trigger,
            "status": outcome.status,
            "error_code": outcome.error_code,
            "duration_ms": round(duration_ms, 1),
        }
        if mine:
            discard_result(ctx.paths, job.id, run.run_id)
            if done is None:
                result["delivery_status"] = records.PENDING
                self._send(run.run_id, job, outcome, result)
            else:
                result["delivery_status"] = done.status
                self._prune(job.id)
        else:
            result["note"] = "another process already closed this run; its outcome was not recorded"
        self.summary.runs.append(result)

    # ----- delivery ----------------------------------------------------------------------------

    def _send(self, run_id: str, job: Job, outcome: RunOutcome, result: dict[str, Any]) -> None:
        """Hand a recorded run's channel send to the delivery thread (one send at a time, in order)."""
        ctx = self.ctx
        if self.sender is None or self.wake is None:
            self.sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fermix-job-delivery")
            self.wake = os.pipe()
            os.set_blocking(self.wake[0], False)
            self.selector.register(self.wake[0], selectors.EVENT_READ, None)
        row = ctx.state.conn.execute("SELECT * FROM job_runs WHERE id = ?", (run_id,)).fetchone()
        try:
            config = ctx.config
        except ToolError:  # broken elsewhere: the inbox needs none, other channels report it
            config = None
        args = (ctx.paths, job, run_summary(row), outcome, ctx.now(), config)
        wake = self.wake[1]

        def send() -> DeliveryResult:
            try:
                return deliver(*args)
            finally:
                with contextlib.suppress(OSError):
                    os.write(wake, b".")

        self.sending.append(Sending(run_id, job, result, self.sender.submit(send)))

    def _collect(self, *, wait: bool = False) -> None:
        """Record the deliveries that ended (with `wait`, all of them, waiting for each)."""
        for s in list(self.sending):
            if not wait and not s.future.done():
                continue
            try:
                delivery = s.future.result()
            except Exception as e:  # deliver never raises; a bug must not leave the run pending here
                log.exception("job run %s: delivery crashed", s.run_id)
                delivery = DeliveryResult(
                    "failed",
                    {"error": f"delivery failed unexpectedly ({type(e).__name__})", "code": "internal_error"},
                )
            with _held_stop():  # the send's record and the summary are not cut in two by a stop
                self.sending.remove(s)
                try:
                    _patiently(
                        f"job run {s.run_id}: recording its delivery",
                        partial(
                            records.record_delivery,
                            self.ctx.state.write,
                            s.run_id,
                            delivery.status,
                            delivery.detail,
                        ),
                    )
                except Exception as e:
                    if not _lost_to_state(e):
                        raise
                    log.error(
                        "job run %s: its delivery (%s) could not be recorded: %s",
                        s.run_id,
                        delivery.status,
                        e,
                    )
                    s.result["note"] = "its delivery could not be recorded"
                s.result["delivery_status"] = delivery.status
                self._prune(s.job.id)

    def _prune(self, job_id: str) -> None:
        """Drop a job's oldest runs; a busy state.db only delays it to the job's next run."""
        try:
            records.prune(
                self.ctx.state.write, self.ctx.paths.data_dir, job_id, self.jobs_cfg.max_runs_per_job
            )
        except Exception as e:
            if not _lost_to_state(e):
                raise
            log.warning("job %s: old runs not pruned this time: %s", job_id, e)

    def close(self) -> None:
        """Wait for the deliveries under way and record them, then stop the delivery thread."""
        self._collect(wait=True)
        if self.sender is not None:
            self.sender.shutdown(wait=True)
            self.sender = None
        if self.wake is not None:
            self.selector.unregister(self.wake[0])
            for fd in self.wake:
                os.close(fd)
            self.wake = None

    def refill(self) -> None:
        """A slot came free: claim again, if the scheduler lock is free right now (and no stop is waiting)."""
        if _STOP["pending"] is not None:
            return
        if not self.scheduling or (self.lock is not None and not self.lock.try_acquire()):
            return
        try:
            report = scheduler_tick(self.ctx, self.runner)
        finally:
            if self.lock is not None:
                self.lock.release()
        self.summary.merge(report)
        self.start(report.claimed)

    def abort(self, reason: str) -> None:
        """Stop every worker and record its run as interrupted (the runner itself is being stopped),
        and the runs claimed but not launched yet. A worker gets SIGTERM first, so it stops what it
        runs (a command's or a shell tool's own process group), then SIGKILL after a grace."""
        actives = list(self.active.items())
        for _, a in actives:
            _signal_group(a.proc, signal.SIGTERM)
        grace_ends = time.monotonic() + KILL_GRACE_SECONDS
        for run_id, a in actives:
            with contextlib.suppress(Exception):
                a.proc.wait(timeout=max(0.0, grace_ends - time.monotonic()))
            _signal_group(a.proc, signal.SIGKILL)
            with contextlib.suppress(Exception):
                a.proc.wait(timeout=5)
            _end_leftovers(a)
            if a.eof_at is None:
                assert a.proc.stdout is not None
                self.selector.unregister(a.proc.stdout.fileno())
            del self.active[run_id]
            self._record(a.claimed, a.job, RunOutcome.failure("interrupted", reason), a.started_mono)
        waiting, self.waiting = self.waiting, []
        for run in waiting:
            with contextlib.suppress(ToolError):  # a job deleted meanwhile: the next tick closes its run
                job = fetch_job(self.ctx.state.conn, run.job_id)
                self._record(run, job, RunOutcome.failure("interrupted", reason), time.monotonic())
        self._collect(wait=True)  # a stop waits for the sends under way: none is left pending


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 4096):
            pass


def next_minute(wall: float) -> float:
    """The wall-clock time of the next tick: just after the next minute boundary."""
    return (wall // TICK_SECONDS + 1) * TICK_SECONDS + TICK_OFFSET_SECONDS


def scheduler_tick(ctx: ToolContext, runner: Runner) -> TickReport:
    cfg = jobs_config(ctx)
    return tick(
        ctx.state.write,
        ctx.now(),
        ctx.paths,
        runner,
        max_concurrent=cfg.max_concurrent_runs,
        window_seconds=cfg.run_freshness_window_seconds,
    )


# SIGTERM/SIGINT/SIGHUP handling of this process's dispatcher (main thread only): `held` counts the open
# `_held_stop` blocks, `pending` names a signal that arrived inside one.
_STOP: dict[str, Any] = {"held": 0, "pending": None}


@contextlib.contextmanager
def _stoppable() -> Any:
    """SIGTERM, SIGINT and SIGHUP (the terminal closed; unless ignored) become `Stopped` while the block
    runs (main thread only), except inside a `_held_stop` block, at whose end it is raised instead."""

    def handler(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if _STOP["held"]:
            _STOP["pending"] = _STOP["pending"] or name
            return
        raise Stopped(name)

    _STOP["pending"] = None
    previous = {s: signal.signal(s, handler) for s in stop_signals(signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _STOP["pending"] = None


@contextlib.contextmanager
def _held_stop() -> Iterator[None]:
    """A step that must not be cut in two (spawn a worker and supervise it; record and deliver a run):
    a stop signal that arrives meanwhile is raised as `Stopped` once the step is done."""
    _STOP["held"] += 1
    try:
        yield
    finally:
        _STOP["held"] -= 1
    if not _STOP["held"] and _STOP["pending"] is not None:
        name, _STOP["pending"] = _STOP["pending"], None
        raise Stopped(name)


def _supervise(dispatcher: Dispatcher, claimed: list[ClaimedRun]) -> int:
    try:
        dispatcher.start(claimed)
        dispatcher.run()
    except Stopped as e:
        with _held_stop():
            dispatcher.abort(f"fermix jobs run was stopped ({e}) during the run; it is not re-run")
            _STOP["pending"] = None  # a second signal while stopping changes nothing
        return 128 + signal.Signals[str(e)].value  # 143 SIGTERM, 130 SIGINT, 129 SIGHUP
    finally:
        dispatcher.close()  # run() and abort() leave no delivery under way: this only ends the thread
    return 0


def run_scheduler(ctx: ToolContext, lock: SchedulerLock | None, t0: float) -> tuple[int, Summary]:
    """Claim and run what is due; `lock` is the held scheduler lock (None: claims alone, for tests)."""
    from ..core.logs import setup_logging

    setup_logging(ctx.paths.log_file)  # only now: an idle tick never imports logging's file handler
    summary = Summary()
    runner: Runner | None = None
    try:
        sweep_dead(ctx.paths)
        runner = Runner.start(ctx.paths)
        report = scheduler_tick(ctx, runner)
    except BaseException:
        if runner is not None:
            runner.release()
        raise
    finally:
        if lock is not None:
            lock.release()
    summary.merge(report)
    summary.timings_ms["claim"] = round((time.monotonic() - t0) * 1000, 2)
    try:
        with _stoppable():
            dispatcher = Dispatcher(ctx, runner, summary=summary, scheduling=True, lock=lock)
            code = _supervise(dispatcher, report.claimed)
    finally:
        runner.release()
    end = time.monotonic()
    if dispatcher.first_start is not None and dispatcher.last_end is not None:
        summary.timings_ms["runs"] = round((dispatcher.last_end - dispatcher.first_start) * 1000, 2)
        summary.timings_ms["to_first_run"] = round((dispatcher.first_start - t0) * 1000, 2)
        summary.timings_ms["after_runs"] = round((end - dispatcher.last_end) * 1000, 2)
    summary.timings_ms["total"] = round((end - t0) * 1000, 2)
    return code, summary


# ----- manual runs -------------------------------------------------------------------------------


def enqueue_manual(ctx: ToolContext, job_id: str, runner: Runner) -> ClaimedRun:
    """Claim a manual run of a job; refused for paused, disabled, expired, completed or busy jobs.

    A job past its `expires_at` that no tick has marked yet is expired here, committed before the refusal.
    """
    now = ctx.now()
    with ctx.state.write(durable=True) as db:
        expired = expire(db, now, job_id)
    if expired:
        job = fetch_job(ctx.state.conn, job_id)
        raise ToolError(
            "job_state",
            f"job {job.id} expired at {job.expires_at}; run_job_now refuses expired jobs. "
            "Create a new job with schedule_job.",
            {"job_id": job.id, "state": "expired"},
        )
    with ctx.state.write(durable=True) as db:
        job = fetch_job(db, job_id)
        if job.state in ("paused", "disabled", "expired", "completed"):
            raise job_state_error(job, "run_job_now")
        active = active_run(db, job.id)
        if job.state == "running" or active is not None:
            raise ToolError(
                "job_busy",
                f"job {job.id} already has a run in flight{' (' + active['id'] + ')' if active else ''}; "
                "run_job_now waits for it to end. Check it with list_job_runs.",
                {"job_id": job.id, "run_id": active["id"] if active else None},
            )
        return claim_manual(db, job, now, runner.claimed_by)


def run_claimed_now(ctx: ToolContext, runner: Runner, claimed: ClaimedRun) -> tuple[int, Summary]:
    """Run one already-claimed run in this process (`fermix jobs run-now`, or a detached manual run)."""
    summary = Summary()
    try:
        with _stoppable():
            dispatcher = Dispatcher(ctx, runner, summary=summary)
            code = _supervise(dispatcher, [claimed])
    finally:
        runner.release()
    return code, summary


def run_now_detached(ctx: ToolContext, job_id: str) -> ClaimedRun:
    """run_job_now: claim, then hand the claim (and the lock proving it lives) to a background runner."""
    runner = Runner.start(ctx.paths)
    try:
        claimed = enqueue_manual(ctx, job_id, runner)
    except BaseException:
        runner.release()
        raise
    assert runner.fd is not None
    cmd = [sys.executable, "-m", "fermix_cli"]
    if ctx.paths.explicit_home:
        cmd += ["--home", str(ctx.paths.data_dir)]
    cmd += [
        "jobs",
        "run",
        "--run",
        claimed.run_id,
        "--claimant",
        runner.claimed_by,
        "--lock-fd",
        str(runner.fd),
    ]
    try:
        subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ctx.paths.ensure_dir(ctx.paths.workspace),
            env=child_env(),
            start_new_session=True,
            pass_fds=(runner.fd,),
        )
    except OSError as e:
        job = fetch_job(ctx.state.conn, job_id)
        outcome = RunOutcome.failure("spawn_failed", f"could not start the background runner: {e}")
        records.finish_run(
            ctx.state.write, claimed.run_id, runner.claimed_by, job.id, outcome, ctx.now(), 0.0, None
        )
        runner.release()
        raise ToolError(
            "spawn_failed", f"run_job_now could not start a runner: {e}", {"run_id": claimed.run_id}
        ) from None
    runner.detach()
    return claimed


def adopt_and_run(ctx: ToolContext, run_id: str, claimant: str, lock_fd: int) -> tuple[int, Summary]:
    """The background half of run_job_now: take over the handed-down claim and run it."""
    from ..core.logs import setup_logging

    setup_logging(ctx.paths.log_file)
    runner = Runner.adopt(ctx.paths, claimant, lock_fd)
    row = ctx.state.conn.execute(
        "SELECT id, job_id, trigger, scheduled_for, status, claimed_by FROM job_runs WHERE id = ?", (run_id,)
    ).fetchone()
    if row is None or row["claimed_by"] != claimant or row["status"] != "queued":
        runner.release()
        summary = Summary(status="gone")
        return 0, summary
    return run_claimed_now(
        ctx, runner, ClaimedRun(row["id"], row["job_id"], row["trigger"], row["scheduled_for"])
    )
