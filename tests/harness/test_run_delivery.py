"""Outcome delivery: at least once, with the run id; the next ask turn in the launching session, and
`fermix jobs run` through the owner's channel for job launches. Also the human `fermix runs` commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.harness.test_gates import _insert_job


def _cli(harness: Any, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**harness.world.env, "PATH": os.environ["PATH"], **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "fermix_cli", *args],
        capture_output=True, text=True, env=full, cwd=harness.world.project, timeout=60,
    )  # fmt: skip


def test_the_next_ask_turn_in_the_launching_session_reports_the_outcome_once(harness: Any) -> None:
    from fermix_cli.harness.notices import RunOutcomeNotices

    project = str(harness.world.project)
    run_id = harness.call("codex_run", {"prompt": "fix it", "cwd": project}, session_id="s1")["run_id"]
    harness.settled(run_id)
    assert RunOutcomeNotices().collect(harness.ctx(), "s2") == []  # another session hears nothing
    turn = _cli(harness, "ask", "--provider", "echo", "--session", "s1", "--json", "what now?")
    assert turn.returncode == 0, turn.stderr
    assert f"[coding run {run_id}] codex in {project}: completed" in turn.stdout
    assert "stand-in finished: fix it" in turn.stdout
    run = harness.run(run_id)
    assert run["delivery"]["state"] == "delivered" and run["delivery"]["to"] == "session:s1"
    assert RunOutcomeNotices().collect(harness.ctx(), "s1") == []


def test_a_turn_that_fails_leaves_the_outcome_pending(harness: Any) -> None:
    from fermix_cli.agent.assemble import Agent, AgentOptions
    from fermix_cli.harness.notices import RunOutcomeNotices

    run_id = harness.call("codex_run", {"prompt": "q", "cwd": str(harness.world.project)}, session_id="s9")[
        "run_id"
    ]
    harness.settled(run_id)

    class Boom(RunOutcomeNotices):
        def delivered(self, ctx: Any, ids: list[str], session_id: str) -> None:
            raise RuntimeError("crash before the turn was recorded")

    ctx = harness.ctx()
    agent = Agent(ctx, AgentOptions(provider="echo", session="s9"), turn_notices=Boom())
    try:
        agent.run("hi")
    except RuntimeError:
        pass
    finally:
        agent.close()
    assert harness.run(run_id)["delivery"]["state"] == "pending"
    notices = RunOutcomeNotices().collect(harness.ctx(), "s9")
    assert [i for i, _t in notices] == [run_id]


def test_jobs_run_delivers_a_job_launch_through_the_owners_channel(harness: Any) -> None:
    from fermix_cli.channels.inbox import read_inbox

    harness.configure(
        "approved = true",
        '[fermix_core.jobs]\ndefault_delivery_target = { platform = "inbox", recipient = "owner" }\n',
    )
    _insert_job(harness, "job_fix", ["codex_run"])
    job = {"origin": "scheduled", "attended": False, "job_id": "job_fix"}
    run_id = harness.call("codex_run", {"prompt": "nightly", "cwd": str(harness.world.project)}, **job)[
        "run_id"
    ]
    harness.settled(run_id)
    tick = _cli(harness, "jobs", "run")
    assert tick.returncode == 0, tick.stderr
    paths = harness.ctx().paths
    inbox = read_inbox(paths, "owner", 10)
    assert len(inbox) == 1 and run_id in json.dumps(inbox[0])
    assert harness.run(run_id)["delivery"]["state"] == "delivered"
    assert _cli(harness, "jobs", "run").returncode == 0
    assert len(read_inbox(paths, "owner", 10)) == 1  # delivered once; the run id rides along for dedup


def test_jobs_run_marks_a_vanished_run_and_dead_letters_an_undeliverable_outcome(harness: Any) -> None:
    import signal

    harness.configure("approved = true\ndelivery_max_attempts = 2")  # no default target: every send fails
    _insert_job(harness, "job_x", ["codex_run"])
    job = {"origin": "scheduled", "attended": False, "job_id": "job_x"}
    run_id = harness.call("codex_run", {"prompt": "SLOW", "cwd": str(harness.world.project)}, **job)["run_id"]
    rec = harness.record_of("codex")
    os.killpg(rec["pgid"], signal.SIGKILL)
    from tests.harness.conftest import wait_for

    wait_for(lambda: not os.path.exists(f"/proc/{rec['pid']}"))
    from fermix_cli.harness.delivery import deliver_due
    from fermix_cli.jobs.ownersend import lend_owner_send

    report = deliver_due(lend_owner_send(harness.ctx()))
    assert report["settled"] == [run_id] and report["failed"][0]["error"] == "no_default_target"
    ctx = harness.ctx()
    with ctx.state.write() as db:  # the retry is due
        db.execute(
            "UPDATE coding_runs SET delivered_at = '2000-01-01T00:00:00.000000Z' WHERE id = ?", (run_id,)
        )
    deliver_due(lend_owner_send(harness.ctx()))
    report = deliver_due(lend_owner_send(harness.ctx()))
    assert report["dead_lettered"] == [run_id]
    run = harness.run(run_id)
    assert run["status"] == "lost" and run["delivery"]["state"] == "dead_letter"
    assert [r["run_id"] for r in harness.call("list_coding_runs", {})["dead_lettered"]] == [run_id]


def test_the_runs_commands(harness: Any) -> None:
    project = str(harness.world.project)
    run_id = harness.call("codex_run", {"prompt": "SLOW", "cwd": project})["run_id"]
    harness.record_of("codex")
    listing = _cli(harness, "runs", "list")
    assert listing.returncode == 0 and run_id in listing.stdout and "running" in listing.stdout
    shown = json.loads(_cli(harness, "runs", "show", run_id, "--json").stdout)
    assert shown["status"] == "running" and shown["cwd"] == project
    follow = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "runs", "logs", "-f", run_id],
        stdout=subprocess.PIPE, text=True, env={**harness.world.env, "PATH": os.environ["PATH"]},
        cwd=project,
    )  # fmt: skip
    cancelled = _cli(harness, "runs", "cancel", run_id)
    assert cancelled.returncode == 0 and f"cancelled {run_id}" in cancelled.stdout
    out, _ = follow.communicate(timeout=30)
    assert follow.returncode == 0 and '"thread.started"' in out
    assert harness.run(run_id)["status"] == "cancelled"


def test_a_scheduled_job_that_allows_codex_run_launches_one_and_gets_its_outcome(harness: Any) -> None:
    """The whole path: schedule_job with allowed_tools, `fermix jobs run` runs the job's model (echo), the
    model calls codex_run, the run finishes, and the next tick delivers its outcome to the owner's inbox."""
    from datetime import UTC, datetime

    from fermix_cli.channels.inbox import read_inbox

    harness.configure(
        "approved = true",
        '[fermix_core.jobs]\ndefault_delivery_target = { platform = "inbox", recipient = "owner" }\n'
        f"[sandbox]\nallowed_roots = [{json.dumps(str(harness.world.project))}]\n",  # a job has no launch cwd
    )
    t0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    task = json.dumps(
        {
            "tool_calls": [
                {
                    "name": "codex_run",
                    "arguments": {"prompt": "nightly fix", "cwd": str(harness.world.project)},
                }
            ]
        }
    )
    job = harness.call(
        "schedule_job",
        {"name": "Nightly", "schedule": "every 1 minutes", "task": task, "provider": "echo", "model": "echo",
         "allowed_tools": ["codex_run"], "delivery_mode": "local"},
        clock=lambda: t0,
    )["job"]  # fmt: skip
    tick = _cli(harness, "jobs", "run", env={"FERMIX_NOW": "2026-03-02T08:01:05Z"})
    assert tick.returncode == 0, tick.stderr
    rows = harness.rows()
    assert len(rows) == 1 and rows[0]["job_id"] == job["id"] and rows[0]["origin"] == "scheduled"
    harness.settled(rows[0]["id"])
    assert _cli(harness, "jobs", "run", env={"FERMIX_NOW": "2026-03-02T08:01:30Z"}).returncode == 0
    inbox = read_inbox(harness.ctx().paths, "owner", 10)
    assert [m for m in inbox if rows[0]["id"] in json.dumps(m)]
    assert harness.run(rows[0]["id"])["delivery"]["state"] == "delivered"
