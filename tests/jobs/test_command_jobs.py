"""Command jobs (`fermix jobs add --command`): a shell command through the exec engine, no model needed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jobs.jobs_world import Jobs, iso, pid_alive, utc, wait_for
from tests.jobs.test_runner import DUE, _release_together, _worker_pids

INBOX = ["--inbox", "owner"]


def add_command(jobs: Jobs, name: str, command: str, *extra: str, schedule: str = "every 1 minutes") -> dict:
    r = jobs.cli("jobs", "add", name, "-s", schedule, "--command", command, "--json", *extra)
    assert r.code == 0, r.stderr
    return json.loads(r.stdout)["job"]


def test_a_caller_without_exec_cannot_rewrite_a_command_jobs_command(jobs: Jobs, tmp_path: Path) -> None:
    add_command(jobs, "Backup", "echo backup")
    pwned = tmp_path / "pwned"
    narrow = {"policy_ceiling": frozenset({"read_only", "read_write"}), "origin": "interactive"}
    err = jobs.error("update_job", {"job_id": "backup", "task": f"id > {pwned}"}, **narrow)
    assert err.code == "policy_denied" and "exec" in err.message
    assert err.details["missing_classes"] == ["exec", "external_api", "gui_control", "network"]
    jobs.tick(at=utc("2026-03-02T08:01:00Z"))
    assert not pwned.exists() and jobs.job("backup")["task"] == "echo backup"


def test_a_command_job_runs_in_the_workspace_and_delivers_its_output(jobs: Jobs) -> None:
    add_command(jobs, "Where", "pwd; echo done", *INBOX)
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["delivery_status"]) == ("ok", "delivered")
    workspace = (jobs.world.fermix_home / "workspace").resolve()
    assert jobs.inbox()[0]["text"] == f"{workspace}\ndone\n"
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert detail["prompt_snapshot"].endswith("--- task ---\npwd; echo done")
    assert detail["config_snapshot"]["kind"] == "command"
    assert Path(detail["output_path"]).read_text() == f"{workspace}\ndone\n"


def test_no_model_is_needed(jobs: Jobs) -> None:
    add_command(jobs, "Plain", "echo plain")
    assert jobs.tick(DUE)["runs"][0]["status"] == "ok"


def test_a_failing_command_is_an_error_and_its_output_is_delivered(jobs: Jobs) -> None:
    add_command(jobs, "Fail", "echo partial; exit 3", *INBOX)
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["error_code"]) == ("error", "exit_nonzero")
    text = jobs.inbox()[0]["text"]
    assert text.startswith("fermix job Fail (fail) failed: exit_nonzero: Command failed (exit code 3)")
    assert text.rstrip().endswith("partial")


def test_the_hardline_blocks_a_dangerous_command_before_it_runs(jobs: Jobs, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    add_command(jobs, "Danger", f"touch {victim}/ran; rm -rf /")
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["error_code"]) == ("error", "sandbox_hardline")
    assert not (victim / "ran").exists()


def test_the_environment_is_replaced(jobs: Jobs) -> None:
    add_command(jobs, "Env", 'echo "[$SECRET_TOKEN]"', "--delivery", "local")
    run = jobs.cli("jobs", "run", "--json", at=DUE, SECRET_TOKEN="hunter2")
    summary = json.loads(run.stdout)
    detail = jobs.call("get_job_run", {"run_id": summary["runs"][0]["run_id"]})["run"]
    assert detail["final_response"] == "[]\n"


def test_empty_output_delivers_nothing(jobs: Jobs) -> None:
    add_command(jobs, "Quiet", "true", *INBOX)
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["delivery_status"]) == ("ok", "silent")
    assert jobs.inbox() == []


def test_silent_marker_works_for_commands_too(jobs: Jobs) -> None:
    add_command(jobs, "Marker", "echo '[SILENT]'", *INBOX)
    assert jobs.tick(DUE)["runs"][0]["delivery_status"] == "silent"


def test_a_command_past_its_timeout_is_killed_with_its_group(jobs: Jobs, tmp_path: Path) -> None:
    marker = tmp_path / "late.txt"
    add_command(jobs, "Slow", f"sleep 30; echo late > {marker}", "--timeout", "2")
    t0 = time.monotonic()
    run = jobs.tick(DUE)["runs"][0]
    assert time.monotonic() - t0 < 25
    assert (run["status"], run["error_code"]) == ("error", "timeout")
    time.sleep(0.5)
    assert not marker.exists()


def test_sigkill_of_the_runner_stops_the_command_too(jobs: Jobs, tmp_path: Path) -> None:
    log = tmp_path / "steps.txt"
    shell_pid = tmp_path / "sh.pid"
    add_command(jobs, "Victim", f"echo $$ > {shell_pid}; echo start >> {log}; sleep 30; echo end >> {log}")
    runner = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env={**jobs.env(), "FERMIX_NOW": iso(DUE)},
        cwd=jobs.world.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: log.exists() and log.read_text() == "start\n", timeout=60)
        [run] = jobs.runs("victim")
        workers = _worker_pids(run["id"])
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.communicate()
    wait_for(lambda: not any(pid_alive(p) for p in workers), timeout=30)
    wait_for(lambda: not pid_alive(int(shell_pid.read_text())), timeout=30)
    summary = jobs.tick(DUE)
    assert summary["reconciled"][0]["error_code"] == "interrupted"
    time.sleep(1)
    assert log.read_text() == "start\n"  # the command died with its worker: no "end", and no second start


def test_a_sigkilled_worker_does_not_leave_its_command_running(jobs: Jobs, tmp_path: Path) -> None:
    """The OOM killer takes the worker: the command, in a group of its own, is ended with the run."""
    log = tmp_path / "steps.txt"
    shell_pid = tmp_path / "sh.pid"
    add_command(jobs, "Victim", f"echo $$ > {shell_pid}; echo start >> {log}; sleep 30; echo end >> {log}")
    runner = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env={**jobs.env(), "FERMIX_NOW": iso(DUE)},
        cwd=jobs.world.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: log.exists() and log.read_text() == "start\n", timeout=60)
        [run] = jobs.runs("victim")
        [worker] = _worker_pids(run["id"])
        os.kill(worker, signal.SIGKILL)
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 0, err
    assert json.loads(out)["runs"][0]["error_code"] == "worker_failed"
    assert not pid_alive(int(shell_pid.read_text()))  # ended before the run was recorded closed
    time.sleep(1)
    assert log.read_text() == "start\n"


def test_a_guest_stamped_job_cannot_run_a_command(jobs: Jobs) -> None:
    add_command(jobs, "Stamped", "echo hi")
    with jobs.db() as c:
        c.execute("UPDATE scheduled_jobs SET created_by_trust = 'guest', policy_ceiling = '[\"read_only\"]'")
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["error_code"]) == ("error", "policy_denied")


def test_jobs_run_now_runs_a_command_in_the_foreground(jobs: Jobs) -> None:
    add_command(jobs, "Now", "echo right now", schedule="0 3 * * *")
    r = jobs.cli("jobs", "run-now", "now")
    assert r.code == 0, r.stderr
    assert r.stdout.rstrip().endswith("right now")
    assert jobs.job("now")["next_run_at"] == "2026-03-03T03:00:00.000000Z"  # cadence unchanged


@pytest.mark.slow
def test_two_then_five_overlapping_runners_append_once_per_slot(jobs: Jobs, tmp_path: Path) -> None:
    """The side effect is a line appended by the command itself: every slot must add exactly one."""
    counter = tmp_path / "count.txt"
    for i in range(5):
        add_command(jobs, f"c{i}", f"echo c{i} >> {counter}")
    add_command(jobs, "once", f"echo once >> {counter}", schedule="2026-03-02T08:00:00Z")
    for n, at, slots in ((2, utc("2026-03-02T08:00:40Z"), 1), (5, utc("2026-03-02T08:01:40Z"), 2)):
        results = _release_together(jobs, n, iso(at))
        assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
        lines = counter.read_text().splitlines()
        assert sorted(lines) == sorted([f"c{i}" for i in range(5)] * slots + ["once"])


def test_a_command_that_finished_before_its_runner_was_killed_is_recorded_ok(
    jobs: Jobs, tmp_path: Path
) -> None:
    """The runner dies after the command finished but before it recorded the run: the next tick
    records the worker's saved result (`ok`, with its output), never `interrupted`, never a re-run."""
    started, go, log = tmp_path / "started", tmp_path / "go", tmp_path / "steps.txt"
    add_command(
        jobs,
        "Finisher",
        f"echo start >> {log}; touch {started}; while [ ! -e {go} ]; do sleep 0.05; done; echo finished",
    )
    runner = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env={**jobs.env(), "FERMIX_NOW": iso(DUE)},
        cwd=jobs.world.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(started.exists, timeout=60)
        [run] = jobs.runs("finisher")
        result = jobs.world.fermix_home / "jobs" / "finisher" / run["id"] / "result.json"
        runner.send_signal(signal.SIGSTOP)  # the runner cannot record anything from here on
        go.touch()
        wait_for(result.exists, timeout=60)  # the worker saved the command's result
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.communicate()
    assert jobs.runs("finisher")[0]["status"] == "running"
    summary = jobs.tick(DUE)
    assert summary["reconciled"] == [
        {"run_id": run["id"], "job_id": "finisher", "status": "ok", "error_code": None, "recovered": True}
    ]
    [after] = jobs.runs("finisher")
    assert (after["status"], after["error_code"]) == ("ok", None)
    assert "finished" in after["final_response"]
    assert jobs.job("finisher")["last_status"] == "ok"
    assert jobs.tick(DUE)["status"] == "idle"
    assert log.read_text() == "start\n"  # run once, never again


def test_a_home_deleted_during_a_tick_fails_it_instead_of_reporting_the_run(
    jobs: Jobs, tmp_path: Path
) -> None:
    started, go = tmp_path / "started", tmp_path / "go"
    add_command(jobs, "Orphan", f"touch {started}; while [ ! -e {go} ]; do sleep 0.05; done; echo finished")
    runner = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env={**jobs.env(), "FERMIX_NOW": iso(DUE)},
        cwd=jobs.world.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(started.exists, timeout=60)
        shutil.rmtree(jobs.world.fermix_home)
        go.touch()
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 1, (out, err)
    assert '"status":"ok"' not in out
    assert json.loads(err)["error"]["code"] == "home_vanished"
    # No state or run output recreated in the deleted home's place (a log line may be).
    assert not (jobs.world.fermix_home / "state.db").exists()
    assert not (jobs.world.fermix_home / "jobs").exists()
