"""The delivery engine end to end: a fake clock, `fermix jobs run` at the right instants, exactly once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from fermix_cli.channels import Sent
from fermix_cli.events.delivery import deliver_due
from tests.channels.standins import TelegramStandIn
from tests.conftest import REPO
from tests.events.fake_channels import FlakyChannel
from tests.events.world import Events, utc
from tests.tools.webfakes import Hit, Reply


def test_store_then_tick_at_the_right_instants_delivers_once(ev: Events) -> None:
    out = ev.store(
        "Dentist", "appointment", when={"type": "datetime", "date": "2026-09-10", "time": "09:30:00"}
    )
    assert [r["scheduled_for"] for r in out["planned_reminders"]] == [
        "2026-09-09T07:30:00.000000Z",
        "2026-09-10T06:30:00.000000Z",
    ]
    assert ev.tick(utc("2026-09-09T07:29:00Z"))["status"] == "idle"
    sent = ev.tick(utc("2026-09-09T07:30:10Z"))
    assert [s["reminder_id"] for s in sent["sent"]] == [out["planned_reminders"][0]["reminder_id"]]
    assert ev.tick(utc("2026-09-09T07:31:10Z"))["status"] == "idle"
    (msg,) = ev.inbox()
    assert msg["text"] == (
        "Reminder: Dentist (appointment) on Thursday 10 September 2026 at 09:30 Europe/Berlin time, in 1 day."
    )
    # "cancel that" from the owner's terminal, where the inbox is read, within 24 hours
    r = ev.cli("tool", "event_remove", "--json", "{}", at=utc("2026-09-09T08:00:00Z"))
    assert r.code == 0, r.stderr
    assert r.json()["resolved_from_reminder"] == out["planned_reminders"][0]["reminder_id"]
    assert ev.tick(utc("2026-09-10T06:30:10Z"))["status"] == "idle"
    assert len(ev.inbox()) == 1
    listed = ev.call("event_list", {"status": "cancelled"})
    assert [r["status"] for r in listed["events"][0]["reminders"]] == ["delivered"]  # history kept


def test_cancel_that_looks_back_24_hours_in_this_conversation_only(ev: Events) -> None:
    ev.store("Dentist", "appointment", when={"type": "datetime", "date": "2026-09-10", "time": "09:30:00"})
    ev.tick(utc("2026-09-09T07:30:10Z"))
    late = utc("2026-09-10T07:31:00Z")
    assert ev.error("event_remove", {}, at=late).code == "no_recent_reminder"
    e = ev.error("event_remove", {}, at=utc("2026-09-09T08:00:00Z"), origin="interactive")
    assert e.code == "no_conversation_target"
    chat = {"origin": "interactive", "extras": {"conversation_id": "telegram:42"}}
    assert ev.error("event_remove", {}, at=utc("2026-09-09T08:00:00Z"), **chat).code == "no_recent_reminder"
    snoozed = ev.call(
        "reminder_snooze",
        {"snooze": {"type": "duration", "amount": 30, "unit": "minutes"}},
        at=utc("2026-09-09T08:00:00Z"),
    )
    assert snoozed["reminder"]["scheduled_for"] == "2026-09-09T08:30:00.000000Z"
    assert (
        ev.tick(utc("2026-09-09T08:30:05Z"))["sent"][0]["reminder_id"] == snoozed["reminder"]["reminder_id"]
    )
    assert "snoozed reminder" in ev.inbox()[-1]["text"]


def test_dst_new_york_fall_back_and_berlin_spring_gap(ev: Events) -> None:
    ev.store(
        "Second 1:30",
        "explicit_reminder",
        timezone="America/New_York",
        when={"type": "datetime", "date": "2026-11-01", "time": "01:30:00", "utc_offset": "-05:00"},
    )
    ev.store(
        "Gap",
        "event",
        when={"type": "date", "date": "2027-03-29"},
        reminders=[{"type": "days_before", "days": 1, "at": "02:30:00"}],
    )
    assert ev.tick(utc("2026-11-01T05:30:30Z"))["status"] == "idle"  # the first 01:30 (EDT) is not it
    assert len(ev.tick(utc("2026-11-01T06:30:30Z"))["sent"]) == 1  # the second 01:30 (EST)
    assert ev.tick(utc("2027-03-28T01:29:00Z")).get("sent", []) == []  # (the November event completes)
    assert len(ev.tick(utc("2027-03-28T01:30:30Z"))["sent"]) == 1  # 02:30 does not exist: 03:30 CEST
    texts = [m["text"] for m in ev.inbox()]
    assert (
        texts[0]
        == "Reminder: Second 1:30 (explicit reminder) on Sunday 1 November 2026 at 01:30 America/New_York time, now."
    )
    assert texts[1] == "Reminder: Gap (event) on Monday 29 March 2027, tomorrow."


def test_a_yearly_29_february_rolls_by_its_policy(ev: Events) -> None:
    june_2027 = utc("2027-06-01T08:00:00Z")
    for title, policy in (("Leap A", "mar_1"), ("Leap B", "feb_28")):
        ev.store(
            title,
            "birthday",
            when={"type": "annual", "month": 2, "day": 29},
            leap_day_policy=policy,
            reminders=[{"type": "days_before", "days": 0}],
            at=june_2027,
        )
    rows = ev.sql(
        "SELECT e.title, r.occurrence_key FROM reminder_occurrences r JOIN temporal_events e"
        " ON e.id = r.event_id ORDER BY e.title, r.occurrence_key"
    )
    assert [tuple(r) for r in rows] == [
        ("Leap A", "2028-02-29"),
        ("Leap A", "2029-03-01"),
        ("Leap B", "2028-02-29"),
        ("Leap B", "2029-02-28"),
    ]
    assert len(ev.tick(utc("2028-02-29T08:00:30Z"))["sent"]) == 2  # 09:00 in Berlin, both on the real day
    rolled = ev.tick(utc("2028-03-02T12:00:00Z"))
    assert len(rolled["rolled"]) == 2
    dates = {r["title"]: r["next_date"] for r in ev.sql("SELECT title, next_date FROM temporal_events")}
    assert dates == {"Leap A": "2029-03-01", "Leap B": "2029-02-28"}
    later = ev.sql("SELECT occurrence_key FROM reminder_occurrences WHERE status = 'pending' ORDER BY 1")
    assert [r[0] for r in later] == ["2029-02-28", "2029-03-01", "2030-02-28", "2030-03-01"]


def _engine(ev: Events, channel: FlakyChannel, at: datetime) -> dict[str, Any]:
    ctx = ev.world.context(clock=lambda: at)
    try:
        return deliver_due(ctx, channel)[1].as_dict()
    finally:
        ctx.close()


def test_retries_honour_retry_after_then_deliver_once(ev: Events) -> None:
    out = ev.store(
        "Call", "explicit_reminder", when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"}
    )
    due = utc(out["planned_reminders"][0]["scheduled_for"])
    channel = FlakyChannel(failures=2, retry_after=150)
    first = _engine(ev, channel, due)
    assert (
        first["retrying"][0]["next_attempt_at"] == "2026-09-02T10:02:30.000000Z"
    )  # retry_after beats +1 min
    assert _engine(ev, channel, due + timedelta(minutes=2))["sent"] == []  # not before the hint
    second = _engine(ev, channel, due + timedelta(minutes=2, seconds=30))
    assert second["retrying"][0]["next_attempt_at"] == "2026-09-02T10:05:00.000000Z"  # due + 5 min
    third = _engine(ev, channel, due + timedelta(minutes=5))
    assert len(third["sent"]) == 1 and len(channel.sent) == 1
    (row,) = ev.sql("SELECT status, attempt_count, sent_at FROM reminder_occurrences")
    assert tuple(row) == ("delivered", 3, "2026-09-02T10:05:00.000000Z")


def test_five_failures_or_a_permanent_one_are_visible(ev: Events) -> None:
    out = ev.store(
        "Call", "explicit_reminder", when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"}
    )
    due = utc(out["planned_reminders"][0]["scheduled_for"])
    channel = FlakyChannel(failures=99)
    for minutes in (0, 1, 5, 15, 60):
        report = _engine(ev, channel, due + timedelta(minutes=minutes, seconds=1))
    assert channel.calls == 5 and report["failed"][0]["attempts"] == 5
    listed = ev.call("event_list", {}, at=due)
    assert listed["failed_reminders"][0]["last_error_code"] == "rate_limited"
    r = ev.cli("events", "list", at=due)
    assert r.code == 0 and "FAILED" in r.stdout, r.stdout + r.stderr
    status = ev.cli("jobs", "status", at=due)
    assert status.code == 0 and "reminders   1 failed" in status.stdout, status.stdout + status.stderr
    assert "FAILED " in status.stdout and "rate_limited 429 Too Many Requests" in status.stdout
    doctor = ev.cli("doctor", at=due)
    assert "[WARN] reminders          1 reminder(s) failed to deliver; latest 'Call'" in doctor.stdout, (
        doctor.stdout
    )
    other = ev.store(
        "Other", "explicit_reminder", when={"type": "datetime", "date": "2026-09-03", "time": "12:00:00"}
    )
    permanent = FlakyChannel(failures=1, permanent=True)
    report = _engine(ev, permanent, utc(other["planned_reminders"][0]["scheduled_for"]))
    assert report["failed"][0]["attempts"] == 1 and permanent.calls == 1


def test_five_overlapping_ticks_deliver_every_reminder_exactly_once(ev: Events) -> None:
    for i in range(40):
        ev.store(
            f"Task {i}",
            "explicit_reminder",
            when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"},
        )
    env = ev.env(utc("2026-09-02T10:00:05Z"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
            env=env,
            cwd=ev.world.project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(5)
    ]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    ids = Counter(m["reminder_id"] for m in ev.inbox())
    assert len(ids) == 40 and set(ids.values()) == {1}
    assert {r[0] for r in ev.sql("SELECT status FROM reminder_occurrences")} == {"delivered"}


def test_sigkill_mid_send_is_never_sent_twice_and_shows_as_failed(ev: Events) -> None:
    out = ev.store(
        "Call", "explicit_reminder", when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"}
    )
    at = "2026-09-02T10:00:05+00:00"
    marker = ev.world.root / "sending"
    env = {**ev.world.env, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.events.fake_channels", str(ev.world.fermix_home), at, str(marker)],
        env=env,
        cwd=REPO,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert ev.sql("SELECT status FROM reminder_occurrences")[0][0] == "delivering"
    report = ev.tick(utc("2026-09-02T10:01:00Z"))
    assert report["failed"] == [
        {"reminder_id": out["planned_reminders"][0]["reminder_id"], "code": "runner_lost"}
    ]
    assert ev.tick(utc("2026-09-02T10:05:00Z"))["status"] == "idle"
    assert ev.inbox() == []
    listed = ev.call("event_list", {}, at=utc("2026-09-02T10:05:00Z"))
    assert listed["failed_reminders"][0]["last_error_code"] == "runner_lost"


def test_a_followup_check_in_runs_after_delivery_on_the_same_channel(ev: Events) -> None:
    script = ev.world.root / "followup.json"
    script.write_text('[{"text": "Shall I look for a gift idea?"}]')
    ev.config(
        text=(ev.world.fermix_home / "config.toml").read_text()
        + f'[fermix_core.routing]\ncron_provider = "mock"\ncron_model = "{script}"\n'
    )
    out = ev.store(
        "Sarah's birthday", "birthday", when={"type": "annual", "month": 9, "day": 14}, followup=True
    )
    plain = ev.store("Bob's birthday", "birthday", when={"type": "annual", "month": 9, "day": 15})
    assert "follow-up check-in" in out["message"] and "follow-up" not in plain["message"]
    report = ev.tick(utc("2026-09-07T07:00:30Z"))
    assert [f["status"] for f in report["followups"]] == ["sent"]
    texts = [(m["kind"], m["text"]) for m in ev.inbox() if m["event_id"] == out["event"]["event_id"]]
    assert texts == [
        ("reminder", "Reminder: Sarah's birthday (birthday) on Monday 14 September 2026, in 7 days."),
        ("reminder_followup", "Shall I look for a gift idea?"),
    ]
    assert [m["kind"] for m in ev.inbox() if m["event_id"] == plain["event"]["event_id"]] == []  # due 09-08
    script.write_text('[{"text": "[SILENT]"}]')
    report = ev.tick(utc("2026-09-14T07:00:30Z"))
    assert [f["status"] for f in report["followups"]] == ["silent"]
    assert [m["kind"] for m in ev.inbox()].count("reminder_followup") == 1


def test_a_followup_past_its_iteration_cap_names_its_fixed_cap(ev: Events) -> None:
    """The follow-up's cap is fixed (MAX_ITERATIONS calls): its error says so, never `--max-iterations`,
    an option nobody gave."""
    from fermix_cli.events.followup import MAX_ITERATIONS

    script = ev.world.root / "followup.json"
    call = {"tool_calls": [{"name": "event_list", "arguments": {}}]}
    script.write_text(json.dumps([call] * (MAX_ITERATIONS + 1)))
    ev.config(
        text=(ev.world.fermix_home / "config.toml").read_text()
        + f'[fermix_core.routing]\ncron_provider = "mock"\ncron_model = "{script}"\n'
    )
    ev.store("Sarah's birthday", "birthday", when={"type": "annual", "month": 9, "day": 14}, followup=True)
    report = ev.tick(utc("2026-09-07T07:00:30Z"))
    [followup] = report["followups"]
    assert followup["status"].startswith("error: max_iterations"), followup
    assert f"the follow-up check-in's fixed cap of {MAX_ITERATIONS} model calls" in followup["status"]
    assert "--max-iterations" not in followup["status"]


def test_a_followup_check_in_carries_the_cron_routes_reasoning_effort(ev: Events) -> None:
    from tests.agent.model_server import ModelServer, text

    server = ModelServer()
    try:
        ev.config(
            text=(ev.world.fermix_home / "config.toml").read_text()
            + f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{server.base}/v1"\n'
            + '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
            + '[fermix_core.routing]\ncron_provider = "local"\ncron_model = "test-model"\n'
            + 'cron_reasoning_effort = "low"\n'
        )
        server.queue(text("Shall I book a table?"))
        ev.store("Anniversary", "birthday", when={"type": "annual", "month": 9, "day": 14}, followup=True)
        report = ev.tick(utc("2026-09-07T07:00:30Z"))
    finally:
        server.close()
    assert [f["status"] for f in report["followups"]] == ["sent"]
    [seen] = server.seen
    assert (seen.body["model"], seen.body["reasoning_effort"]) == ("test-model", "low")


def test_a_failing_reminder_is_superseded_by_the_next_and_late_ones_expire(ev: Events) -> None:
    out = ev.store("Exam", "deadline", when={"type": "datetime", "date": "2026-09-10", "time": "12:00:00"},
                   reminders=[{"type": "duration_before", "minutes": 120}, {"type": "duration_before", "minutes": 60}])  # fmt: skip
    early, late = (r["reminder_id"] for r in out["planned_reminders"])
    channel = FlakyChannel(failures=1, retry_after=3 * 3600)  # the platform asks for three hours
    first = _engine(ev, channel, utc("2026-09-10T08:00:10Z"))
    assert first["retrying"][0]["next_attempt_at"] == "2026-09-10T09:59:59.000000Z"  # clamped to the event
    assert _engine(ev, channel, utc("2026-09-10T09:00:10Z"))["sent"][0]["reminder_id"] == late
    status = {r["id"]: r["status"] for r in ev.sql("SELECT id, status FROM reminder_occurrences")}
    assert status == {early: "superseded", late: "delivered"}
    # the machine was off for a day: a reminder is not sent a day late
    other = ev.store(
        "Party",
        "event",
        when={"type": "date", "date": "2026-09-20"},
        reminders=[{"type": "days_before", "days": 0}],
    )
    assert _engine(ev, channel, utc("2026-09-21T09:00:00Z"))["expired"] == [
        other["planned_reminders"][0]["reminder_id"]
    ]
    assert len(channel.sent) == 1


def test_an_idle_tick_imports_no_engine_and_no_config(ev: Events) -> None:
    ev.store("Dentist", "appointment", when={"type": "datetime", "date": "2026-09-10", "time": "09:30:00"})
    r, loaded = ev.world.imports_of(
        ["jobs", "run", "--json"],
        ["fermix_cli.events.delivery", "fermix_cli.events.store", "fermix_cli.core.config", "zoneinfo"],
        env=ev.env(),
    )
    assert r.code == 0, r.stderr
    assert loaded == []


def test_a_snooze_after_a_one_time_event_completed_reactivates_it_just_long_enough_to_deliver(
    ev: Events,
) -> None:
    out = ev.store(
        "Dentist", "appointment", when={"type": "datetime", "date": "2026-09-10", "time": "09:30:00"}
    )
    last = out["planned_reminders"][-1]["reminder_id"]
    ev.tick(utc("2026-09-09T07:30:10Z"))
    ev.tick(utc("2026-09-10T06:30:10Z"))
    ev.tick(utc("2026-09-12T06:00:00Z"))  # the day has passed: the event completes
    assert ev.call("event_list", {"status": "any"})["events"][0]["status"] == "completed"
    at = utc("2026-09-12T06:05:00Z")
    snoozed = ev.call(
        "reminder_snooze",
        {
            "reminder_id": last,
            "snooze": {"type": "duration", "amount": 1, "unit": "hours"},
            "confirm_past_boundary": True,
        },
        at=at,
    )
    assert ev.call("event_list", {"status": "active"}, at=at)["events"][0]["status"] == "active"
    between = ev.tick(utc("2026-09-12T06:30:00Z"))
    assert between.get("rolled", []) == [], between  # still active: the snooze is pending
    assert ev.call("event_list", {"status": "active"}, at=at)["events"][0]["status"] == "active"
    sent = ev.tick(utc("2026-09-12T07:05:10Z"))
    assert [s["reminder_id"] for s in sent["sent"]] == [snoozed["reminder"]["reminder_id"]]
    ev.tick(utc("2026-09-12T07:06:00Z"))  # delivered: nothing left to send, so it completes again
    assert ev.call("event_list", {"status": "any"})["events"][0]["status"] == "completed"


def test_a_tick_past_its_claim_cap_says_how_many_wait_for_the_next(ev: Events) -> None:
    for i in range(5):
        ev.store(
            f"Task {i}",
            "explicit_reminder",
            when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"},
        )
    at = utc("2026-09-02T10:00:05Z")
    channel = FlakyChannel(failures=0)
    ctx = ev.world.context(clock=lambda: at)
    try:
        first = deliver_due(ctx, channel, limit=3)[1].as_dict()
        second = deliver_due(ctx, channel, limit=3)[1].as_dict()
    finally:
        ctx.close()
    assert len(first["sent"]) == 3 and first["more_due"] == 2
    assert len(second["sent"]) == 2 and second["more_due"] == 0
    assert len(channel.sent) == 5


def _telegram_config(ev: Events, standin: TelegramStandIn, target: str, extra: str = "") -> None:
    ev.config(
        text=(
            '[fermix_core.personalization]\ntimezone = "Europe/Berlin"\n'
            f"[fermix_core.jobs]\ndefault_delivery_target = {target}\n"
            f'[fermix_core.channels.telegram]\nbot_token = "{standin.token}"\napi_base = "{standin.api_base}"\n'
            '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n' + extra
        )
    )


def test_a_reminder_and_its_check_in_go_to_the_targets_telegram_topic(
    ev: Events, telegram: TelegramStandIn
) -> None:
    script = ev.world.root / "followup.json"
    script.write_text('[{"text": "Need the number?"}]')
    _telegram_config(
        ev,
        telegram,
        '{platform = "telegram", chat_id = "-1001234", message_thread_id = 77}',
        f'[fermix_core.routing]\ncron_provider = "mock"\ncron_model = "{script}"\n',
    )
    out = ev.store(
        "Call",
        "explicit_reminder",
        when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"},
        followup=True,
    )
    assert out["delivery"]["target"] == {
        "platform": "telegram",
        "address": "-1001234",
        "message_thread_id": 77,
    }
    report = ev.tick(utc("2026-09-02T10:00:05Z"))
    assert len(report["sent"]) == 1 and [f["status"] for f in report["followups"]] == ["sent"], report
    bodies = [hit.json() for hit in telegram.calls("sendMessage")]
    assert [(b["chat_id"], b["message_thread_id"]) for b in bodies] == [(-1001234, 77), (-1001234, 77)]
    assert bodies[1]["text"] == "Need the number?"


def test_a_new_plan_keeps_an_active_snooze_whose_rule_it_keeps(ev: Events) -> None:
    out = ev.store(
        "Dentist", "appointment", when={"type": "datetime", "date": "2026-09-10", "time": "09:30:00"}
    )
    event_id = out["event"]["event_id"]
    day_before, hour_before = (r["reminder_id"] for r in out["planned_reminders"])
    # the day-before reminder is delivered, then snoozed for two hours
    assert [s["reminder_id"] for s in ev.tick(utc("2026-09-09T07:30:10Z"))["sent"]] == [day_before]
    at = utc("2026-09-09T07:40:00Z")
    snoozed = ev.call(
        "reminder_snooze",
        {"reminder_id": day_before, "snooze": {"type": "duration", "amount": 2, "unit": "hours"}},
        at=at,
    )["reminder"]
    # the hour-before reminder, not sent yet, is snoozed too: the snooze takes its place
    later = ev.call(
        "reminder_snooze",
        {
            "reminder_id": hour_before,
            "snooze": {"type": "datetime", "date": "2026-09-10", "time": "09:00:00"},
        },
        at=at,
    )["reminder"]
    plan = [{"type": "duration_before", "minutes": 1440}, {"type": "duration_before", "minutes": 60}]
    updated = ev.call(
        "event_update",
        {"event_id": event_id, "reminders": [*plan, {"type": "duration_before", "minutes": 15}]},
        at=at,
    )
    assert "dropped_snoozes" not in updated
    assert [(r["reminder_id"], r["scheduled_for"]) for r in updated["planned_reminders"]] == [
        (snoozed["reminder_id"], "2026-09-09T09:40:00.000000Z"),
        (later["reminder_id"], "2026-09-10T07:00:00.000000Z"),
        (updated["planned_reminders"][2]["reminder_id"], "2026-09-10T07:15:00.000000Z"),  # the new rule
    ]
    pending = ev.sql("SELECT id FROM reminder_occurrences WHERE status = 'pending' ORDER BY scheduled_for")
    assert [r[0] for r in pending] == [r["reminder_id"] for r in updated["planned_reminders"]]
    assert [s["reminder_id"] for s in ev.tick(utc("2026-09-09T09:40:10Z"))["sent"]] == [
        snoozed["reminder_id"]
    ]
    # a plan without the hour-before rule drops that snooze, and says so
    updated = ev.call(
        "event_update",
        {"event_id": event_id, "reminders": [{"type": "duration_before", "minutes": 15}]},
        at=at,
    )
    assert updated["dropped_snoozes"] == [
        {
            "reminder_id": later["reminder_id"],
            "source_reminder_id": hour_before,
            "rule_id": "minutes_before_60",
            "scheduled_for": "2026-09-10T07:00:00.000000Z",
            "reason": "rule_removed",
        }
    ]
    assert [r["rule_id"] for r in updated["planned_reminders"]] == ["minutes_before_15"]
    assert ev.tick(utc("2026-09-10T07:00:10Z"))["status"] == "idle"


def test_moving_the_event_drops_its_snoozes_and_says_so(ev: Events) -> None:
    out = ev.store(
        "Dentist", "appointment", when={"type": "datetime", "date": "2026-09-10", "time": "09:30:00"}
    )
    first = out["planned_reminders"][0]["reminder_id"]
    snooze = {"type": "duration", "amount": 1, "unit": "days"}
    snoozed = ev.call("reminder_snooze", {"reminder_id": first, "snooze": snooze})["reminder"]
    moved = ev.call(
        "event_update",
        {
            "event_id": out["event"]["event_id"],
            "when": {"type": "datetime", "date": "2026-09-17", "time": "09:30:00"},
            "owner_direction": "move it a week",
        },
    )
    assert [(d["reminder_id"], d["reason"]) for d in moved["dropped_snoozes"]] == [
        (snoozed["reminder_id"], "event_moved")
    ]
    assert [r["scheduled_for"] for r in moved["planned_reminders"]] == [
        "2026-09-16T07:30:00.000000Z",
        "2026-09-17T06:30:00.000000Z",
    ]


class HeldTelegram:
    """The stand-in's sendMessage, holding the first request until the test lets it go."""

    def __init__(self, standin: TelegramStandIn) -> None:
        self.standin = standin
        self.release = threading.Event()
        self.arrived = threading.Event()
        self.first = True
        answer = standin.web.routes[f"/bot{standin.token}/sendMessage"]
        assert callable(answer)
        self.answer = answer
        standin.web.routes[f"/bot{standin.token}/sendMessage"] = self._hold

    def _hold(self, hit: Hit) -> Reply:
        if self.first:
            self.first = False
            self.arrived.set()
            self.release.wait(60)
        return self.answer(hit)

    def texts(self) -> list[str]:
        return [hit.json()["text"] for hit in self.standin.calls("sendMessage")]


def _due_together(ev: Events, standin: TelegramStandIn, titles: list[str]) -> list[str]:
    _telegram_config(ev, standin, '{platform = "telegram", chat_id = "42"}')
    return [
        ev.store(t, "explicit_reminder", when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"})[
            "planned_reminders"
        ][0]["reminder_id"]
        for t in titles
    ]


def _start_tick(ev: Events, at: datetime) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
        env=ev.env(at),
        cwd=ev.world.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("signame", "code"), [("SIGTERM", 143), ("SIGHUP", 129)], ids=["sigterm", "sighup-terminal-closed"]
)
def test_sigterm_mid_send_leaves_the_unsent_reminders_pending(
    ev: Events, telegram: TelegramStandIn, signame: str, code: int
) -> None:
    ids = _due_together(ev, telegram, ["One", "Two", "Three"])
    held = HeldTelegram(telegram)
    tick = _start_tick(ev, utc("2026-09-02T10:00:05Z"))
    try:
        assert held.arrived.wait(60), tick.stderr.read() if tick.poll() is not None else "no request"
        tick.send_signal(getattr(signal, signame))
        out, err = tick.communicate(timeout=60)
    finally:
        held.release.set()
        if tick.poll() is None:
            tick.kill()
    # The stopped tick ends at once, says so, and only the reminder it was sending may have arrived.
    assert tick.returncode == code, err
    parsed = json.loads(out)
    report = parsed["due_work"]["reminders"]
    assert report["stopped"] == signame
    # the sources after it (the coding runs, the scheduled jobs) wait for the next tick
    assert "runs" not in parsed and "coding_runs" not in parsed["due_work"]
    ((first, code),) = [(f["reminder_id"], f["code"]) for f in report["failed"]]
    assert code == "interrupted" and report["sent"] == []
    rest = [i for i in ids if i != first]
    rows = {
        r["id"]: tuple(r)[1:]
        for r in ev.sql("SELECT id, status, attempt_count, last_error_code FROM reminder_occurrences")
    }
    assert rows == {
        first: ("failed", 1, "interrupted"),
        rest[0]: ("pending", 0, None),
        rest[1]: ("pending", 0, None),
    }
    # The next tick sends the other two (not the maybe-delivered one) and calls nothing lost.
    report = ev.tick(utc("2026-09-02T10:01:00Z"))
    assert sorted(s["reminder_id"] for s in report["sent"]) == sorted(rest) and report["failed"] == []
    titles = sorted(text.split(" (")[0] for text in held.texts())
    assert titles == ["Reminder: One", "Reminder: Three", "Reminder: Two"]  # each once


def test_a_slow_tick_keeps_its_sends_while_a_later_tick_runs(ev: Events, telegram: TelegramStandIn) -> None:
    """A tick past the send lease does not take a live tick's claim (on this host the process is asked):
    each reminder is sent once, by the tick that reports it sent, and recorded delivered."""
    ids = _due_together(ev, telegram, ["One", "Two"])
    held = HeldTelegram(telegram)
    slow = _start_tick(ev, utc("2026-09-02T10:00:30Z"))
    try:
        assert held.arrived.wait(60), "no request"
        later = ev.tick(utc("2026-09-02T10:11:00Z"))  # past the 600 s lease of the slow tick's claim
        held.release.set()
        out, err = slow.communicate(timeout=60)
    finally:
        held.release.set()
        if slow.poll() is None:
            slow.kill()
    assert slow.returncode == 0, err
    first = json.loads(out)["due_work"]["reminders"]
    assert later["failed"] == [] and first["failed"] == []
    sent_by = {s["reminder_id"]: "slow" for s in first["sent"]} | {
        s["reminder_id"]: "later" for s in later["sent"]
    }
    assert sorted(sent_by) == sorted(ids) and len(first["sent"]) == len(later["sent"]) == 1
    rows = ev.sql("SELECT status, attempt_count, sent_at IS NOT NULL FROM reminder_occurrences")
    assert [tuple(r) for r in rows] == [("delivered", 1, 1), ("delivered", 1, 1)]
    assert len(held.texts()) == 2


def test_reconcile_asks_this_hosts_process_and_trusts_another_hosts_lease(ev: Events) -> None:
    from fermix_cli.core.procid import owner_identity

    out = ev.store(
        "Call", "explicit_reminder", when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"}
    )
    rid = out["planned_reminders"][0]["reminder_id"]
    at = utc("2026-09-02T10:30:00Z")
    for claimant, lost in ((owner_identity(), False), ("elsewhere:1:x", True)):
        conn = sqlite3.connect(ev.world.fermix_home / "state.db")
        with conn:
            conn.execute(
                "UPDATE reminder_occurrences SET status = 'delivering', claimed_by = ?,"
                " lease_until = '2026-09-02T10:10:00.000000Z' WHERE id = ?",
                (claimant, rid),
            )
        conn.close()
        report = _engine(ev, FlakyChannel(), at)
        assert report["failed"] == ([{"reminder_id": rid, "code": "runner_lost"}] if lost else []), claimant
        assert ev.sql("SELECT status FROM reminder_occurrences")[0][0] == ("failed" if lost else "delivering")


class StopAfterSend(FlakyChannel):
    """Sends, then has SIGTERM reach this process: inside the send, or just after it (while recording)."""

    def __init__(self, during_send: bool) -> None:
        super().__init__()
        self.during_send = during_send
        self.armed = False

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        sent = super().send_text(address, text, meta)
        if self.during_send:
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            self.armed = True  # the next clock reading is the record's
        return sent

    def clock(self, at: datetime) -> datetime:
        if self.armed:
            self.armed = False
            os.kill(os.getpid(), signal.SIGTERM)
        return at


def test_a_stop_ends_the_pass_in_process_and_gives_the_signal_back(ev: Events) -> None:
    for i in range(3):
        ev.store(
            f"Task {i}",
            "explicit_reminder",
            when={"type": "datetime", "date": "2026-09-02", "time": "12:00:00"},
        )
    at = utc("2026-09-02T10:00:05Z")
    before = signal.getsignal(signal.SIGTERM)
    # between sends: the one sent is recorded delivered, the pass ends, nothing is lost
    channel = StopAfterSend(during_send=False)
    ctx = ev.world.context(clock=lambda: channel.clock(at))
    try:
        code, report = deliver_due(ctx, channel)
    finally:
        ctx.close()
    assert (code, report.stopped, len(report.sent), report.failed) == (143, "SIGTERM", 1, [])
    statuses = Counter(r[0] for r in ev.sql("SELECT status FROM reminder_occurrences"))
    assert statuses == Counter({"pending": 2, "delivered": 1})
    # during a send: that one may have arrived (interrupted, never re-sent); the last stays pending
    out = _engine(ev, StopAfterSend(during_send=True), at)
    assert out["stopped"] == "SIGTERM" and [f["code"] for f in out["failed"]] == ["interrupted"]
    statuses = Counter(r[0] for r in ev.sql("SELECT status FROM reminder_occurrences"))
    assert statuses == Counter({"pending": 1, "delivered": 1, "failed": 1})
    assert signal.getsignal(signal.SIGTERM) == before  # the pass's handler is gone again
    assert len(_engine(ev, FlakyChannel(), at)["sent"]) == 1


def test_a_reminder_sent_late_says_how_far_off_the_date_really_is(ev: Events) -> None:
    ev.store("Party", "event", when={"type": "date", "date": "2026-09-03"},
             reminders=[{"type": "days_before", "days": 1}])  # fmt: skip
    ev.store("Dentist", "appointment", when={"type": "datetime", "date": "2026-09-03", "time": "14:00:00"},
             reminders=[{"type": "duration_before", "minutes": 60}])  # fmt: skip
    ev.store(
        "Call mum", "explicit_reminder", when={"type": "datetime", "date": "2026-09-03", "time": "13:15:00"}
    )
    # The machine was off from the evening before: the day-before note comes on the day itself.
    ev.tick(utc("2026-09-03T06:00:00Z"))  # 08:00 in Berlin
    assert ev.inbox()[-1]["text"] == "Reminder: Party (event) on Thursday 3 September 2026, today."
    # The 13:00 "1 hour before" and the 13:15 "at the time", sent at 14:30, after both began.
    ev.tick(utc("2026-09-03T12:30:00Z"))
    assert [m["text"] for m in ev.inbox()[-2:]] == [
        "Reminder: Dentist (appointment) on Thursday 3 September 2026 at 14:00 Europe/Berlin time, "
        "sent late: that time has passed.",
        "Reminder: Call mum (explicit reminder) on Thursday 3 September 2026 at 13:15 Europe/Berlin time, "
        "sent late: that time has passed.",
    ]


def test_a_reminder_sent_a_little_late_but_before_the_event_counts_down_from_now(ev: Events) -> None:
    ev.store("Exam", "deadline", when={"type": "datetime", "date": "2026-09-03", "time": "14:00:00"},
             reminders=[{"type": "duration_before", "minutes": 180}])  # fmt: skip
    ev.tick(utc("2026-09-03T10:40:00Z"))  # due 11:00 Berlin, sent 12:40 Berlin
    assert ev.inbox()[-1]["text"] == (
        "Reminder: Exam (deadline) on Thursday 3 September 2026 at 14:00 Europe/Berlin time, in 80 minutes."
    )
