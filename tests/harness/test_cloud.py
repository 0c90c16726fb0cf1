"""codex_cloud_run and stop_tracking_coding_run against the stand-in `codex cloud`, with a fake clock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.harness.conftest import alive as _alive
from tests.harness.conftest import wait_for

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def cloud(harness: Any) -> Any:
    harness.configure("approved = true\ncloud_enabled = true")
    return harness


def _log(harness: Any) -> list[list[str]]:
    path = harness.world.home / "standin" / "cloud.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _poll(harness: Any, at: datetime) -> dict[str, Any]:
    from fermix_cli.harness.delivery import deliver_due
    from fermix_cli.jobs.ownersend import lend_owner_send

    return deliver_due(lend_owner_send(harness.ctx(clock=lambda: at)))


def test_cloud_tools_exist_only_with_cloud_enabled(harness: Any) -> None:
    assert harness.fails("codex_cloud_run", {"query": "q", "env_id": "env_x"}).code == "unknown_tool"
    assert harness.fails("stop_tracking_coding_run", {"run_id": "hr_000000000000"}).code == "unknown_tool"


def test_a_cloud_run_is_submitted_polled_and_harvested(cloud: Any) -> None:
    started = cloud.call(
        "codex_cloud_run", {"query": "Upgrade pytest", "env_id": "env_x", "branch": "dev", "attempts": 2},
        clock=lambda: T0, session_id="s1",
    )  # fmt: skip
    assert started["rail"] == "cloud" and started["task_url"].startswith(
        "https://chatgpt.com/codex/tasks/task_e_"
    )
    assert _log(cloud)[0] == [
        "cloud",
        "exec",
        "--env",
        "env_x",
        "--branch",
        "dev",
        "--attempts",
        "2",
        "--",
        "Upgrade pytest",
    ]
    run_id = started["run_id"]
    # Not due before 120 s; then PENDING; then READY with the diff harvested.
    assert _poll(cloud, T0 + timedelta(seconds=60))["settled"] == [] and len(_log(cloud)) == 1
    assert _poll(cloud, T0 + timedelta(seconds=121))["settled"] == []
    assert cloud.run(run_id)["status"] == "running"
    assert _poll(cloud, T0 + timedelta(seconds=242))["settled"] == [run_id]
    run = cloud.run(run_id)
    assert run["status"] == "completed" and "[READY] Upgrade pytest" in run["result_tail"]
    assert "+print('cloud')" in run["result_tail"]
    assert [a[1] for a in _log(cloud)] == ["exec", "status", "status", "diff"]
    # A cloud run cannot be cancelled; it points at stop_tracking_coding_run.
    err = cloud.fails("cancel_coding_run", {"run_id": run_id})
    assert err.code == "vendor_cancel_unsupported" and "stop_tracking_coding_run" in err.message


def test_cloud_runs_do_not_take_local_slots(cloud: Any) -> None:
    for _ in range(3):
        cloud.call("codex_cloud_run", {"query": "NEVER", "env_id": "env_x"})
    project = cloud.world.project
    # Siblings: a run in `project` itself (not a git checkout) would hold everything beneath it.
    for name in ("a", "b"):
        (project / name).mkdir()
    for cwd in (project / "a", project / "b"):
        cloud.call("codex_run", {"prompt": "quick", "cwd": str(cwd)})


def test_tracking_stops_at_the_deadline_and_delivers_the_url(cloud: Any) -> None:
    run_id = cloud.call("codex_cloud_run", {"query": "NEVER", "env_id": "env_x"}, clock=lambda: T0)["run_id"]
    url = cloud.run(run_id)["task_url"]
    _poll(cloud, T0 + timedelta(minutes=30))
    assert cloud.run(run_id)["status"] == "running"
    assert _poll(cloud, T0 + timedelta(minutes=91))["settled"] == [run_id]
    run = cloud.run(run_id)
    assert run["status"] == "untracked" and run["result_tail"] == url and "keeps running" in run["reason"]
    assert run["delivery"]["state"] == "pending"


def test_stop_tracking_never_claims_the_task_stopped(cloud: Any) -> None:
    run_id = cloud.call("codex_cloud_run", {"query": "NEVER", "env_id": "env_x"})["run_id"]
    out = cloud.call("stop_tracking_coding_run", {"run_id": run_id})
    assert out["status"] == "untracked" and "keeps running on ChatGPT" in out["note"]
    assert cloud.fails("stop_tracking_coding_run", {"run_id": run_id}).code == "run_finished"
    local = cloud.call("codex_run", {"prompt": "quick", "cwd": str(cloud.world.project)})["run_id"]
    assert cloud.fails("stop_tracking_coding_run", {"run_id": local}).code == "not_cloud_run"


def test_a_failed_submission_and_an_oversized_query(cloud: Any) -> None:
    err = cloud.fails("codex_cloud_run", {"query": "CLOUDFAIL", "env_id": "env_x"})
    assert err.code == "cloud_submit_failed" and "not found" in err.message
    assert cloud.run(err.details["run_id"])["status"] == "failed"
    big = "x" * (300 * 1024)
    before = len(cloud.rows())
    err = cloud.fails("codex_cloud_run", {"query": big, "env_id": "env_x"})
    assert err.code == "query_too_long" and len(cloud.rows()) == before
    assert [a for a in _log(cloud) if a[1] == "exec" and a[-1] == big] == []


def test_an_error_ending_fails_the_run(cloud: Any) -> None:
    run_id = cloud.call("codex_cloud_run", {"query": "ERROR please", "env_id": "env_x"}, clock=lambda: T0)[
        "run_id"
    ]
    _poll(cloud, T0 + timedelta(seconds=121))
    run = cloud.run(run_id)
    assert run["status"] == "failed" and "[ERROR]" in run["result_tail"]


def test_a_query_over_the_one_argument_cap_is_refused_although_the_config_allows_more(cloud: Any) -> None:
    # Linux takes at most 128 KiB in one argument: such a query could never be submitted.
    cloud.configure("approved = true\ncloud_enabled = true\nmax_prompt_arg_bytes = 1000000")
    err = cloud.fails("codex_cloud_run", {"query": "x" * 150_000, "env_id": "env_x"})
    assert err.code == "query_too_long" and err.details["max_bytes"] < 128 * 1024
    assert cloud.rows() == [] and _log(cloud) == []


@pytest.mark.parametrize("args", [{"env_id": "--help"}, {"env_id": "env_x", "branch": "-b"}])
def test_cloud_values_that_would_be_flags_are_refused(cloud: Any, args: dict[str, Any]) -> None:
    err = cloud.fails("codex_cloud_run", {"query": "q", **args})
    assert err.code == "invalid_input" and "must not start with '-'" in err.message
    assert cloud.rows() == [] and _log(cloud) == []


def test_a_submission_whose_process_died_is_settled_and_its_call_ended(cloud: Any) -> None:
    world = cloud.world
    code = (
        "from fermix_cli.core.context import ToolContext\n"
        "from fermix_cli.core.paths import resolve_paths\n"
        "from fermix_cli.core.registry import default_registry\n"
        f"ctx = ToolContext(paths=resolve_paths({str(world.fermix_home)!r}), os_home={str(world.home)!r},"
        f" launch_cwd={str(world.project)!r})\n"
        "default_registry().invoke('codex_cloud_run', {'query': 'CLOUDSLOW do it', 'env_id': 'env_1'}, ctx)\n"
    )
    env = {**world.env, "PATH": os.environ["PATH"]}
    submitter = subprocess.Popen([sys.executable, "-c", code], env=env)
    pid_file = world.home / "standin" / "cloud_exec.pid"
    exec_pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text()))
    try:
        [row] = cloud.rows()
        run_id = row["id"]
        assert row["status"] == "starting"
        err = cloud.fails("stop_tracking_coding_run", {"run_id": run_id})
        assert err.code == "run_starting"  # still submitting: nothing is claimed finished yet
        submitter.send_signal(signal.SIGKILL)
        submitter.wait()
        assert _alive(exec_pid)  # the call outlives its submitter, in its own session
        # `fermix jobs run` settles it: the orphaned call ended, the run lost, never `starting` again.
        assert _poll(cloud, datetime.now(UTC))["settled"] == [run_id]
        assert not _alive(exec_pid)
        run = cloud.run(run_id)
        assert run["status"] == "lost" and "may or may not exist" in run["reason"]
        assert run["delivery"]["state"] == "pending"
        assert cloud.call("list_coding_runs", {})["active"] == []
        assert cloud.fails("stop_tracking_coding_run", {"run_id": run_id}).code == "run_finished"
    finally:
        if _alive(exec_pid):
            os.kill(exec_pid, signal.SIGKILL)
