"""Scheduled jobs and the clock: used one-off instants, backward clock steps, expiry before a tick, a
schedule sent again unchanged, years before 1000, paused jobs' next run, crons lost in DST gaps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from fermix_cli.events import stamps
from tests.jobs.jobs_world import Jobs, utc
from tests.jobs.test_claims import Sim
from tests.jobs.test_command_jobs import add_command


@pytest.fixture
def sim(jobs: Jobs) -> Iterator[Sim]:
    s = Sim(jobs)
    yield s
    s.close()


# ----- a one-off moved back to an instant that already ran ----------------------------------------


def test_a_one_off_cannot_be_moved_back_to_its_instant_that_already_ran(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Once", "2026-03-02T09:00:00Z")
    sim.step(utc("2026-03-02T09:00:30Z"))
    assert jobs.job("once")["state"] == "completed"
    err = jobs.error(
        "update_job", {"job_id": "once", "schedule": "2026-03-02T09:00:00Z"}, at=utc("2026-03-02T10:00:00Z")
    )
    assert err.code == "invalid_schedule"
    assert (
        "already has a run for 2026-03-02T09:00:00.000000Z" in err.message and "later instant" in err.message
    )
    row = jobs.job("once")
    assert (row["state"], row["next_run_at"]) == ("completed", None)
    # A later instant is fine, and runs.
    jobs.call(
        "update_job", {"job_id": "once", "schedule": "2026-03-02T11:00:00Z"}, at=utc("2026-03-02T10:00:00Z")
    )
    assert [c.scheduled_for for c in sim.step(utc("2026-03-02T11:00:05Z")).claimed] == [
        "2026-03-02T11:00:00.000000Z"
    ]


def test_a_recurring_job_cannot_become_a_one_off_at_a_slot_it_already_ran(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Rec", "every 15 minutes", at=utc("2026-03-02T08:00:00Z"))
    sim.step(utc("2026-03-02T08:15:05Z"))
    err = jobs.error(
        "update_job", {"job_id": "rec", "schedule": "2026-03-02T08:15:00Z"}, at=utc("2026-03-02T08:20:00Z")
    )
    assert err.code == "invalid_schedule"
    row = jobs.job("rec")
    assert (row["schedule"], row["state"], row["next_run_at"]) == (
        "every 15 minutes",
        "scheduled",
        "2026-03-02T08:30:00.000000Z",
    )


def test_a_due_one_off_whose_instant_already_has_a_run_is_completed_not_stuck(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Once", "2026-03-02T09:00:00Z")
    sim.step(utc("2026-03-02T09:00:30Z"))
    # As an older fermix left it: scheduled again for the instant that already ran.
    with jobs.db() as c:
        c.execute(
            "UPDATE scheduled_jobs SET state = 'scheduled', next_run_at = '2026-03-02T09:00:00.000000Z'"
        )
    report = sim.tick(utc("2026-03-02T10:01:00Z"))
    assert report.claimed == []
    row = jobs.job("once")
    assert (row["state"], row["next_run_at"]) == ("completed", None)
    assert len(jobs.runs("once")) == 1


# ----- the clock steps backwards -------------------------------------------------------------------


def test_recurring_jobs_keep_running_after_the_clock_steps_back_a_day(jobs: Jobs, sim: Sim) -> None:
    created = utc("2026-03-03T08:00:00Z")
    jobs.add("Q", "every 15 minutes", at=created)
    jobs.add("C", "*/15 * * * *", at=created)
    jobs.add("E", "every 15 minutes", at=created, expires_at="2026-03-03T12:00:00Z")
    assert len(sim.step(utc("2026-03-03T08:15:10Z")).claimed) == 3
    back = sim.step(utc("2026-03-02T08:30:05Z"))
    assert {(r["job_id"], r["was"], r["next_run_at"]) for r in back.rescheduled} == {
        (j, "2026-03-03T08:30:00.000000Z", "2026-03-02T08:45:00.000000Z") for j in ("q", "c", "e")
    }
    assert back.expired == [] and jobs.job("e")["state"] == "scheduled"
    fired = sim.step(utc("2026-03-02T08:45:05Z"))
    assert sorted(c.job_id for c in fired.claimed) == ["c", "e", "q"]
    # The next day's slots follow as usual, nothing lost to the abandoned future slot.
    before = len(sim.fired)
    swept = sim.sweep(utc("2026-03-02T09:00:05Z"), utc("2026-03-02T10:00:05Z"), every=timedelta(minutes=15))
    assert sorted(swept[before:]) == [
        f"2026-03-02T{h}.000000Z"
        for h in ("09:00:00", "09:15:00", "09:30:00", "09:45:00", "10:00:00")
        for _ in range(3)
    ]


def test_an_interval_pulled_back_keeps_its_phase(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Daily", "every 1 day", at=utc("2026-03-03T08:00:00Z"))
    report = sim.step(utc("2026-03-01T15:00:00Z"))
    assert [r["next_run_at"] for r in report.rescheduled] == ["2026-03-02T08:00:00.000000Z"]
    # A step back shorter than the interval moves nothing.
    assert sim.step(utc("2026-03-01T16:00:00Z")).rescheduled == []


def test_the_idle_check_does_not_hide_a_clock_step_from_the_cli_tick(jobs: Jobs) -> None:
    jobs.now = utc("2026-03-03T08:00:00Z")
    add_command(jobs, "Late", "echo late", schedule="every 15 minutes")
    assert [r["status"] for r in jobs.tick(utc("2026-03-03T08:15:10Z"))["runs"]] == ["ok"]
    out = jobs.tick(utc("2026-03-02T08:30:05Z"))
    assert [r["job_id"] for r in out["rescheduled"]] == ["late"]
    assert jobs.job("late")["next_run_at"] == "2026-03-02T08:45:00.000000Z"
    assert [r["job_id"] for r in jobs.tick(utc("2026-03-02T08:45:05Z"))["runs"]] == ["late"]


def mark(jobs: Jobs) -> str | None:
    rows = jobs.sql("SELECT high_water FROM jobs_clock_mark")
    return rows[0][0] if rows else None


def test_a_job_scheduled_while_a_tick_waited_for_the_lock_is_not_pulled_back(jobs: Jobs) -> None:
    # The tick took its "now" (10:00:00), then waited for the lock while the job was added at 10:00:01.
    jobs.now = utc("2026-12-03T10:00:01Z")
    add_command(jobs, "Hourly", "echo hi", schedule="every 1 hour")
    out = jobs.tick(utc("2026-12-03T10:00:00Z"))
    assert out.get("rescheduled", []) == [] and out["runs"] == []
    assert jobs.job("hourly")["next_run_at"] == "2026-12-03T11:00:01.000000Z"
    out = jobs.tick(utc("2026-12-03T10:00:02Z"))
    assert (out["status"], out["runs"]) == ("idle", [])
    assert jobs.runs("hourly") == []


def test_a_run_now_after_the_step_does_not_cancel_the_pull_back(jobs: Jobs) -> None:
    jobs.now = utc("2026-12-10T10:00:00Z")
    add_command(jobs, "Daily", "echo hi", schedule="every 1 day")
    r = jobs.cli("jobs", "run-now", "daily", at=utc("2026-12-03T10:00:00Z"))
    assert r.code == 0, r.stderr
    out = jobs.tick(utc("2026-12-03T10:01:00Z"))
    assert [(x["job_id"], x["was"], x["next_run_at"]) for x in out["rescheduled"]] == [
        ("daily", "2026-12-11T10:00:00.000000Z", "2026-12-04T10:00:00.000000Z")
    ]
    assert jobs.job("daily")["next_run_at"] == "2026-12-04T10:00:00.000000Z"


def test_an_update_after_the_step_does_not_cancel_the_pull_back(jobs: Jobs) -> None:
    jobs.add("Daily", "every 1 day", at=utc("2026-12-10T10:00:00Z"))
    jobs.call("update_job", {"job_id": "daily", "task": "say bye"}, at=utc("2026-12-03T10:00:00Z"))
    out = jobs.tick(utc("2026-12-03T10:01:00Z"))
    assert [x["next_run_at"] for x in out["rescheduled"]] == ["2026-12-04T10:00:00.000000Z"]


def test_after_a_step_is_handled_the_next_ticks_are_idle_and_write_nothing(jobs: Jobs) -> None:
    # A cron whose next run is still right after the step: nothing to pull back, but the step is seen.
    jobs.now = utc("2026-12-03T10:00:00Z")
    add_command(jobs, "Noon", "echo noon", schedule="0 12 * * *")
    out = jobs.tick(utc("2026-12-03T09:00:00Z"))
    assert out["status"] != "idle" and out["rescheduled"] == []
    assert jobs.job("noon")["next_run_at"] == "2026-12-03T12:00:00.000000Z"
    for minute in ("09:01", "09:02", "09:30"):
        assert jobs.tick(utc(f"2026-12-03T{minute}:00Z"))["status"] == "idle"
    assert mark(jobs) == "2026-12-03T09:00:00.000000Z"  # set by the 09:00 tick; idle ticks wrote nothing


def test_a_forward_step_then_back_pulls_the_jobs_back(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Hourly", "every 1 hour", at=utc("2026-12-03T10:00:00Z"))
    assert [c.scheduled_for for c in sim.step(utc("2026-12-03T11:00:05Z")).claimed] == [
        "2026-12-03T11:00:00.000000Z"
    ]
    ahead = sim.step(utc("2027-01-01T00:00:30Z"))
    assert [c.scheduled_for for c in ahead.claimed] == ["2027-01-01T00:00:00.000000Z"]
    back = sim.step(utc("2026-12-03T11:30:00Z"))
    assert [(r["was"], r["next_run_at"]) for r in back.rescheduled] == [
        ("2027-01-01T01:00:00.000000Z", "2026-12-03T12:00:00.000000Z")
    ]
    # 12:00 was recorded as missed by the tick in 2027 (a slot is used once, run or skipped); 13:00 runs.
    assert sim.step(utc("2026-12-03T12:00:05Z")).claimed == []
    assert [c.scheduled_for for c in sim.step(utc("2026-12-03T13:00:05Z")).claimed] == [
        "2026-12-03T13:00:00.000000Z"
    ]


def test_overlapping_ticks_out_of_order_by_less_than_the_margin_pull_nothing(jobs: Jobs, sim: Sim) -> None:
    from fermix_cli.jobs.liveness import Runner

    jobs.add("Minutely", "every 1 minute", at=utc("2026-12-03T10:00:00Z"))
    jobs.add("Cron", "* * * * *", at=utc("2026-12-03T10:00:00Z"))
    first = sim.step(utc("2026-12-03T10:03:00Z"))
    assert [c.scheduled_for for c in first.claimed] == ["2026-12-03T10:01:00.000000Z"] * 2
    other = Runner.start(sim.ctx.paths)
    try:
        late = sim.tick(utc("2026-12-03T10:00:30Z"), runner=other)  # took its now 2.5 min earlier
    finally:
        other.release()
    assert late.rescheduled == [] and late.claimed == []
    assert {r["next_run_at"] for r in jobs.sql("SELECT next_run_at FROM scheduled_jobs")} == {
        "2026-12-03T10:04:00.000000Z"
    }
    assert sim.step(utc("2026-12-03T10:03:30Z")).claimed == []
    assert len(sim.step(utc("2026-12-03T10:04:05Z")).claimed) == 2
    for job_id in ("minutely", "cron"):
        slots = [r["scheduled_for"] for r in jobs.runs(job_id)]
        assert len(slots) == len(set(slots))


def test_a_slot_that_ran_before_the_step_back_never_runs_again(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Daily", "every 1 day", at=utc("2026-03-01T08:00:00Z"))
    sim.step(utc("2026-03-02T08:00:05Z"))
    sim.step(utc("2026-03-03T08:00:05Z"))
    back = sim.step(utc("2026-03-02T12:00:00Z"))
    assert [r["next_run_at"] for r in back.rescheduled] == ["2026-03-03T08:00:00.000000Z"]
    assert sim.step(utc("2026-03-03T08:00:05Z")).claimed == []
    assert jobs.job("daily")["next_run_at"] == "2026-03-04T08:00:00.000000Z"
    assert [c.scheduled_for for c in sim.step(utc("2026-03-04T08:00:05Z")).claimed] == [
        "2026-03-04T08:00:00.000000Z"
    ]
    slots = [r["scheduled_for"] for r in jobs.runs("daily")]
    assert len(slots) == len(set(slots)) == 3


# ----- run_job_now past the end date ---------------------------------------------------------------


def test_run_now_past_the_end_date_expires_the_job_and_refuses(jobs: Jobs) -> None:
    add_command(jobs, "Ex", "echo ran", "--expires-at", "2026-03-02T09:00:00Z", schedule="every 30 minutes")
    at = utc("2026-03-02T09:30:00Z")
    listed = jobs.call("list_jobs", {}, at=at)["jobs"][0]
    assert (listed["state"], listed["next_run_at"]) == ("expired", None)
    assert jobs.call("list_jobs", {"state": "scheduled"}, at=at)["jobs"] == []
    assert [j["id"] for j in jobs.call("list_jobs", {"state": "expired"}, at=at)["jobs"]] == ["ex"]
    r = jobs.cli("jobs", "run-now", "ex", at=at)
    assert r.code != 0 and "expired" in r.stderr and "ran" not in r.stdout
    row = jobs.job("ex")
    assert (row["state"], row["next_run_at"]) == ("expired", None)
    # The slot due before the end date is recorded as skipped; nothing ran.
    assert [(x["trigger"], x["status"]) for x in jobs.runs("ex")] == [("schedule", "skipped")]
    err = jobs.error("run_job_now", {"job_id": "ex"}, at=at)
    assert err.code == "job_state" and "expired" in err.message


def test_status_counts_a_job_past_its_end_date_as_expired_like_list(jobs: Jobs) -> None:
    add_command(jobs, "Ex", "echo ran", "--expires-at", "2026-03-02T09:00:00Z", schedule="every 30 minutes")
    add_command(jobs, "Keep", "echo ran", schedule="every 30 minutes")
    assert jobs.cli("jobs", "pause", "ex").code == 0
    at = utc("2026-03-02T09:30:00Z")
    status = json.loads(jobs.cli("jobs", "status", "--json", at=at).stdout)
    assert status["jobs"] == {"expired": 1, "scheduled": 1}
    assert "1 expired, 1 scheduled" in jobs.cli("jobs", "status", at=at).stdout
    listed = {
        j["id"]: j["state"] for j in json.loads(jobs.cli("jobs", "list", "--json", at=at).stdout)["jobs"]
    }
    assert listed == {"ex": "expired", "keep": "scheduled"}


# ----- the same schedule sent again ---------------------------------------------------------------


def test_the_same_interval_sent_again_keeps_the_cadence(jobs: Jobs) -> None:
    jobs.add("Daily", "every 1 day", at=utc("2026-03-02T08:00:00Z"))
    out = jobs.call(
        "update_job",
        {"job_id": "daily", "schedule": "Every 1 DAY", "task": "say hello"},
        at=utc("2026-03-02T15:00:00Z"),
    )
    assert out["changed"] == ["task"]
    assert out["job"]["next_run_at"] == "2026-03-03T08:00:00.000000Z"
    assert "next_run_at" not in out["message"]


def test_the_same_cron_sent_again_keeps_its_due_slot(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Nine", "0 9 * * *", at=utc("2026-03-02T08:00:00Z"))
    at = utc("2026-03-02T09:00:20Z")  # due, not yet ticked
    out = jobs.call("update_job", {"job_id": "nine", "schedule": "0  9 * * *"}, at=at)
    assert out["changed"] == []
    assert [c.scheduled_for for c in sim.step(utc("2026-03-02T09:00:30Z")).claimed] == [
        "2026-03-02T09:00:00.000000Z"
    ]


# ----- years before 1000 ---------------------------------------------------------------------------


def test_a_one_off_before_the_year_1000_is_stored_four_digits_and_fires(jobs: Jobs, sim: Sim) -> None:
    job = jobs.add("Old", "0999-06-01T00:00:00Z")
    assert job["next_run_at"] == "0999-06-01T00:00:00.000000Z"
    assert [c.job_id for c in sim.step(utc("2026-03-02T08:00:00Z")).claimed] == ["old"]
    assert jobs.runs("old")[0]["scheduled_for"] == "0999-06-01T00:00:00.000000Z"


def test_event_stamps_are_four_digit_years_too() -> None:
    moment = datetime(999, 6, 1, tzinfo=UTC)
    assert stamps.ts(moment) == "0999-06-01T00:00:00.000000Z"
    assert stamps.ts(moment) < stamps.ts(datetime(2026, 1, 1, tzinfo=UTC))
    assert stamps.parse_ts(stamps.ts(moment)) == moment


# ----- a paused job's next run ----------------------------------------------------------------------


def test_a_paused_job_shows_no_stale_next_run(jobs: Jobs) -> None:
    add_command(jobs, "Nap", "echo nap", schedule="every 1 hours")
    jobs.call("pause_job", {"job_id": "nap"})
    later = utc("2026-03-05T08:00:00Z")
    listed = jobs.call("list_jobs", {}, at=later)["jobs"][0]
    assert (listed["state"], listed["next_run_at"]) == ("paused", None)
    shown = jobs.cli("jobs", "show", "nap", at=later)
    assert shown.code == 0 and "next run   - (paused; computed on resume)" in shown.stdout
    table = jobs.cli("jobs", "list", at=later)
    assert "2026-03-02T08:59" not in table.stdout and "next -" in table.stdout
    as_json = json.loads(jobs.cli("jobs", "list", "--json", at=later).stdout)
    assert as_json["jobs"][0]["next_run_at"] is None
    resumed = jobs.call("resume_job", {"job_id": "nap"}, at=later)["job"]
    assert resumed["next_run_at"] == "2026-03-05T09:00:00.000000Z"


# ----- a cron lost in DST gaps ---------------------------------------------------------------------


def test_a_cron_whose_matches_all_fall_in_a_dst_gap_says_so(jobs: Jobs) -> None:
    err = jobs.error(
        "schedule_job",
        {"name": "Gap", "schedule": "30 2 8-14 3 0", "task": "t", "timezone": "America/New_York"},
    )
    assert err.code == "invalid_schedule"
    assert "daylight-saving gap of America/New_York" in err.message and "2026-03-08T02:30" in err.message
    # An expression unsatisfiable for another reason gets no such hint.
    other = jobs.error("schedule_job", {"name": "Leap", "schedule": "0 0 29 2 *", "task": "t"})
    assert "unsatisfiable" in other.message and "daylight" not in other.message
