"""`fermix jobs run` while another process holds state.db's write lock longer than the busy timeout:
the runner waits for it (within its patience), and a record it cannot write costs that run alone."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import hold_write_lock
from tests.jobs.jobs_world import NOW, Jobs, later, wait_for

DUE = later(NOW, minutes=1, seconds=10)


def _runner(jobs: Jobs, patience: float) -> subprocess.Popen[str]:
    """`fermix jobs run --json` with SQLite's busy timeout cut to 0.3 s (10 s in fermix), so a lock
    held for 2.5 s outlasts it, as 14 s outlast the real one."""
    script = (
        "import sys\n"
        "import fermix_cli.core.state as state\n"
        "import fermix_cli.jobs.runner as runner\n"
        "state.BUSY_TIMEOUT_MS = 300\n"
        f"runner.RECORD_PATIENCE_SECONDS = {patience}\n"
        "from fermix_cli.__main__ import main\n"
        "sys.exit(main(['jobs', 'run', '--json']))\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script], env=jobs.env(at=DUE), cwd=jobs.world.project,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _add_quick_and_long(jobs: Jobs, tmp: Path) -> None:
    for name, command in (
        ("Quick", "sleep 1; echo quick done"),
        ("Long", f"sleep 4; echo long finished > {tmp / 'long.txt'}; echo long done"),
    ):
        r = jobs.cli("jobs", "add", name, "-s", "every 1 minutes", "--command", command, "--json")
        assert r.code == 0, r.stderr


def _both_running(jobs: Jobs) -> bool:
    return all(r["status"] == "running" for name in ("quick", "long") for r in jobs.runs(name)) and all(
        jobs.runs(name) for name in ("quick", "long")
    )


def _tick_while_the_quick_run_ends_locked(
    jobs: Jobs, tmp_path: Path, patience: float
) -> tuple[int, str, str]:
    """Quick (1 s) and Long (4 s) run under one `jobs run`; another process holds the write lock for
    2.5 s from when both run, so recording Quick's end waits past the busy timeout. (code, out, err)."""
    _add_quick_and_long(jobs, tmp_path)
    runner = _runner(jobs, patience=patience)
    try:
        wait_for(lambda: _both_running(jobs), timeout=60)
        hold_write_lock(jobs.world.fermix_home / "state.db", 2.5).join()
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    return runner.returncode, out, err


def test_a_busy_state_db_makes_the_runner_wait_not_die(jobs: Jobs, tmp_path: Path) -> None:
    code, out, err = _tick_while_the_quick_run_ends_locked(jobs, tmp_path, patience=60)
    assert code == 0, err
    assert "state_" not in err and "Traceback" not in err
    summary = json.loads(out)
    assert sorted((r["job_id"], r["status"]) for r in summary["runs"]) == [("long", "ok"), ("quick", "ok")]
    [quick], [long] = jobs.runs("quick"), jobs.runs("long")
    assert (quick["status"], quick["error_code"]) == ("ok", None)
    assert (long["status"], long["error_code"]) == ("ok", None)
    assert (tmp_path / "long.txt").read_text() == "long finished\n"  # not killed with a dying runner


def test_a_record_that_cannot_wait_longer_costs_only_its_own_run(jobs: Jobs, tmp_path: Path) -> None:
    """Patience runs out for the quick run's record: that run alone waits (a later tick closes it
    closed); the long run in flight goes on and is recorded."""
    code, out, err = _tick_while_the_quick_run_ends_locked(jobs, tmp_path, patience=0.5)
    assert code == 0, err
    runs = {r["job_id"]: r for r in json.loads(out)["runs"]}
    assert runs["long"]["status"] == "ok"
    assert runs["quick"]["note"] == "its outcome could not be recorded (state_busy); a later tick closes it"
    assert "error" not in runs["quick"].get("status", "")
    assert (tmp_path / "long.txt").read_text() == "long finished\n"
    assert jobs.runs("long")[0]["status"] == "ok"
    assert jobs.runs("quick")[0]["status"] == "running"
    later_tick = jobs.tick(DUE)
    assert [r["job_id"] for r in later_tick["reconciled"]] == ["quick"]
    # The worker had kept its result on disk: the later tick records the run's real outcome.
    assert [(r["status"], r["error_code"]) for r in jobs.runs("quick")] == [("ok", None)]
    logged = (jobs.world.fermix_home / "logs" / "fermix.log").read_text()
    assert f"job run {runs['quick']['run_id']}: its outcome (ok) could not be recorded" in logged


def test_state_busy_says_it_is_contention_not_a_broken_file(jobs: Jobs) -> None:
    jobs.add("Digest")
    script = (
        "import sys\n"
        "import fermix_cli.core.state as state\n"
        "state.BUSY_TIMEOUT_MS = 200\n"
        "from fermix_cli.__main__ import main\n"
        "sys.exit(main(['tool', 'memory_store', '--key', 'a', '--value', 'b', '--category', 'preference']))\n"
    )
    release = threading.Event()
    holder = hold_write_lock(jobs.world.fermix_home / "state.db", 60.0, release)  # until the call ends
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], env=jobs.env(), cwd=jobs.world.project,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        release.set()
        holder.join()
    assert done.returncode == 1, done.stderr
    err = json.loads(done.stdout or done.stderr)["error"]
    assert err["code"] == "state_busy"
    assert "write lock for more than 0.2 s" in err["message"] and "fuser" in err["message"]
    assert "fermix doctor" not in err["message"]
