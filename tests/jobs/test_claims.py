"""Ticks in-process with an injected clock: claim, advance, skip, wait, expire, disable, reconcile; DST and
leap years as the runtime sees them."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from fermix_cli.jobs import claims
from fermix_cli.jobs import outcomes as records
from fermix_cli.jobs.execute import RunOutcome
from fermix_cli.jobs.liveness import Runner, liveness
from fermix_cli.jobs.tick import nothing_to_do
from tests.jobs.jobs_world import NOW, Jobs, later, stamp, utc


class Sim:
    """A scheduler driven by hand: tick at chosen instants, finish what was claimed at once."""

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.ctx = jobs.world.context()
        self.runner = Runner.start(self.ctx.paths)
        self.fired: list[tuple[str, str]] = []

    def tick(
        self, at: datetime, *, cap: int = 4, window: int = 3600, runner: Runner | None = None
    ) -> claims.TickReport:
        return claims.tick(
            self.ctx.state.write,
            at,
            self.ctx.paths,
            runner or self.runner,
            max_concurrent=cap,
            window_seconds=window,
        )

    def finish(self, report: claims.TickReport, at: datetime, status: str = "ok") -> None:
        for run in report.claimed:
            outcome = RunOutcome(status=status) if status == "ok" else RunOutcome.failure("boom", "it broke")
            assert records.finish_run(
                self.ctx.state.write, run.run_id, self.runner.claimed_by, run.job_id, outcome, at, 1.0, None
            )
            self.fired.append((run.job_id, run.scheduled_for))

    def step(self, at: datetime, **kw: Any) -> claims.TickReport:
        report = self.tick(at, **kw)
        self.finish(report, at)
        return report

    def sweep(self, start: datetime, end: datetime, every: timedelta) -> list[str]:
        t = start
        while t <= end:
            self.step(t)
            t += every
        return [slot for _, slot in self.fired]

    def close(self) -> None:
        self.runner.release()
        self.ctx.close()


@pytest.fixture
def sim(jobs: Jobs) -> Iterator[Sim]:
    s = Sim(jobs)
    yield s
    s.close()


# ----- claim and advance ---------------------------------------------------------------------------


def test_a_due_job_is_claimed_once_and_advanced_before_it_runs(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Digest", "every 1 minutes")
    at = utc("2026-03-02T08:00:40Z")
    report = sim.tick(at)
    assert [(c.job_id, c.scheduled_for) for c in report.claimed] == [
        ("digest", "2026-03-02T08:00:30.000000Z")
    ]
    row = jobs.job("digest")
    # Advanced from the scheduled time, not from now: no drift.
    assert (row["state"], row["next_run_at"]) == ("running", "2026-03-02T08:01:30.000000Z")
    run = jobs.runs("digest")[0]
    assert (run["status"], run["trigger"], run["claimed_by"]) == ("queued", "schedule", sim.runner.claimed_by)
    assert run["lease_until"] == stamp(at + timedelta(seconds=1800 + claims.LEASE_GRACE_SECONDS))
    # The same instant again: nothing more to claim.
    assert sim.tick(at).claimed == []
    sim.finish(report, at)
    assert jobs.job("digest")["state"] == "scheduled"
    assert sim.tick(at).claimed == []


def test_the_slot_index_refuses_a_second_claim_of_one_slot(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Digest", "every 1 minutes")
    report = sim.tick(utc("2026-03-02T08:00:40Z"))
    # Pretend another process never saw the advance: put next_run_at back and claim again.
    with jobs.db() as c:
        c.execute(
            "UPDATE scheduled_jobs SET state = 'scheduled', next_run_at = ?",
            (report.claimed[0].scheduled_for,),
        )
    assert sim.tick(utc("2026-03-02T08:00:41Z")).claimed == []
    assert len([r for r in jobs.runs("digest") if r["status"] != "skipped"]) == 1


def test_at_most_max_concurrent_scheduled_runs_and_the_rest_wait(jobs: Jobs, sim: Sim) -> None:
    for i in range(6):
        jobs.add(f"j{i}", "every 1 minutes")
    at = utc("2026-03-02T08:00:40Z")
    first = sim.tick(at)
    assert len(first.claimed) == 4 and len(first.waiting) == 2
    waiting = set(first.waiting)
    assert all(
        jobs.job(j)["state"] == "scheduled" and jobs.job(j)["next_run_at"] <= stamp(at) for j in waiting
    )
    assert sim.tick(at).claimed == []  # still four in flight
    sim.finish(claims.TickReport(claimed=first.claimed[:1]), at)
    second = sim.tick(at)
    assert len(second.claimed) == 1 and second.claimed[0].job_id in waiting
    # Manual runs are not counted against the cap.
    with jobs.db() as c:
        c.execute("UPDATE job_runs SET trigger = 'manual' WHERE status = 'queued'")
    assert len(sim.tick(at).claimed) == 1


def test_the_cap_comes_from_config(jobs: Jobs, sim: Sim) -> None:
    for i in range(3):
        jobs.add(f"j{i}", "every 1 minutes")
    assert len(sim.tick(utc("2026-03-02T08:00:40Z"), cap=2).claimed) == 2


def test_paused_jobs_are_not_claimed(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Digest", "every 1 minutes")
    jobs.call("pause_job", {"job_id": "digest"})
    assert sim.tick(utc("2026-03-02T09:00:00Z")).claimed == []


# ----- lateness ------------------------------------------------------------------------------------


def test_freshness_window(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Hourly", "0 * * * *")  # due 08:00Z
    report = sim.tick(utc("2026-03-02T08:59:59Z"))
    assert [c.scheduled_for for c in report.claimed] == ["2026-03-02T08:00:00.000000Z"]
    sim.finish(report, utc("2026-03-02T08:59:59Z"))
    # 09:00 is due; found 3601 s late it is skipped, recorded with its reason; 10:00, 1 s late, is
    # inside the window and runs (once): an outage never drops the current slot too.
    report = sim.tick(utc("2026-03-02T10:00:01Z"))
    assert [c.scheduled_for for c in report.claimed] == ["2026-03-02T10:00:00.000000Z"]
    skipped = [r for r in jobs.runs("hourly") if r["status"] == "skipped"]
    assert [r["scheduled_for"] for r in skipped] == ["2026-03-02T09:00:00.000000Z"]
    reason = skipped[0]["reason"]
    assert reason.startswith(
        "stale: due 2026-03-02T09:00:00.000000Z, found 3601 s late, over the 3600 s freshness window; "
        "the run of 2026-03-02T10:00:00.000000Z, still inside it, ran instead"
    )
    assert jobs.job("hourly")["next_run_at"] == "2026-03-02T11:00:00.000000Z"
    sim.finish(report, utc("2026-03-02T10:00:02Z"))
    # Every slot stale (here with a 60 s window, 12:00 is 30 min late too): skipped, none runs.
    report = sim.tick(utc("2026-03-02T12:30:00Z"), window=60)
    assert report.claimed == []
    reason = [r for r in jobs.runs("hourly") if r["status"] == "skipped"][-1]["reason"]
    assert "1 later slot from 2026-03-02T12:00:00.000000Z also passed" in reason
    assert jobs.job("hourly")["next_run_at"] == "2026-03-02T13:00:00.000000Z"
    assert jobs.job("hourly")["last_status"] == "skipped"


@pytest.mark.parametrize(("schedule", "now", "slot"), [
    ("0 * * * *", "2026-03-02T11:00:20Z", "2026-03-02T11:00:00.000000Z"),
    ("every 5 minutes", "2026-03-02T10:55:20Z", "2026-03-02T10:55:00.000000Z"),
])  # fmt: skip
def test_after_a_long_outage_the_current_slot_still_runs_once(
    jobs: Jobs, sim: Sim, schedule: str, now: str, slot: str
) -> None:
    jobs.add("Job", schedule, at=utc("2026-03-02T08:00:00Z"))
    report = sim.tick(utc(now))
    assert [c.scheduled_for for c in report.claimed] == [slot]
    assert len(report.skipped) == 1


def test_the_window_is_configurable_per_tick(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Hourly", "0 * * * *")
    assert sim.tick(utc("2026-03-02T08:02:00Z"), window=60).claimed == []


def test_one_offs_run_late_once(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Once", "2026-03-02T08:00:00Z")
    report = sim.tick(utc("2026-03-05T12:00:00Z"))  # three days late
    assert [c.scheduled_for for c in report.claimed] == ["2026-03-02T08:00:00.000000Z"]
    assert jobs.job("once")["next_run_at"] is None
    sim.finish(report, utc("2026-03-05T12:00:00Z"))
    assert jobs.job("once")["state"] == "completed"
    assert sim.tick(utc("2026-03-06T12:00:00Z")).claimed == []


def test_missed_slots_within_the_window_fire_once_and_are_recorded(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Quarter", "every 15 minutes")  # slots 08:14:30, 08:29:30, 08:44:30, ...
    report = sim.tick(utc("2026-03-02T08:50:00Z"))  # 35.5 min late: within the hour
    assert [c.scheduled_for for c in report.claimed] == ["2026-03-02T08:14:30.000000Z"]
    skipped = [r for r in jobs.runs("quarter") if r["status"] == "skipped"]
    assert [r["scheduled_for"] for r in skipped] == ["2026-03-02T08:29:30.000000Z"]
    assert skipped[0]["reason"].startswith(
        "missed: 2 later slots from 2026-03-02T08:29:30.000000Z also passed"
    )
    assert jobs.job("quarter")["next_run_at"] == "2026-03-02T08:59:30.000000Z"


def test_missed_slot_counting_is_capped(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Minutely", "* * * * *")
    report = sim.tick(utc("2026-03-03T08:00:00Z"))  # a day late: stale, but 08:00 itself is fresh
    assert [c.scheduled_for for c in report.claimed] == ["2026-03-03T08:00:00.000000Z"]
    reason = next(r for r in jobs.runs("minutely") if r["status"] == "skipped")["reason"]
    assert f"{claims.MISSED_COUNT_CAP} or more later slots" in reason
    assert jobs.job("minutely")["next_run_at"] == "2026-03-03T08:01:00.000000Z"


# ----- expiry and disabling ------------------------------------------------------------------------


def test_expiry(jobs: Jobs, sim: Sim) -> None:
    jobs.add(
        "Short", "every 1 hours", expires_at="2026-03-02T10:30:00Z"
    )  # slots 08:59:30, 09:59:30, 10:59:30
    jobs.add("Idle", "every 1 hours", expires_at="2026-03-02T10:30:00Z")
    jobs.call("pause_job", {"job_id": "idle"})  # paused jobs expire too, with no slot to record
    report = sim.tick(utc("2026-03-02T10:40:00Z"))
    assert sorted(report.expired) == ["idle", "short"]
    assert jobs.job("short")["state"] == "expired" and jobs.job("short")["next_run_at"] is None
    # short's 08:59:30 slot fell due before expiry and never ran: recorded.
    assert [(r["scheduled_for"], r["reason"][:8]) for r in jobs.runs("short")] == [
        ("2026-03-02T08:59:30.000000Z", "expired:")
    ]
    assert jobs.runs("idle") == []


def test_a_run_in_flight_finishes_then_the_job_expires(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Short", "every 1 hours", expires_at="2026-03-02T09:30:00Z")
    report = sim.tick(utc("2026-03-02T09:00:00Z"))
    assert len(report.claimed) == 1
    assert sim.tick(utc("2026-03-02T09:40:00Z")).expired == []  # running: not swept
    sim.finish(report, utc("2026-03-02T09:45:00Z"))
    assert jobs.job("short")["state"] == "expired"


def test_a_schedule_that_no_longer_parses_disables_the_job(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Digest", "0 8 * * *", timezone="Europe/Berlin")
    with jobs.db() as c:
        c.execute(
            "UPDATE scheduled_jobs SET timezone = 'Atlantis/Lost', next_run_at = '2026-03-02T07:00:00.000000Z'"
        )
    report = sim.tick(utc("2026-03-02T07:00:10Z"))
    assert report.disabled == ["digest"] and report.claimed == []
    row = jobs.job("digest")
    assert row["state"] == "disabled" and row["next_run_at"] is None
    assert row["last_error"].startswith("invalid_timezone: `Atlantis/Lost` is not an IANA timezone name")
    assert jobs.runs("digest")[0]["reason"].startswith("disabled: invalid_timezone")
    assert sim.tick(utc("2026-03-03T07:00:10Z")).disabled == []  # never retried


# ----- reconciliation ------------------------------------------------------------------------------


def _claim_as(jobs: Jobs, sim: Sim, claimant: Runner, at: datetime) -> str:
    jobs.add("Digest", "every 1 minutes")
    report = sim.tick(at, runner=claimant)
    return report.claimed[0].run_id


def test_a_dead_claimants_run_becomes_interrupted_and_is_never_rerun(jobs: Jobs, sim: Sim) -> None:
    other = Runner.start(sim.ctx.paths)
    at = utc("2026-03-02T08:00:40Z")
    run_id = _claim_as(jobs, sim, other, at)
    with jobs.db() as c:
        c.execute("UPDATE job_runs SET status = 'running' WHERE id = ?", (run_id,))
    assert sim.tick(at).reconciled == []  # alive: its lock is held
    other.release()  # the claimant dies
    report = sim.tick(at)
    assert report.reconciled == [
        {"run_id": run_id, "job_id": "digest", "status": "error", "error_code": "interrupted"}
    ]
    run = next(r for r in jobs.runs("digest") if r["id"] == run_id)
    assert run["status"] == "error" and "ended before the run finished or saved a result" in run["error"]
    assert "a run is never re-run (at most once)" in run["error"]
    job = jobs.job("digest")
    assert job["state"] == "scheduled" and job["last_error"].startswith("interrupted:")
    assert job["next_run_at"] == "2026-03-02T08:01:30.000000Z"  # the interrupted slot is not due again
    assert report.claimed == [] and sim.tick(at).reconciled == []


def test_a_dead_claimants_saved_result_is_recorded_not_interrupted(jobs: Jobs, sim: Sim) -> None:
    from fermix_cli.jobs.runresult import save_result

    other = Runner.start(sim.ctx.paths)
    at = utc("2026-03-02T08:00:40Z")
    run_id = _claim_as(jobs, sim, other, at)
    with jobs.db() as c:
        c.execute("UPDATE job_runs SET status = 'running' WHERE id = ?", (run_id,))
    save_result(sim.ctx.paths, "digest", run_id, RunOutcome("ok", final_response="done\n", kind="command"))
    other.release()
    report = sim.tick(at)
    assert report.reconciled == [
        {"run_id": run_id, "job_id": "digest", "status": "ok", "error_code": None, "recovered": True}
    ]
    run = next(r for r in jobs.runs("digest") if r["id"] == run_id)
    assert (run["status"], run["final_response"], run["delivery_status"]) == ("ok", "done\n", "undelivered")
    job = jobs.job("digest")
    assert job["state"] == "scheduled" and job["last_status"] == "ok" and job["last_error"] is None


def test_a_saved_result_of_another_run_is_not_taken(jobs: Jobs, sim: Sim) -> None:
    from fermix_cli.jobs.runresult import result_path

    other = Runner.start(sim.ctx.paths)
    at = utc("2026-03-02T08:00:40Z")
    run_id = _claim_as(jobs, sim, other, at)
    path = result_path(sim.ctx.paths, "digest", run_id)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"run_id": "run_other", "outcome": {"status": "ok"}}))
    other.release()
    [entry] = sim.tick(at).reconciled
    assert entry["error_code"] == "interrupted"


def test_queued_runs_of_a_dead_claimant_are_interrupted_too(jobs: Jobs, sim: Sim) -> None:
    other = Runner.start(sim.ctx.paths)
    run_id = _claim_as(jobs, sim, other, utc("2026-03-02T08:00:40Z"))
    os.close(other.fd)  # dies without cleaning up: the lock file stays, unlocked
    other.fd = None
    assert liveness(sim.ctx.paths, other.claimed_by) == "dead"
    assert sim.tick(utc("2026-03-02T08:00:41Z")).reconciled[0]["run_id"] == run_id


def test_a_remote_claimant_is_given_up_only_after_its_lease(jobs: Jobs, sim: Sim) -> None:
    at = utc("2026-03-02T08:00:40Z")
    run_id = _claim_as(jobs, sim, sim.runner, at)
    with jobs.db() as c:
        c.execute(
            "UPDATE job_runs SET claimed_by = 'elsewhere:4242:abc', status = 'running' WHERE id = ?",
            (run_id,),
        )
    lease = jobs.runs("digest")[0]["lease_until"]
    assert sim.tick(later(at, seconds=1800)).reconciled == []
    report = sim.tick(later(at, seconds=1800 + claims.LEASE_GRACE_SECONDS + 1))
    assert report.reconciled[0]["error_code"] == "runner_lost"
    run = next(r for r in jobs.runs("digest") if r["id"] == run_id)
    assert f"before the lease ended at {lease}" in run["error"]


def test_a_live_claimant_on_this_host_is_never_given_up_however_late(jobs: Jobs, sim: Sim) -> None:
    # A suspend/resume or a clock step passes the lease of a run that is still at work on this host.
    other = Runner.start(sim.ctx.paths)
    at = utc("2026-03-02T08:00:40Z")
    run_id = _claim_as(jobs, sim, other, at)
    with jobs.db() as c:
        c.execute("UPDATE job_runs SET status = 'running' WHERE id = ?", (run_id,))
    report = sim.tick(later(at, days=2))
    assert report.reconciled == [] and report.claimed == []  # not lost, and its job not claimed again
    assert [r["status"] for r in jobs.runs("digest")] == ["running"]
    assert jobs.job("digest")["state"] == "running"
    other.release()
    assert sim.tick(later(at, days=2)).reconciled[0]["error_code"] == "interrupted"


def test_a_schedule_edited_to_a_one_off_during_a_run_is_kept(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Digest", "every 1 minutes")
    jobs.add("Once", "2026-03-02T08:00:00Z")
    at = utc("2026-03-02T08:00:40Z")
    report = sim.tick(at)
    assert {r.job_id for r in report.claimed} == {"digest", "once"}
    for job_id in ("digest", "once"):
        jobs.call("update_job", {"job_id": job_id, "schedule": "2026-03-05T09:00:00Z"}, at=at)
    jobs.add("Plain", "2026-03-02T08:01:00Z")
    sim.finish(report, at)
    for job_id in ("digest", "once"):  # the run was of the old schedule: the new one-off is still to come
        job = jobs.job(job_id)
        assert (job["state"], job["next_run_at"]) == ("scheduled", "2026-03-05T09:00:00.000000Z")
        assert job["last_status"] == "ok"
    plain = sim.tick(later(at, minutes=1))
    sim.finish(plain, later(at, minutes=1))
    assert (jobs.job("plain")["state"], jobs.job("plain")["next_run_at"]) == ("completed", None)
    assert [r.job_id for r in sim.tick(utc("2026-03-05T09:00:10Z")).claimed] == ["digest", "once"]


def test_a_one_off_paused_during_its_run_is_completed_by_it(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Once", "2026-03-02T08:00:00Z")
    at = utc("2026-03-02T08:00:40Z")
    report = sim.tick(at)
    jobs.call("pause_job", {"job_id": "once"}, at=at)
    sim.finish(report, at)
    job = jobs.job("once")
    assert (job["state"], job["next_run_at"], job["last_status"]) == ("completed", None, "ok")


def test_a_passed_one_off_resumes_after_a_new_time(jobs: Jobs) -> None:
    jobs.add("Once", "2026-03-02T08:00:00Z")
    jobs.call("pause_job", {"job_id": "once"})
    err = jobs.error("resume_job", {"job_id": "once"}, at=utc("2026-03-02T09:00:00Z"))
    assert err.code == "job_state" and "update_job (it stays paused), then resume it" in err.message
    assert "run_job_now" not in err.message  # which refuses paused jobs
    at = utc("2026-03-02T09:00:00Z")
    jobs.call("update_job", {"job_id": "once", "schedule": "2026-03-03T08:00:00Z"}, at=at)
    job = jobs.call("resume_job", {"job_id": "once"}, at=at)["job"]
    assert (job["state"], job["next_run_at"]) == ("scheduled", "2026-03-03T08:00:00.000000Z")


def test_a_paused_job_stays_paused_when_its_run_ends(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Digest", "every 1 minutes")
    at = utc("2026-03-02T08:00:40Z")
    report = sim.tick(at)
    jobs.call("pause_job", {"job_id": "digest"}, at=at)
    sim.finish(report, at)
    assert jobs.job("digest")["state"] == "paused"
    assert jobs.job("digest")["last_status"] == "ok" and jobs.job("digest")["run_count"] == 1


def test_a_finished_run_cannot_be_overwritten_by_its_late_claimant(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Digest", "every 1 minutes")
    at = utc("2026-03-02T08:00:40Z")
    report = sim.tick(at)
    run = report.claimed[0]
    with jobs.db() as c:
        c.execute(
            "UPDATE job_runs SET status = 'error', error_code = 'interrupted' WHERE id = ?", (run.run_id,)
        )
    assert not records.finish_run(
        sim.ctx.state.write, run.run_id, sim.runner.claimed_by, "digest", RunOutcome("ok"), at, 1.0, None
    )
    assert jobs.runs("digest")[0]["error_code"] == "interrupted"


def test_liveness_of_other_hosts_is_remote(jobs: Jobs, sim: Sim) -> None:
    assert liveness(sim.ctx.paths, f"not-{socket.gethostname()}:1:x") == "remote"
    assert liveness(sim.ctx.paths, f"{socket.gethostname()}:1:../../etc") == "dead"


# ----- DST and leap years, as ticks see them --------------------------------------------------------


def test_berlin_spring_forward_skips_the_missing_hour(jobs: Jobs, sim: Sim) -> None:
    # 2026-03-29: Berlin jumps from 02:00 to 03:00; 02:30 does not exist that day.
    jobs.add("Night", "30 2 * * *", timezone="Europe/Berlin", at=utc("2026-03-27T12:00:00Z"))
    fired = sim.sweep(utc("2026-03-27T23:00:00Z"), utc("2026-03-31T03:00:00Z"), timedelta(minutes=10))
    assert fired == [
        "2026-03-28T01:30:00.000000Z",  # 02:30 CET
        "2026-03-30T00:30:00.000000Z",  # 02:30 CEST; none on the 29th
        "2026-03-31T00:30:00.000000Z",
    ]


def test_berlin_fall_back_fires_a_repeated_time_once(jobs: Jobs, sim: Sim) -> None:
    # 2026-10-25: Berlin goes from 03:00 back to 02:00; 02:30 happens twice, the job fires at the first.
    jobs.add("Night", "30 2 * * *", timezone="Europe/Berlin", at=utc("2026-10-23T12:00:00Z"))
    fired = sim.sweep(utc("2026-10-24T00:00:00Z"), utc("2026-10-26T03:00:00Z"), timedelta(minutes=10))
    assert fired == [
        "2026-10-24T00:30:00.000000Z",
        "2026-10-25T00:30:00.000000Z",
        "2026-10-26T01:30:00.000000Z",
    ]


def test_new_york_monday_nine_oclock_follows_the_wall_clock(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Standup", "0 9 * * 1", timezone="America/New_York", at=utc("2026-03-01T00:00:00Z"))
    fired = sim.sweep(utc("2026-03-02T13:00:00Z"), utc("2026-03-16T15:00:00Z"), timedelta(minutes=30))
    assert fired == [
        "2026-03-02T14:00:00.000000Z",
        "2026-03-09T13:00:00.000000Z",
        "2026-03-16T13:00:00.000000Z",
    ]


def test_new_york_fall_back_and_a_daily_interval_across_dst(jobs: Jobs, sim: Sim) -> None:
    start = utc("2026-10-31T12:00:00Z")
    jobs.add("Late", "30 1 * * *", timezone="America/New_York", at=start)
    jobs.add("Daily", "every 1 days", at=start)
    sim.sweep(utc("2026-11-01T00:00:00Z"), utc("2026-11-02T13:00:00Z"), timedelta(minutes=10))
    late = [slot for job, slot in sim.fired if job == "late"]
    daily = [slot for job, slot in sim.fired if job == "daily"]
    assert late == ["2026-11-01T05:30:00.000000Z", "2026-11-02T06:30:00.000000Z"]  # 01:30 EDT once, then EST
    assert daily == ["2026-11-01T12:00:00.000000Z", "2026-11-02T12:00:00.000000Z"]  # exact 24 h


def test_leap_day_job_fires_on_leap_days_only(jobs: Jobs, sim: Sim) -> None:
    jobs.add("Leap", "0 12 29 2 *", at=utc("2027-06-01T00:00:00Z"))
    report = sim.step(utc("2028-02-29T12:00:30Z"))
    assert [c.scheduled_for for c in report.claimed] == ["2028-02-29T12:00:00.000000Z"]
    assert jobs.job("leap")["next_run_at"] == "2032-02-29T12:00:00.000000Z"
    assert sim.tick(utc("2029-03-01T12:00:00Z")).claimed == []


def test_nothing_to_do_is_cheap_and_right(jobs: Jobs, sim: Sim) -> None:
    conn = sim.ctx.state.conn
    assert nothing_to_do(conn, NOW)
    jobs.add("Digest", "every 1 minutes", expires_at="2026-03-03T00:00:00Z")
    assert nothing_to_do(conn, NOW)
    assert not nothing_to_do(conn, later(NOW, minutes=2))  # due
    assert not nothing_to_do(conn, utc("2026-03-03T00:00:01Z"))  # due and expiring
    jobs.call("pause_job", {"job_id": "digest"})
    assert nothing_to_do(conn, later(NOW, minutes=2))
    assert not nothing_to_do(conn, utc("2026-03-03T00:00:01Z"))  # paused jobs expire too


def test_lock_files_of_runners_that_died_are_swept_when_old(jobs: Jobs, sim: Sim) -> None:
    from fermix_cli.jobs.liveness import runners_dir, sweep_dead

    paths = sim.ctx.paths
    crashed, fresh_crash = Runner.start(paths), Runner.start(paths)
    for r in (crashed, fresh_crash):  # die without cleaning up
        os.close(r.fd)
        r.fd = None
    old = 1_000_000_000
    for r in (crashed, sim.runner):
        os.utime(runners_dir(paths) / f"{r.token}.lock", (old, old))
    assert sweep_dead(paths) == 1
    left = sorted(p.name for p in runners_dir(paths).iterdir())
    assert left == sorted([f"{sim.runner.token}.lock", f"{fresh_crash.token}.lock"])  # alive, or too recent
