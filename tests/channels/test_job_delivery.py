"""Job deliveries through the channels: `fermix jobs run` sends a command job's output to Telegram or a webhook."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.channels.standins import TelegramStandIn, telegram_section, write_config
from tests.conftest import Env
from tests.jobs.jobs_world import NOW, Jobs, later
from tests.tools.webfakes import FakeWeb, Reply

DUE = later(NOW, minutes=1, seconds=10)


@pytest.fixture
def jobs(world: Env) -> Jobs:
    return Jobs(world)


def add_command(jobs: Jobs, name: str, command: str, target: dict[str, Any]) -> dict[str, Any]:
    r = jobs.cli(
        "jobs",
        "add",
        name,
        "-s",
        "every 1 minutes",
        "--command",
        command,
        "--target",
        json.dumps(target),
        "--json",
    )
    assert r.code == 0, r.stderr
    return json.loads(r.stdout)["job"]


def delivery(jobs: Jobs, run_id: str) -> dict[str, Any]:
    return jobs.call("get_job_run", {"run_id": run_id})["run"]["delivery"]


def test_a_command_job_delivers_its_output_to_telegram(jobs: Jobs, telegram: TelegramStandIn) -> None:
    write_config(jobs.world.fermix_home, telegram_section(telegram, owner_user_id=42))
    job = add_command(
        jobs, "Disk", "echo disk 91%", {"platform": "telegram", "chat_id": 42, "message_thread_id": 5}
    )
    assert job["delivery"] == {
        "mode": "channel",
        "target": {"platform": "telegram", "chat_id": 42, "message_thread_id": 5},
    }
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["delivery_status"]) == ("ok", "delivered")
    (hit,) = telegram.calls("sendMessage")
    assert hit.json() == {
        "chat_id": 42,
        "text": "disk 91%\n",
        "message_thread_id": 5,
        "link_preview_options": {"is_disabled": True},
    }
    assert delivery(jobs, run["run_id"]) == {
        "status": "delivered",
        "detail": {"platform": "telegram", "address": "42", "message_ids": [101], "parts": 1},
    }


def test_a_rate_limited_delivery_records_the_hint(jobs: Jobs, telegram: TelegramStandIn) -> None:
    write_config(jobs.world.fermix_home, telegram_section(telegram))
    add_command(jobs, "Disk", "echo full", {"platform": "telegram", "chat_id": 42})
    telegram.fail(429, "Too Many Requests: retry after 30", retry_after=30)
    run = jobs.tick(DUE)["runs"][0]
    assert (run["status"], run["delivery_status"]) == ("ok", "failed")
    detail = delivery(jobs, run["run_id"])["detail"]
    assert (detail["code"], detail["retry_after"], detail["permanent"]) == ("rate_limited", 30.0, False)
    assert telegram.token not in json.dumps(detail)


def test_a_job_delivers_to_a_named_webhook(jobs: Jobs, web: FakeWeb) -> None:
    web.routes["/hook"] = Reply(200, b"ok")
    write_config(
        jobs.world.fermix_home,
        {"fermix_core": {"channels": {"webhooks": {"ops": {"url": web.url("/hook"), "format": "slack"}}}}},
    )
    add_command(jobs, "Ping", "echo pong", {"platform": "webhook", "recipient": "ops"})
    run = jobs.tick(DUE)["runs"][0]
    assert run["delivery_status"] == "delivered"
    assert web.hits_on("/hook")[0].json() == {"text": "pong\n"}


def test_targets_on_channels_not_set_up_are_refused_at_creation(jobs: Jobs) -> None:
    r = jobs.cli(
        "jobs",
        "add",
        "X",
        "-s",
        "every 1 minutes",
        "--command",
        "true",
        "--target",
        '{"platform":"telegram","chat_id":1}',
    )
    assert r.code == 1 and "channel_not_configured" in r.stderr and "bot_token" in r.stderr


def test_a_slow_delivery_does_not_hold_up_another_runs_timeout(jobs: Jobs, web: FakeWeb) -> None:
    """One run's webhook takes 6 s to answer; another run's 1 s timeout is still enforced on time."""
    web.routes["/hook"] = Reply(200, b"ok", delay=6)
    write_config(
        jobs.world.fermix_home,
        {"fermix_core": {"channels": {"webhooks": {"ops": {"url": web.url("/hook"), "format": "slack"}}}}},
    )
    add_command(jobs, "Ping", "echo pong", {"platform": "webhook", "recipient": "ops"})
    script = jobs.mock_script([{"delay": 120, "text": "never"}])
    jobs.call(
        "schedule_job",
        {
            "name": "Stuck",
            "schedule": "every 1 minutes",
            "task": "t",
            "provider": "mock",
            "model": script,
            "timeout_seconds": 1,
            "inactivity_timeout_seconds": 1,
        },
    )
    runs = {r["job_id"]: r for r in jobs.tick(DUE)["runs"]}
    assert runs["stuck"]["error_code"] == "timeout"
    assert runs["stuck"]["duration_ms"] < 4500  # stopped at its timeout, not after the other's delivery
    assert runs["ping"]["delivery_status"] == "delivered"
    [ping] = jobs.runs("ping")
    assert ping["delivery_status"] == "delivered"


def test_a_runner_killed_during_delivery_leaves_the_run_undelivered_not_blank(
    jobs: Jobs, web: FakeWeb
) -> None:
    import signal
    import subprocess
    import sys

    from tests.jobs.jobs_world import iso, wait_for

    web.routes["/hook"] = Reply(200, b"ok", delay=30)
    write_config(
        jobs.world.fermix_home,
        {"fermix_core": {"channels": {"webhooks": {"ops": {"url": web.url("/hook"), "format": "slack"}}}}},
    )
    add_command(jobs, "Ping", "echo pong", {"platform": "webhook", "recipient": "ops"})
    runner = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env={**jobs.env(), "FERMIX_NOW": iso(DUE)},
        cwd=jobs.world.project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: web.hits_on("/hook"), timeout=60)  # the send is under way
        [run] = jobs.runs("ping")
        assert (run["status"], run["delivery_status"]) == ("ok", "pending")  # committed with the outcome
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    summary = jobs.tick(later(DUE, seconds=20))
    assert {"run_id": run["id"], "job_id": "ping", "delivery_status": "undelivered"} in summary["reconciled"]
    detail = delivery(jobs, run["id"])
    assert detail["status"] == "undelivered" and detail["detail"]["code"] == "runner_died"
    assert "may or may not have reached the channel" in detail["detail"]["message"]
