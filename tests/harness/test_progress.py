"""`progress: milestones`: throttled notices (at most one per 60 s, only when the run moved)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.harness.conftest import wait_for
from tests.harness.test_gates import _insert_job

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _written(harness: Any, run_id: str, text: str = "file_change") -> bool:
    try:
        with open(harness.run(run_id)["logs"]["stdout"]) as f:
            return text in f.read()
    except FileNotFoundError:
        return False


def test_the_launching_session_hears_progress_at_most_once_a_minute(harness: Any) -> None:
    from fermix_cli.harness.notices import RunOutcomeNotices

    args = {"prompt": "STEPS WAITFILE", "cwd": str(harness.world.project), "progress": "milestones"}
    run_id = harness.call("codex_run", args, session_id="s5")["run_id"]
    wait_for(lambda: _written(harness, run_id))
    notices = RunOutcomeNotices()
    first = notices.collect(harness.ctx(clock=lambda: T0), "s5")
    assert len(first) == 1 and "2 steps so far; latest: changed app.py" in first[0][1]
    assert notices.collect(harness.ctx(clock=lambda: T0 + timedelta(seconds=30)), "s5") == []
    assert (
        notices.collect(harness.ctx(clock=lambda: T0 + timedelta(seconds=90)), "s5") == []
    )  # it did not move
    notices.delivered(harness.ctx(), [i for i, _t in first], "s5")
    assert harness.run(run_id)["delivery"]["state"] == "none"  # progress is not the outcome
    (harness.world.home / "standin" / "go").touch()
    harness.settled(run_id)
    assert [i for i, _t in notices.collect(harness.ctx(), "s5")] == [run_id]


def test_a_quiet_run_sends_no_progress(harness: Any) -> None:
    from fermix_cli.harness.notices import RunOutcomeNotices

    args = {"prompt": "STEPS WAITFILE", "cwd": str(harness.world.project)}
    run_id = harness.call("codex_run", args, session_id="s6")["run_id"]
    wait_for(lambda: _written(harness, run_id))
    assert RunOutcomeNotices().collect(harness.ctx(), "s6") == []
    harness.call("cancel_coding_run", {"run_id": run_id})


def test_a_job_launch_gets_progress_through_the_owners_channel(harness: Any) -> None:
    from fermix_cli.channels.inbox import read_inbox
    from fermix_cli.harness.delivery import deliver_due
    from fermix_cli.jobs.ownersend import lend_owner_send

    harness.configure(
        "approved = true",
        '[fermix_core.jobs]\ndefault_delivery_target = { platform = "inbox", recipient = "owner" }\n',
    )
    _insert_job(harness, "job_p", ["claude_code_run"])
    job = {"origin": "scheduled", "attended": False, "job_id": "job_p"}
    args = {"prompt": "STEPS WAITFILE", "cwd": str(harness.world.project), "progress": "milestones"}
    run_id = harness.call("claude_code_run", args, **job)["run_id"]
    wait_for(lambda: _written(harness, run_id, "tool_use"))
    report = deliver_due(lend_owner_send(harness.ctx(clock=lambda: T0)))
    assert report["progress"] == [run_id]
    assert (
        deliver_due(lend_owner_send(harness.ctx(clock=lambda: T0 + timedelta(seconds=5)))).get("progress")
        is None
    )
    inbox = read_inbox(harness.ctx().paths, "owner", 10)
    assert len(inbox) == 1 and "1 steps so far; latest: used Edit" in json.dumps(inbox[0])
    (harness.world.home / "standin" / "go").touch()
    harness.settled(run_id)
    assert deliver_due(lend_owner_send(harness.ctx()))["delivered"] == [run_id]
