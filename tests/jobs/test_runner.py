"""`fermix jobs run` as cron calls it: real processes, the mock and echo providers, FERMIX_NOW as the clock."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import processes_with
from tests.jobs.jobs_world import NOW, Jobs, iso, later, pid_alive, utc, wait_for

DUE = later(NOW, minutes=1, seconds=10)  # a job added at NOW with `every 1 minutes` is due at NOW + 60 s
INBOX = {"platform": "inbox", "recipient": "owner"}


def _worker_pids(run_id: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if b"worker" in cmd and run_id.encode() in cmd:
            pids.append(int(entry))
    return pids


# ----- ticks with nothing to do, and the scheduler lock ---------------------------------------------


def test_an_idle_tick_says_nothing_and_exits_0(jobs: Jobs) -> None:
    r = jobs.cli("jobs", "run")
    assert (r.code, r.stdout, r.stderr) == (0, "", "")
    summary = jobs.tick()
    assert summary["status"] == "idle" and summary["runs"] == []
    jobs.add("Digest", "every 1 minutes")
    assert jobs.tick()["status"] == "idle"  # not due yet


def test_a_held_scheduler_lock_makes_a_tick_exit_0_at_once(jobs: Jobs) -> None:
    jobs.add("Digest", "every 1 minutes", provider="echo", model="echo")
    lock_path = jobs.world.fermix_home / "run" / "scheduler.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        t0 = time.monotonic()
        assert jobs.tick(DUE)["status"] == "busy"
        assert time.monotonic() - t0 < 10
        assert jobs.runs("digest") == []
    finally:
        os.close(fd)
    assert jobs.tick(DUE)["runs"][0]["status"] == "ok"


def test_the_fast_path_imports_neither_typer_nor_rich(jobs: Jobs) -> None:
    r, loaded = jobs.world.imports_of(
        ["jobs", "run", "--json"], ["typer", "rich", "click", "httpx"], env=jobs.env()
    )
    assert r.code == 0, r.stderr
    assert loaded == []


def test_jobs_run_usage(jobs: Jobs) -> None:
    r = jobs.cli("jobs", "run", "--help")
    assert r.code == 0 and r.stdout.startswith("Usage: fermix jobs run")
    r = jobs.cli("jobs", "run", "--bogus")
    assert r.code == 2 and json.loads(r.stderr)["error"]["code"] == "usage"


# ----- a model run, end to end ------------------------------------------------------------------


def test_a_model_run_is_isolated_recorded_and_delivered(jobs: Jobs) -> None:
    script = jobs.mock_script(
        [
            {
                "tool_calls": [
                    {
                        "name": "memory_store",
                        "arguments": {"key": "seen", "value": "job memory", "category": "context"},
                    }
                ]
            },
            {"tool_calls": [{"name": "file_read", "arguments": {"path": "missing.txt"}}]},
            {"text": "Report: all quiet.", "usage": {"input_tokens": 11, "output_tokens": 4}},
        ]
    )
    jobs.add("Night watch", "0 9 * * *", task="Check the house.", timezone="Europe/Berlin",
             provider="mock", model=script, delivery_target=INBOX)  # fmt: skip
    at = utc("2026-03-02T08:00:05Z")  # 09:00 in Berlin
    summary = jobs.tick(at)
    assert [r["status"] for r in summary["runs"]] == ["ok"]
    run = jobs.call("get_job_run", {"run_id": summary["runs"][0]["run_id"]})["run"]
    assert run["trigger"] == "schedule" and run["scheduled_for"] == "2026-03-02T08:00:00.000000Z"
    assert run["final_response"] == "Report: all quiet."
    assert run["iterations"] == 3
    assert run["usage"]["provider"] == "mock" and run["usage"]["output_tokens"] >= 4
    assert run["session_id"].startswith("cron_night-watch_20260302T080005000000Z_")
    assert [f["tool"] for f in run["tool_failures"]] == ["file_read"]
    assert run["tool_failures"][0]["code"] == "not_found"
    assert run["task_prompt"] == "Check the house."
    prompt = run["prompt_snapshot"]
    assert "Current date and time: Monday 2026-03-02 09:00 Europe/Berlin (2026-03-02T08:00:05Z)" in prompt
    assert "answer exactly [SILENT]" in prompt and prompt.endswith("--- task ---\nCheck the house.")
    config = run["config_snapshot"]
    assert config["trust"] == "operator" and config["delivery"]["mode"] == "channel"
    assert Path(run["output_path"]).read_text() == "Report: all quiet.\n"
    assert run["delivery"]["status"] == "delivered"
    [message] = jobs.inbox()
    assert (
        message["text"] == "Report: all quiet."
        and message["run_id"] == run["run_id"]
        and message["job_id"] == "night-watch"
    )
    # The run's memory lives in the job's scope, and its tool calls are recorded as scheduled.
    mem = jobs.sql("SELECT scope_type, scope_id, created_origin FROM memories WHERE key = 'seen'")
    assert [tuple(m) for m in mem] == [("job", "night-watch", "scheduled")]
    calls = jobs.sql(
        "SELECT tool, origin, ok FROM tool_calls WHERE session_id = ? ORDER BY started_at",
        (run["session_id"],),
    )
    assert [tuple(c) for c in calls] == [("memory_store", "scheduled", 1), ("file_read", "scheduled", 0)]
    job = jobs.job("night-watch")
    assert (job["state"], job["last_status"], job["run_count"]) == ("scheduled", "ok", 1)
    assert job["next_run_at"] == "2026-03-03T08:00:00.000000Z"


def test_a_run_sees_only_its_allowed_tools_and_no_history(jobs: Jobs) -> None:
    jobs.add("Probe", "every 1 minutes", task="what do you see", provider="echo", model="echo",
             allowed_tools=["memory_recall", "list_jobs"])  # fmt: skip
    first = jobs.tick(DUE)["runs"][0]
    seen = json.loads(jobs.call("get_job_run", {"run_id": first["run_id"]})["run"]["final_response"])
    assert seen["tools"] == ["list_jobs", "memory_recall"]
    assert seen["prompt"] == "what do you see" and seen["previous_messages"] == 0
    assert "You are fermix, running a scheduled job" in seen["system"]
    second = jobs.tick(later(DUE, minutes=1))["runs"][0]
    again = json.loads(jobs.call("get_job_run", {"run_id": second["run_id"]})["run"]["final_response"])
    assert again["previous_messages"] == 0  # a fresh, isolated loop every run


def test_the_stamped_trust_and_allowlist_hold_at_run_time(jobs: Jobs) -> None:
    task = json.dumps(
        {
            "tool_calls": [
                {"name": "memory_store", "arguments": {"key": "k", "value": "v", "category": "context"}}
            ]
        }
    )
    jobs.add(
        "Narrow", "every 1 minutes", task=task, provider="echo", model="echo", allowed_tools=["memory_recall"]
    )
    run = jobs.tick(DUE)["runs"][0]
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert detail["status"] == "ok"  # the loop finished; the tool was refused
    assert [f["tool"] for f in detail["tool_failures"]] == ["memory_store"]
    assert jobs.sql("SELECT count(*) FROM memories")[0][0] == 0


def test_a_bound_skill_adds_its_instructions_and_narrows_tools(jobs: Jobs) -> None:
    skill = jobs.world.fermix_home / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        '---\nname: tidy\ndescription: d\nallowed_tools: ["memory_recall"]\n---\nKeep it tidy.\n'
    )
    jobs.add("Tidy", "every 1 minutes", task="go", provider="echo", model="echo", skill_name="tidy")
    run = jobs.tick(DUE)["runs"][0]
    seen = json.loads(jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]["final_response"])
    assert seen["tools"] == ["memory_recall"]
    assert seen["system"].endswith("This job is bound to the skill tidy. Its instructions:\nKeep it tidy.")


def test_silent_delivers_nothing_and_stores_no_summary(jobs: Jobs) -> None:
    script = jobs.mock_script([{"text": "  [SILENT]\n"}])
    jobs.add("Quiet", "every 1 minutes", provider="mock", model=script, delivery_target=INBOX)
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["delivery_status"]) == ("ok", "silent")
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert detail["silent"] and detail["output_path"] is None
    assert jobs.inbox() == []
    assert not (jobs.world.fermix_home / "jobs" / "quiet" / run["run_id"]).exists()


def test_a_failed_run_is_recorded_and_its_failure_delivered(jobs: Jobs) -> None:
    jobs.config(
        "[fermix_core.jobs]\ntransient_retries = 0\n"
    )  # an upstream 503 is retried; not the subject here
    script = jobs.mock_script([{"error": {"code": "provider_error", "message": "upstream 503"}}])
    jobs.add("Flaky", "every 1 minutes", provider="mock", model=script, delivery_target=INBOX)
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["error_code"]) == ("error", "provider_error")
    assert jobs.inbox()[0]["text"].startswith("fermix job Flaky (flaky) failed: provider_error: ")
    job = jobs.job("flaky")
    assert job["state"] == "scheduled" and job["last_error"].startswith("provider_error:")


def test_local_and_none_delivery_record_only(jobs: Jobs) -> None:
    script = jobs.mock_script([{"text": "kept"}])
    jobs.add("Local", "every 1 minutes", provider="mock", model=script, delivery_mode="local")
    jobs.add("Nowhere", "every 1 minutes", provider="mock", model=script)
    runs = {r["job_id"]: r for r in jobs.tick(DUE)["runs"]}
    assert runs["local"]["delivery_status"] == "recorded" and runs["nowhere"]["delivery_status"] == "none"
    assert jobs.inbox() == []
    out = jobs.call("get_job_run", {"run_id": runs["local"]["run_id"]})["run"]["output_path"]
    assert Path(out).read_text() == "kept\n"


def test_no_provider_is_a_recorded_error_not_a_crash(jobs: Jobs) -> None:
    jobs.add("Unrouted", "every 1 minutes")
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["error_code"]) == ("error", "no_provider")


def test_unpinned_runs_use_the_cron_route(jobs: Jobs) -> None:
    jobs.config('[fermix_core.routing]\ncron_provider = "echo"\ncron_model = "echo"\n')
    jobs.add("Routed", "every 1 minutes", task="hello")
    run = jobs.tick(DUE)["runs"][0]
    assert run["status"] == "ok"
    usage = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]["usage"]
    assert (usage["provider"], usage["model"]) == ("echo", "echo")


def test_the_cron_route_carries_its_reasoning_effort_to_the_provider(jobs: Jobs) -> None:
    from tests.agent.model_server import ModelServer, text

    server = ModelServer()
    try:
        jobs.config(
            f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{server.base}/v1"\n'
            + '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
            + '[fermix_core.routing]\ncron_provider = "local"\ncron_model = "test-model"\n'
            + 'cron_reasoning_effort = "high"\n'
        )
        server.queue(text("routed"), text("pinned"))
        jobs.add("Routed", "every 1 minutes", task="hello")
        jobs.add("Pinned", "every 1 minutes", task="hello", provider="local", model="pinned-model")
        runs = jobs.tick(DUE)["runs"]
    finally:
        server.close()
    assert [r["status"] for r in runs] == ["ok", "ok"], runs
    bodies = {seen.body["model"]: seen.body for seen in server.seen}
    assert bodies["test-model"]["reasoning_effort"] == "high"
    # A job pinned to its own model is off the cron route: the route's effort is not its own.
    assert "reasoning_effort" not in bodies["pinned-model"]


def test_old_runs_are_pruned(jobs: Jobs) -> None:
    jobs.config("[fermix_core.jobs]\nmax_runs_per_job = 2\n")
    jobs.add("Chatty", "every 1 minutes", provider="echo", model="echo", delivery_mode="local")
    ids = [jobs.tick(later(DUE, minutes=m))["runs"][0]["run_id"] for m in range(3)]
    assert [r["id"] for r in jobs.runs("chatty")] == ids[1:]
    assert not (jobs.world.fermix_home / "jobs" / "chatty" / ids[0]).exists()


# ----- timeouts ----------------------------------------------------------------------------------


def test_the_wall_clock_timeout_stops_a_run(jobs: Jobs) -> None:
    script = jobs.mock_script([{"delay": 60, "text": "too late"}])
    jobs.add("Slow", "every 1 minutes", provider="mock", model=script, timeout_seconds=2)
    t0 = time.monotonic()
    run = jobs.tick(DUE)["runs"][0]
    assert time.monotonic() - t0 < 30
    assert (run["status"], run["error_code"]) == ("error", "timeout")
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert detail["error"]["message"] == "the run passed its timeout_seconds (2 s) and was stopped"
    assert _worker_pids(run["run_id"]) == []


def test_the_inactivity_timeout_stops_a_stalled_run(jobs: Jobs) -> None:
    script = jobs.mock_script([{"delay": 60, "text": "stalled"}])
    jobs.add(
        "Stalled",
        "every 1 minutes",
        provider="mock",
        model=script,
        timeout_seconds=120,
        inactivity_timeout_seconds=2,
    )
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["error_code"]) == ("error", "inactivity_timeout")


# ----- manual runs -------------------------------------------------------------------------------


def test_run_job_now_returns_at_once_and_leaves_the_cadence(jobs: Jobs) -> None:
    script = jobs.mock_script([{"delay": 1, "text": "on demand"}])
    jobs.add("Digest", "every 1 hours", provider="mock", model=script)
    before = jobs.job("digest")["next_run_at"]
    r = jobs.cli("tool", "run_job_now", "--json", '{"job_id": "digest"}')
    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["status"], out["trigger"]) == ("queued", "manual")
    done = wait_for(lambda: [x for x in jobs.runs("digest") if x["status"] in ("ok", "error")])
    assert (done[0]["id"], done[0]["status"], done[0]["trigger"]) == (out["run_id"], "ok", "manual")
    assert done[0]["final_response"] == "on demand"
    wait_for(lambda: jobs.job("digest")["state"] == "scheduled")
    assert jobs.job("digest")["next_run_at"] == before
    # The handed-down lock goes too, once the run is recorded (the runner gives it up last).
    wait_for(lambda: list((jobs.world.fermix_home / "run" / "jobs").iterdir()) == [])


def test_a_manual_run_of_a_one_off_completes_it(jobs: Jobs) -> None:
    jobs.add("Once", "2026-04-01T00:00:00Z", provider="echo", model="echo")
    r = jobs.cli("jobs", "run-now", "once")
    assert r.code == 0, r.stderr
    assert " ok " in r.stdout.splitlines()[0]
    job = jobs.job("once")
    assert (job["state"], job["next_run_at"]) == ("completed", None)
    assert jobs.tick(utc("2026-04-01T00:00:30Z"))["status"] == "idle"


def test_run_now_cli_reports_a_failed_run_with_exit_1(jobs: Jobs) -> None:
    jobs.add("Unrouted", "every 1 hours")
    r = jobs.cli("jobs", "run-now", "unrouted", "--json")
    assert r.code == 1
    assert json.loads(r.stdout)["error"]["code"] == "no_provider"


# ----- killed runners --------------------------------------------------------------------------------


def _start_runner(jobs: Jobs, at: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env={**jobs.env(), "FERMIX_NOW": at},
        cwd=jobs.world.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigkill_during_a_run_leaves_an_interrupted_run_that_is_never_rerun(jobs: Jobs) -> None:
    script = jobs.mock_script(
        [
            {
                "tool_calls": [
                    {"name": "file_write", "arguments": {"path": "side-effect.txt", "content": "once\n"}}
                ]
            },
            {"delay": 120, "text": "never"},
        ]
    )
    jobs.add("Victim", "every 1 minutes", provider="mock", model=script)
    runner = _start_runner(jobs, iso(DUE))
    try:
        wait_for(lambda: jobs.sql("SELECT 1 FROM tool_calls WHERE tool = 'file_write'"), timeout=90)
        [run] = jobs.runs("victim")
        assert run["status"] == "running"
        workers = wait_for(lambda: _worker_pids(run["id"]))
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.communicate()
    # The worker dies with its runner; nothing goes on to finish the run.
    wait_for(lambda: not any(pid_alive(p) for p in workers), timeout=30)
    assert jobs.runs("victim")[0]["status"] == "running"
    summary = jobs.tick(DUE)
    assert summary["reconciled"] == [
        {"run_id": run["id"], "job_id": "victim", "status": "error", "error_code": "interrupted"}
    ]
    assert summary["runs"] == []
    [after] = jobs.runs("victim")
    assert (after["status"], after["error_code"]) == ("error", "interrupted")
    job = jobs.job("victim")
    assert job["state"] == "scheduled" and job["next_run_at"] > run["scheduled_for"]
    # Never re-run: the side effect happened once, and further ticks at that time do nothing.
    assert jobs.tick(DUE)["status"] == "idle"
    writes = jobs.sql("SELECT count(*) FROM tool_calls WHERE tool = 'file_write'")[0][0]
    assert writes == 1
    assert (jobs.world.fermix_home / "workspace" / "side-effect.txt").read_text() == "once\n"
    # Visible: `fermix jobs status`, `fermix jobs list` and `fermix doctor` name it and say what to do.
    status = jobs.cli("jobs", "status", "--json")
    interrupted = json.loads(status.stdout)["interrupted_runs"]
    assert interrupted["count"] == 1 and interrupted["latest"][0]["run_id"] == run["id"]
    assert "never re-run" in interrupted["advice"]
    text = jobs.cli("jobs", "status").stdout
    assert f"interrupted 1 job run(s) ended without a result; latest {run['id']} of victim" in text
    assert f"Note: 1 job run(s) ended without a result; latest {run['id']}" in jobs.cli("jobs", "list").stdout
    doctor = json.loads(jobs.cli("doctor", "--json").stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "job runs"]
    assert check["status"] == "warn" and run["id"] in check["detail"] and "run-now" in check["detail"]


def test_sigterm_records_runs_in_flight_as_interrupted(jobs: Jobs) -> None:
    script = jobs.mock_script([{"delay": 120, "text": "never"}])
    jobs.add("Stopped", "every 1 minutes", provider="mock", model=script)
    runner = _start_runner(jobs, iso(DUE))
    try:
        [run] = wait_for(lambda: [r for r in jobs.runs("stopped") if r["status"] == "running"], timeout=60)
        wait_for(lambda: _worker_pids(run["id"]))
        runner.send_signal(signal.SIGTERM)
        out, _ = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 143
    assert json.loads(out)["runs"][0]["error_code"] == "interrupted"
    [after] = jobs.runs("stopped")
    assert after["status"] == "error" and "stopped (SIGTERM)" in after["error"]
    assert _worker_pids(run["id"]) == []


def _runner_signalled_inside(jobs: Jobs, target: str) -> subprocess.CompletedProcess[str]:
    """`fermix jobs run` whose `target` (a function of the runner module) sends the runner SIGTERM as
    soon as it has done its work: the signal lands at that exact point, however loaded the machine."""
    script = (
        "import os, signal, sys\n"
        "import fermix_cli.jobs.runner as r\n"
        f"real = r.{target}\n"
        "def signalled(*a, **k):\n"
        "    out = real(*a, **k)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return out\n"
        f"r.{target} = signalled\n"
        "from fermix_cli.__main__ import main\n"
        "sys.exit(main(['jobs', 'run', '--json']))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script], env=jobs.env(at=DUE), cwd=jobs.world.project,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_sigterm_while_a_worker_starts_waits_until_it_is_supervised(jobs: Jobs) -> None:
    """SIGTERM right after the worker is spawned, before the runner has taken it on: the stop waits for
    the launch to finish, then kills the worker and records the run; no orphan, no internal error."""
    script = jobs.mock_script([{"delay": 120, "text": "never"}])
    jobs.add("Stopped", "every 1 minutes", provider="mock", model=script)
    done = _runner_signalled_inside(jobs, "spawn_worker")
    assert done.returncode == 143, done.stderr
    [run] = jobs.runs("stopped")
    assert run["status"] == "error" and run["error_code"] == "interrupted"
    assert json.loads(done.stdout)["runs"][0]["error_code"] == "interrupted"
    assert _worker_pids(run["id"]) == []


def test_sigterm_while_a_run_is_delivered_waits_for_the_delivery(jobs: Jobs) -> None:
    """SIGTERM in the middle of recording a finished run: the run is recorded and delivered whole first."""
    script = jobs.mock_script([{"text": "all done"}])
    jobs.add("Quick", "every 1 minutes", provider="mock", model=script, delivery_target=INBOX)
    done = _runner_signalled_inside(jobs, "deliver")
    assert done.returncode == 143, done.stderr
    [run] = jobs.runs("quick")
    assert run["status"] == "ok" and run["delivery_status"] == "delivered"
    assert [m["text"] for m in jobs.inbox()] == ["all done"]
    assert json.loads(done.stdout)["runs"][0]["delivery_status"] == "delivered"


# ----- overlapping runners ----------------------------------------------------------------------


def _release_together(jobs: Jobs, n: int, at: str, **env: str) -> list[subprocess.CompletedProcess[str]]:
    gate = jobs.world.root / f"gate-{at}-{n}"
    script = (
        "import os, sys, time\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.002)\n"
        "from fermix_cli.__main__ import main\n"
        "sys.exit(main(['jobs', 'run', '--json']))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env={**jobs.env(), "FERMIX_NOW": at, **env}, cwd=jobs.world.project,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(n)
    ]  # fmt: skip
    time.sleep(0.3)
    gate.touch()
    done = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


@pytest.mark.slow
@pytest.mark.parametrize("scheduler_lock", ["1", "0"], ids=["with-scheduler-lock", "claims-alone"])
def test_two_then_five_overlapping_runners_run_each_slot_exactly_once(
    jobs: Jobs, scheduler_lock: str
) -> None:
    """The side effect of a run is a line in the inbox file; every slot must leave exactly one."""
    for i in range(4):
        jobs.add(f"every {i}", "every 1 minutes", provider="echo", model="echo", delivery_target=INBOX)
    jobs.add("cron", "* * * * *", provider="echo", model="echo", delivery_target=INBOX)
    jobs.add("once", "2026-03-02T08:00:00Z", provider="echo", model="echo", delivery_target=INBOX)
    expected: set[tuple[str, str]] = set()
    for n, at in ((2, utc("2026-03-02T08:00:40Z")), (5, utc("2026-03-02T08:01:40Z"))):
        due = {
            (r["id"], r["next_run_at"])
            for r in jobs.sql("SELECT id, next_run_at FROM scheduled_jobs WHERE state = 'scheduled'")
        }
        expected |= due
        results = _release_together(jobs, n, iso(at), FERMIX_JOBS_SCHEDULER_LOCK=scheduler_lock)
        assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
        summaries = [json.loads(r.stdout) for r in results]
        ran = [(run["job_id"], run["run_id"]) for s in summaries for run in s["runs"]]
        assert len(ran) == len(due), summaries
        lines = jobs.inbox()
        slots = [(m["job_id"], m["scheduled_for"]) for m in lines]
        assert len(slots) == len(set(slots)) == len(expected)
        assert set(slots) == expected
        assert len({m["run_id"] for m in lines}) == len(lines)
    rows = jobs.sql(
        "SELECT job_id, scheduled_for, count(*) AS n FROM job_runs WHERE status != 'skipped' GROUP BY 1, 2"
    )
    assert all(r["n"] == 1 for r in rows) and len(rows) == len(expected)
    assert all(r["status"] == "ok" for r in jobs.sql("SELECT status FROM job_runs WHERE status != 'skipped'"))
    assert jobs.job("once")["state"] == "completed"


# ----- config as a tick reads it -------------------------------------------------------------------


def test_a_tick_reads_the_jobs_section_afresh_whenever_config_toml_changes(jobs: Jobs) -> None:
    for i in range(3):
        jobs.add(f"j{i}", "every 1 minutes", provider="echo", model="echo")
    assert len(jobs.tick(DUE)["runs"]) == 3  # default cap 4
    jobs.config("[fermix_core.jobs]\nmax_concurrent_runs = 1\n")
    summary = jobs.tick(later(DUE, minutes=1))
    # One claimed at first, the others as the slot frees up: never more than one at a time.
    assert len(summary["runs"]) == 3 and len(summary["waiting"]) >= 2


def test_an_invalid_jobs_section_stops_the_tick_with_the_key_named(jobs: Jobs) -> None:
    jobs.add("j", "every 1 minutes", provider="echo", model="echo")
    jobs.config("[fermix_core.jobs]\nrun_freshness_window_seconds = -1\n")
    r = jobs.cli("jobs", "run", at=DUE)
    assert r.code == 2
    err = json.loads(r.stderr)["error"]
    assert (
        err["code"] == "invalid_config" and "fermix_core.jobs.run_freshness_window_seconds" in err["message"]
    )
    assert jobs.runs("j") == []


def test_an_invalid_config_elsewhere_fails_the_runs_not_silently(jobs: Jobs) -> None:
    jobs.add("j", "every 1 minutes", provider="echo", model="echo")
    jobs.config('[sandbox]\nmode = "sideways"\n')
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["error_code"]) == ("error", "invalid_config")


# ----- transient failures ------------------------------------------------------------------------

RETRY_FAST = "[fermix_core.jobs]\ntransient_retries = 1\nretry_backoff_seconds = 1\n"


@pytest.mark.parametrize(
    ("responses", "attempts"),
    [
        ([{"error": {"code": "rate_limited", "message": "quota"}}], 2),  # transient: tried again, once
        # Failing to reach the provider is transient too (offline, DNS, refused, timed out).
        ([{"error": {"code": "dns_failure", "message": "dns_resolution_failed (x.invalid)"}}], 2),
        ([{"error": {"code": "connect_failed", "message": "could not connect"}}], 2),
        ([{"error": {"code": "timeout", "message": "read timeout"}}], 2),
        ([{"error": {"code": "blocked_url", "message": "resolved to 10.0.0.5"}}], 1),  # a refusal is not
        ([{"error": {"code": "auth_failed", "message": "bad key"}}], 1),  # the task cannot fix that
        (
            [
                {"tool_calls": [{"name": "list_jobs", "arguments": {}}]},
                {"error": {"code": "network", "message": "reset"}},
            ],
            1,
        ),
    ],
    ids=["transient", "dns", "connect", "timeout", "refusal", "not-transient", "after-a-tool-ran"],
)
def test_transient_failures_are_retried_only_before_any_tool_ran(
    jobs: Jobs, responses: list, attempts: int
) -> None:
    jobs.config(RETRY_FAST)
    jobs.add("Flaky", "every 1 minutes", provider="mock", model=jobs.mock_script(responses))
    run = jobs.tick(DUE)["runs"][0]
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert detail["status"] == "error" and detail["attempts"] == attempts


def test_a_transient_failure_that_clears_gives_an_ok_run(jobs: Jobs) -> None:
    from tests.agent.model_server import ModelServer, status, text

    server = ModelServer()
    try:
        jobs.config(
            RETRY_FAST
            + f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{server.base}/v1"\nmax_retries = 0\n'
            + '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
        )
        server.queue(status(503, '{"error":{"message":"overloaded"}}'), text("recovered"))
        jobs.add("Flaky", "every 1 minutes", provider="local", model="test-model")
        run = jobs.tick(DUE)["runs"][0]
    finally:
        server.close()
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert (detail["status"], detail["final_response"], detail["attempts"]) == ("ok", "recovered", 2)
    assert len(server.seen) == 2


def test_an_unreachable_provider_is_retried(jobs: Jobs) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    jobs.config(
        RETRY_FAST
        + f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "http://127.0.0.1:{dead}/v1"\n'
        + "max_retries = 0\n"
        + '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
    )
    jobs.add("Offline", "every 1 minutes", provider="local", model="test-model")
    run = jobs.tick(DUE)["runs"][0]
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert (detail["status"], detail["attempts"]) == ("error", 2), detail
    assert "connect_failed" in json.dumps(detail)


def test_a_command_job_failure_is_never_transient() -> None:
    from fermix_cli.jobs.execute import RunOutcome

    # A command that timed out may have done its work: at most once, whatever the code.
    for code in ("timeout", "connect_failed", "dns_failure", "network"):
        assert RunOutcome.failure(code, "x").transient is True
        assert RunOutcome.failure(code, "x", kind="command").transient is False


def test_sigterm_stops_a_running_command_with_its_worker(jobs: Jobs) -> None:
    """The runner stopped by SIGTERM asks its workers to stop first (SIGTERM, then SIGKILL after a
    grace), so a command job's own process group is killed too, not left running after its run was
    recorded interrupted."""
    marker = "sleep 8.7654"
    r = jobs.cli(
        "jobs", "add", "Cmd", "-s", "every 1 minutes", "--command", f"{marker}; touch late.txt", "--json"
    )
    assert r.code == 0, r.stderr
    runner = _start_runner(jobs, iso(DUE))
    try:
        wait_for(lambda: processes_with(marker), timeout=60)
        runner.send_signal(signal.SIGTERM)
        runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 143
    [run] = jobs.runs("cmd")
    assert run["status"] == "error" and run["error_code"] == "interrupted"
    time.sleep(0.3)
    assert processes_with(marker) == []


def test_sighup_stops_the_runner_as_sigterm_does(jobs: Jobs) -> None:
    """The terminal `fermix jobs run` was started in closes (SIGHUP): the runner stops its worker and
    the command's process group, and records the run interrupted (exit 129), instead of dying at once
    with the run left claimed and the command running on."""
    marker = "sleep 8.7655"
    r = jobs.cli(
        "jobs", "add", "Cmd", "-s", "every 1 minutes", "--command", f"{marker}; touch late.txt", "--json"
    )
    assert r.code == 0, r.stderr
    runner = _start_runner(jobs, iso(DUE))
    try:
        wait_for(lambda: processes_with(marker), timeout=60)
        runner.send_signal(signal.SIGHUP)
        out, _ = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 129
    assert json.loads(out)["runs"][0]["error_code"] == "interrupted"
    [run] = jobs.runs("cmd")
    assert run["status"] == "error" and run["error_code"] == "interrupted"
    assert "stopped (SIGHUP)" in run["error"]
    time.sleep(0.3)
    assert processes_with(marker) == []


def test_sighup_to_a_worker_stops_its_run_and_command(jobs: Jobs) -> None:
    """A worker that gets SIGHUP stops as on SIGTERM: its command's group ends and the runner records
    the run interrupted; the worker is not killed with its run left without a result."""
    marker = "sleep 8.7656"
    r = jobs.cli(
        "jobs", "add", "Cmd", "-s", "every 1 minutes", "--command", f"{marker}; touch late.txt", "--json"
    )
    assert r.code == 0, r.stderr
    runner = _start_runner(jobs, iso(DUE))
    try:
        [run] = wait_for(lambda: [r for r in jobs.runs("cmd") if r["status"] == "running"], timeout=60)
        wait_for(lambda: processes_with(marker), timeout=60)
        [worker] = _worker_pids(run["id"])
        os.kill(worker, signal.SIGHUP)
        runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0
    [after] = jobs.runs("cmd")
    assert (after["status"], after["error_code"]) == ("error", "interrupted"), after
    time.sleep(0.3)
    assert processes_with(marker) == []
    assert not (jobs.world.fermix_home / "workspace" / "late.txt").exists()


def test_a_stop_during_the_launches_records_every_claimed_run(jobs: Jobs) -> None:
    """SIGTERM while the first of three claimed runs is launched: the two not launched yet are
    recorded interrupted by this runner too, not left `queued` for the next tick to find."""
    for name in ("First", "Second", "Third"):
        r = jobs.cli("jobs", "add", name, "-s", "every 1 minutes", "--command", "sleep 20", "--json")
        assert r.code == 0, r.stderr
    done = _runner_signalled_inside(jobs, "spawn_worker")
    assert done.returncode == 143, done.stderr
    runs = [r for name in ("first", "second", "third") for r in jobs.runs(name)]
    assert [(r["status"], r["error_code"]) for r in runs] == [("error", "interrupted")] * 3
    assert len(json.loads(done.stdout)["runs"]) == 3
