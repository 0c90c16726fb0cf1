"""The five tools through registry.invoke: storing, dedupe, updating, cancelling, snoozing, the gate."""

from __future__ import annotations

import json
import shlex
import sys
from datetime import timedelta

import pytest

from fermix_cli.core.errors import ToolError
from tests.events.world import NOW, Events, utc

BIRTHDAY = {"type": "annual", "month": 9, "day": 14}


def test_store_answers_with_the_absolute_date_plan_and_delivery(ev: Events) -> None:
    out = ev.store("Sarah's birthday", "birthday", when=BIRTHDAY, followup=True)
    assert out["status"] == "stored"
    assert out["stated_as"] == "Monday 14 September 2026, every year"
    assert [(r["rule_id"], r["local_time"]) for r in out["planned_reminders"]] == [
        ("week_before", "2026-09-07T09:00+02:00"),
        ("day_of", "2026-09-14T09:00+02:00"),
        ("week_before", "2027-09-07T09:00+02:00"),
        ("day_of", "2027-09-14T09:00+02:00"),
    ]
    assert out["delivery"] == {"target": {"platform": "inbox", "address": "owner"}, "source": "configured"}
    assert "follow-up check-in" in out["message"]
    (row,) = ev.sql("SELECT materialized_through, status FROM temporal_events")
    assert tuple(row) == ("2027-09-14", "active")


def test_the_zone_comes_from_the_argument_or_config_never_utc(ev: Events) -> None:
    out = ev.store(
        when={"type": "datetime", "date": "2026-09-10", "time": "09:30:00"}, timezone="America/New_York"
    )
    assert out["event"]["timezone"] == "America/New_York"
    assert (
        out["planned_reminders"][-1]["scheduled_for"] == "2026-09-10T12:30:00.000000Z"
    )  # an hour before 13:30Z
    ev.config(zone=None)
    assert ev.error(
        "event_store", {"title": "X", "kind": "event", "when": {"type": "date", "date": "2026-10-01"}}
    ).code == ("timezone_not_configured")


@pytest.mark.parametrize(
    ("when", "code"),
    [
        ({"type": "datetime", "date": "2027-03-28", "time": "02:30:00"}, "dst_gap"),
        ({"type": "datetime", "date": "2026-10-25", "time": "02:30:00"}, "ambiguous_local_time"),
        ({"type": "annual", "month": 2, "day": 29}, "leap_day_policy_required"),
        ({"type": "sometime"}, "invalid_when"),
    ],
)
def test_store_refuses_times_the_owner_must_clarify(ev: Events, when: dict[str, object], code: str) -> None:
    e = ev.error("event_store", {"title": "Call", "kind": "appointment", "when": when})
    assert e.code == code
    assert ev.count("temporal_events") == 0


@pytest.mark.parametrize(
    "when",
    [
        {"type": "date", "date": "9999-12-31"},
        {"type": "date", "date": "0001-01-01"},
        {"type": "date", "date": "1899-12-31"},
        {"type": "date", "date": "0999-06-01"},
        {"type": "datetime", "date": "9999-12-31", "time": "23:00:00"},
        {"type": "datetime", "date": "0001-01-01", "time": "00:30:00"},
    ],
)
def test_a_date_outside_the_supported_years_is_invalid_when(ev: Events, when: dict[str, object]) -> None:
    e = ev.error("event_store", {"title": "Far", "kind": "deadline", "when": when})
    assert e.code == "invalid_when" and "1900 to 9998" in e.message, e.message
    assert ev.count("temporal_events") == 0
    event_id = ev.store()["event"]["event_id"]
    e = ev.error("event_update", {"event_id": event_id, "when": when, "owner_direction": "move it"})
    assert e.code == "invalid_when"


def test_the_supported_years_end_to_end(ev: Events) -> None:
    far = ev.store("Far", "deadline", when={"type": "datetime", "date": "9998-12-31", "time": "23:30:00"})
    assert far["planned_reminders"][0]["scheduled_for"] == "9998-12-30T22:30:00.000000Z"
    old = ev.store("Old", "deadline", when={"type": "date", "date": "1900-01-01"})
    assert old["note"] == "no future reminder remains"
    r = ev.cli(
        "tool",
        "event_store",
        "--json",
        '{"title":"Far","kind":"deadline","when":{"type":"date","date":"9999-12-31"}}',
    )
    assert r.code == 2 and r.error()["code"] == "invalid_when", r.stderr


def test_utc_offset_stores_the_second_of_two_equal_hours(ev: Events) -> None:
    out = ev.store(
        when={"type": "datetime", "date": "2026-10-25", "time": "02:30:00", "utc_offset": "+01:00"},
        reminders=[{"type": "at_time"}],
    )
    assert out["planned_reminders"][0]["scheduled_for"] == "2026-10-25T01:30:00.000000Z"


@pytest.mark.parametrize(
    ("offset", "patch", "at_time"),
    [
        # the repeated hour stays picked as the owner picked it when something else changes
        ("+02:00", {"title": "Call!"}, "2026-10-25T00:30:00.000000Z"),
        ("+01:00", {"title": "Call!"}, "2026-10-25T01:30:00.000000Z"),
        # a new zone keeps the wall time and which of two equal hours (Paris repeats the same hour) ...
        ("+02:00", {"timezone": "Europe/Paris"}, "2026-10-25T00:30:00.000000Z"),
        ("+01:00", {"timezone": "Europe/Paris"}, "2026-10-25T01:30:00.000000Z"),
        # ... and where 02:30 happens once, it is that one: the old zone's offset is not reapplied
        ("+01:00", {"timezone": "Europe/London"}, "2026-10-25T02:30:00.000000Z"),
        ("+02:00", {"timezone": "America/New_York"}, "2026-10-25T06:30:00.000000Z"),
    ],
)
def test_an_update_without_when_keeps_the_picked_hour_of_a_repeated_time(
    ev: Events, offset: str, patch: dict[str, str], at_time: str
) -> None:
    out = ev.store(
        when={"type": "datetime", "date": "2026-10-25", "time": "02:30:00", "utc_offset": offset},
        reminders=[{"type": "at_time"}],
    )
    updated = ev.call("event_update", {"event_id": out["event"]["event_id"], **patch})
    assert [r["scheduled_for"] for r in updated["planned_reminders"]] == [at_time]
    assert updated["event"]["when"] == {"type": "datetime", "date": "2026-10-25", "time": "02:30:00"}


def test_store_without_a_target_fails_and_never_uses_the_chat(ev: Events) -> None:
    ev.config(text='[fermix_core.personalization]\ntimezone = "Europe/Berlin"\n')
    assert ev.error(
        "event_store", {"title": "X", "kind": "event", "when": {"type": "date", "date": "2026-10-01"}}
    ).code == ("no_default_target")
    ev.config(
        text='[fermix_core.personalization]\ntimezone = "UTC"\n[fermix_core.jobs]\n'
        'default_delivery_target = {platform = "cli", recipient = "me"}\n'
    )
    assert ev.error(
        "event_store", {"title": "X", "kind": "event", "when": {"type": "date", "date": "2026-10-01"}}
    ).code == ("invalid_delivery")


def test_storing_twice_dedupes_and_a_different_date_conflicts(ev: Events) -> None:
    first = ev.store("Sarah's birthday", "birthday", when=BIRTHDAY)
    again = ev.store("  sarah's   BIRTHDAY ", "birthday", when=BIRTHDAY)
    assert again["status"] == "existing" and again["event"]["event_id"] == first["event"]["event_id"]
    e = ev.error(
        "event_store",
        {"title": "Sarah's birthday", "kind": "birthday", "when": {"type": "annual", "month": 9, "day": 15}},
    )
    assert e.code == "identity_conflict" and "14 September" in e.message
    assert ev.sql("SELECT count(*) FROM temporal_events")[0][0] == 1


def test_past_lead_rules_are_skipped_with_a_note(ev: Events) -> None:
    out = ev.store(
        "Call mum",
        "explicit_reminder",
        when={"type": "datetime", "date": "2026-09-01", "time": "09:30:00"},
        reminders=[{"type": "duration_before", "minutes": 120}],
    )
    assert out["planned_reminders"] == [] and out["note"] == "no future reminder remains"


def test_update_needs_the_owners_words_to_move_a_date(ev: Events) -> None:
    event_id = ev.store()["event"]["event_id"]
    new = {"type": "datetime", "date": "2026-09-11", "time": "10:00:00"}
    assert ev.error("event_update", {"event_id": event_id, "when": new}).code == "overwrite_unconfirmed"
    long = "x" * 241
    e = ev.error("event_update", {"event_id": event_id, "when": new, "owner_direction": long})
    assert e.code == "owner_direction_too_long"
    out = ev.call(
        "event_update", {"event_id": event_id, "when": new, "owner_direction": "move it to Friday at ten"}
    )
    assert out["previous"]["when"] == {"type": "datetime", "date": "2026-09-10", "time": "09:30:00"}
    assert out["event"]["revision"] == 2
    assert [r["scheduled_for"] for r in out["planned_reminders"]] == [
        "2026-09-10T08:00:00.000000Z",
        "2026-09-11T07:00:00.000000Z",
    ]
    statuses = sorted(
        (r["revision"], r["status"]) for r in ev.sql("SELECT revision, status FROM reminder_occurrences")
    )
    assert statuses == [(1, "cancelled"), (1, "cancelled"), (2, "pending"), (2, "pending")]
    # followup changes never need owner_direction
    assert ev.call("event_update", {"event_id": event_id, "followup": True})["previous"] == {
        "followup": False
    }


def test_update_with_a_new_plan_replaces_it_entirely(ev: Events) -> None:
    event_id = ev.store()["event"]["event_id"]
    out = ev.call(
        "event_update", {"event_id": event_id, "reminders": [{"type": "duration_before", "minutes": 15}]}
    )
    assert [r["rule_id"] for r in out["planned_reminders"]] == ["minutes_before_15"]
    out = ev.call("event_update", {"event_id": event_id, "no_reminders": True})
    assert out["planned_reminders"] == [] and out["event"]["no_reminders"] is True


def test_remove_is_soft_and_cancel_that_needs_a_recent_delivery(ev: Events) -> None:
    assert ev.error("event_remove", {}).code == "no_recent_reminder"
    out = ev.store("Sarah's birthday", "birthday", when=BIRTHDAY)
    gone = ev.call("event_remove", {"event_id": out["event"]["event_id"]})
    assert gone["event"]["recurrence"] == "yearly" and "every future occurrence" in gone["message"]
    assert {r["status"] for r in gone["event"]["reminders"]} == {"cancelled"}
    assert ev.sql("SELECT status FROM temporal_events")[0][0] == "cancelled"
    assert ev.error("event_remove", {"event_id": out["event"]["event_id"]}).code == "not_active"
    listed = ev.call("event_list", {"status": "cancelled"})
    assert [e["event_id"] for e in listed["events"]] == [out["event"]["event_id"]]


def test_the_gate_refuses_background_guests_and_subagents(ev: Events) -> None:
    args = {"title": "X", "kind": "event", "when": {"type": "date", "date": "2026-10-01"}}
    for ctx in (
        {"origin": "scheduled", "job_id": "digest"},
        {"origin": "subagent", "depth": 1},
        {"origin": "mcp"},
        {"attended": False},
        {"origin": "skill"},
    ):
        e = ev.error("event_store", args, **ctx)
        assert e.code == "not_attended", ctx
    # A guest is refused by the same gate, ahead of the owner-only check (seed 000: tagged not_attended).
    assert ev.error("event_store", args, trust="guest").code == "not_attended"
    assert ev.error("event_list", {}, trust="guest").code == "not_attended"
    # event_list also runs inside the owner's scheduled job, but not in a subagent
    assert ev.call("event_list", {}, origin="scheduled", job_id="digest")["events"] == []
    assert ev.error("event_list", {}, origin="subagent", depth=1).code == "not_attended"


def test_a_process_fermix_started_counts_as_unattended(ev: Events) -> None:
    """A scheduled turn's shell running `fermix tool event_store` is refused: the child carries the spawn
    marker (reference 9.1 "Spawned processes"), though it looks like the owner's own CLI call."""
    store = json.dumps({"title": "X", "kind": "event", "when": {"type": "date", "date": "2026-10-01"}})
    inner = f"{shlex.quote(sys.executable)} -m fermix_cli --home {shlex.quote(str(ev.world.fermix_home))}"
    for tool, args in (("event_store", store), ("event_list", "{}")):
        command = f"{inner} tool {tool} --json {shlex.quote(args)}"
        with pytest.raises(ToolError) as e:
            ev.call("shell", {"command": command}, origin="scheduled", attended=False, job_id="digest")
        assert e.value.details["exit_code"] == 3, e.value.details
        refusal = json.loads(e.value.details["output"])["error"]
        assert refusal["code"] == "not_attended" and refusal["details"]["spawned"] is True
    assert ev.count("temporal_events") == 0
    # The same call from the owner's own terminal (no spawn marker, no fermix ancestor) is attended.
    r = ev.cli("tool", "event_store", "--json", store)
    assert r.code == 0, r.stderr
    r = ev.cli("tool", "event_store", "--json", store, env={"FERMIX_SPAWNED": "x"})
    assert r.code == 3 and r.error()["code"] == "not_attended"


def test_the_gate_also_hides_the_tools(ev: Events) -> None:
    from fermix_cli.core.registry import default_registry

    def visible(**kw: object) -> set[str]:
        ctx = ev.world.context(**kw)
        return {s.name for s in default_registry().visible(ctx) if s.category == "events"}

    every = {"event_store", "event_list", "event_update", "event_remove", "reminder_snooze"}
    assert visible() == every
    assert visible(origin="scheduled", job_id="digest") == {"event_list"}
    assert visible(origin="subagent", depth=1) == set()


def test_list_pages_with_an_opaque_cursor_from_today(ev: Events) -> None:
    for day in range(2, 9):
        ev.store(f"Thing {day}", "deadline", when={"type": "date", "date": f"2026-09-0{day}"})
    ev.store("Past", "deadline", when={"type": "date", "date": "2026-08-20"}, no_reminders=True)
    first = ev.call("event_list", {"limit": 3})
    assert [e["title"] for e in first["events"]] == ["Thing 2", "Thing 3", "Thing 4"]
    second = ev.call("event_list", {"limit": 3, "cursor": first["next_cursor"]})
    third = ev.call("event_list", {"limit": 3, "cursor": second["next_cursor"]})
    assert [e["title"] for e in second["events"] + third["events"]] == [
        "Thing 5",
        "Thing 6",
        "Thing 7",
        "Thing 8",
    ]
    assert "next_cursor" not in third
    assert [
        e["title"] for e in ev.call("event_list", {"status": "active", "to": "2026-08-31"})["events"]
    ] == ["Past"]
    assert ev.call("event_list", {"text": "thing 5"})["count"] == 1
    assert ev.error("event_list", {"from": "2026-01-01", "to": "2028-06-01"}).code == "date_window_too_wide"
    assert ev.error("event_list", {"from": "2026-02-01", "to": "2026-01-01"}).code == "invalid_date_window"
    assert ev.error("event_list", {"cursor": "bm9wZQ"}).code == "invalid_cursor"


@pytest.mark.parametrize(
    "window",
    [{"from": "2026W011"}, {"to": "20261231"}, {"from": "2026-W01-1"}, {"to": "2026W01"}],
)
def test_list_takes_only_dates_spelled_yyyy_mm_dd(ev: Events, window: dict[str, str]) -> None:
    e = ev.error("event_list", window)
    assert e.code == "invalid_date_window" and "YYYY-MM-DD" in e.message
    assert e.details["field"] == next(iter(window))


def test_snooze_limits(ev: Events) -> None:
    out = ev.store()
    rid = out["planned_reminders"][0]["reminder_id"]  # 24 h before: 2026-09-09T07:30Z
    snooze = {"type": "duration", "amount": 2, "unit": "hours"}
    assert ev.error("reminder_snooze", {"snooze": snooze}).code == "no_recent_reminder"
    past = {"type": "datetime", "date": "2026-08-31", "time": "09:00:00"}
    assert ev.error("reminder_snooze", {"reminder_id": rid, "snooze": past}).code == "snooze_in_past"
    far = {"type": "duration", "amount": 91, "unit": "days"}
    assert ev.error("reminder_snooze", {"reminder_id": rid, "snooze": far}).code == "snooze_too_far"
    after = {"type": "datetime", "date": "2026-09-10", "time": "10:00:00"}
    assert (
        ev.error("reminder_snooze", {"reminder_id": rid, "snooze": after}).code
        == "snooze_past_boundary_unconfirmed"
    )
    done = ev.call("reminder_snooze", {"reminder_id": rid, "snooze": after, "confirm_past_boundary": True})
    assert done["reminder"]["scheduled_for"] == "2026-09-10T08:00:00.000000Z"
    e = ev.error("reminder_snooze", {"reminder_id": rid, "snooze": after, "confirm_past_boundary": True})
    assert e.code == "already_snoozed"
    ev.call("reminder_snooze", {"reminder_id": rid, "snooze": snooze})
    active = ev.sql(
        "SELECT status, scheduled_for FROM reminder_occurrences WHERE source_reminder_id = ?"
        " AND status = 'pending'",
        (rid,),
    )
    assert [tuple(r) for r in active] == [("pending", "2026-09-01T10:00:00.000000Z")]  # one active snooze
    ev.call("event_remove", {"event_id": out["event"]["event_id"]})
    assert ev.error("reminder_snooze", {"reminder_id": rid, "snooze": snooze}).code == "parent_cancelled"


def test_a_send_in_flight_blocks_changes(ev: Events) -> None:
    out = ev.store()
    rid = out["planned_reminders"][0]["reminder_id"]
    import sqlite3

    conn = sqlite3.connect(ev.world.fermix_home / "state.db")
    with conn:
        conn.execute(
            "UPDATE reminder_occurrences SET status = 'delivering', claimed_by = 'elsewhere:1:x',"
            " lease_until = '2099-01-01T00:00:00.000000Z' WHERE id = ?",
            (rid,),
        )
    conn.close()
    event_id = out["event"]["event_id"]
    assert ev.error("event_remove", {"event_id": event_id}).code == "delivery_in_progress"
    assert (
        ev.error("event_update", {"event_id": event_id, "title": "Dentist!"}).code == "delivery_in_progress"
    )
    snooze = {"type": "duration", "amount": 1, "unit": "hours"}
    assert ev.error("reminder_snooze", {"reminder_id": rid, "snooze": snooze}).code == "source_delivering"


def test_relative_dates_count_in_the_owners_zone(ev: Events) -> None:
    late = NOW.replace(hour=23) + timedelta(minutes=30)  # 01:30 on 2 September in Berlin
    out = ev.store("Pay rent", "deadline", when={"type": "relative", "amount": 2, "unit": "days"}, at=late)
    assert out["event"]["when"] == {"type": "date", "date": "2026-09-04"}


@pytest.mark.parametrize(
    ("jobs", "code"),
    [
        ('default_delivery_target = {platform = "cli", recipient = "me"}', "invalid_delivery"),
        ('default_delivery_target = {platform = "inbox", recipient = "me", reply_to = "1"}', "invalid_delivery"),
        ('default_delivery_target = {platform = "telegram", chat_id = "1", message_thread_id = 2, thread_ts = "3"}',
         "invalid_delivery"),
        ('default_delivery_target = {platform = "carrier_pigeon", recipient = "me"}', "unsupported_channel"),
        ('default_delivery_target = {platform = "telegram", chat_id = "1"}', "channel_not_configured"),
        ('default_delivery_mode = "local"\ndefault_delivery_target = {platform = "inbox", recipient = "me"}',
         "invalid_delivery"),
        ("", "no_default_target"),
    ],
)  # fmt: skip
def test_a_bad_configured_target_fails_without_falling_through(ev: Events, jobs: str, code: str) -> None:
    ev.config(text=f'[fermix_core.personalization]\ntimezone = "UTC"\n[fermix_core.jobs]\n{jobs}\n')
    args = {"title": "X", "kind": "event", "when": {"type": "date", "date": "2026-10-01"}}
    assert ev.error("event_store", args).code == code


def test_title_and_direction_limits_count_bytes(ev: Events) -> None:
    args = {"kind": "event", "when": {"type": "date", "date": "2026-10-01"}}
    assert ev.error("event_store", {"title": "é" * 121, **args}).code == "invalid_input"  # 242 bytes
    assert ev.error("event_store", {"title": "   ", **args}).code == "invalid_input"
    event_id = ev.store("Ok", **args)["event"]["event_id"]
    new = {"type": "date", "date": "2026-10-02"}
    e = ev.error("event_update", {"event_id": event_id, "when": new, "owner_direction": "ü" * 121})
    assert e.code == "owner_direction_too_long"
    ok = ev.call("event_update", {"event_id": event_id, "when": new, "owner_direction": "ü" * 120})
    assert ok["event"]["next_occurrence"] == "2026-10-02"


def test_config_changes_retarget_only_on_an_explicit_rebind(ev: Events) -> None:
    event_id = ev.store()["event"]["event_id"]
    ev.config(text='[fermix_core.personalization]\ntimezone = "Europe/Berlin"\n[fermix_core.jobs]\n'
              'default_delivery_target = {platform = "inbox", recipient = "phone"}\n')  # fmt: skip
    kept = ev.call("event_update", {"event_id": event_id, "title": "Dentist (Dr Lee)"})
    assert kept["event"]["delivery"]["target"]["address"] == "owner" and kept["event"]["revision"] == 1
    moved = ev.call("event_update", {"event_id": event_id, "rebind_delivery_to_default": True})
    assert moved["previous"]["delivery"] == {"platform": "inbox", "address": "owner"}
    assert moved["event"]["delivery"]["target"]["address"] == "phone" and moved["event"]["revision"] == 2
    assert len(moved["planned_reminders"]) == 2


def test_a_window_lists_a_yearly_date_at_its_occurrence_inside(ev: Events) -> None:
    ev.store("Sarah's birthday", "birthday", when=BIRTHDAY)
    ev.store("Leap", "birthday", when={"type": "annual", "month": 2, "day": 29}, leap_day_policy="mar_1")
    ev.store("Trip", "event", when={"type": "date", "date": "2027-03-02"})
    page = ev.call("event_list", {"from": "2027-01-01", "to": "2027-12-31", "limit": 2})
    assert [(e["title"], e.get("occurrence_in_window")) for e in page["events"]] == [
        ("Leap", None),  # its next occurrence, 1 March 2027 (mar_1), is inside
        ("Trip", None),
    ]
    rest = ev.call("event_list", {"from": "2027-01-01", "to": "2027-12-31", "cursor": page["next_cursor"]})
    assert [(e["title"], e["occurrence_in_window"]) for e in rest["events"]] == [
        ("Sarah's birthday", "2027-09-14")
    ]
    late = ev.call("event_list", {"from": "2027-10-01", "to": "2027-12-31"})
    assert late["events"] == []
    leap_year = ev.call("event_list", {"from": "2028-01-01", "to": "2028-12-31", "kind": "birthday"})
    assert [(e["title"], e["occurrence_in_window"]) for e in leap_year["events"]] == [
        ("Leap", "2028-02-29"),
        ("Sarah's birthday", "2028-09-14"),
    ]
    upcoming = ev.call("event_list", {})
    assert [e["title"] for e in upcoming["events"]] == ["Sarah's birthday", "Leap", "Trip"]


def test_without_a_configured_target_the_owners_telegram_chat_is_derived(ev: Events) -> None:
    ev.config(
        text='[fermix_core.personalization]\ntimezone = "UTC"\n'
        '[fermix_core.channels.telegram]\nbot_token = "123:abc"\nowner_user_id = 4242\n'
    )
    out = ev.store("Dentist", "appointment", when={"type": "date", "date": "2026-10-01"})
    assert out["delivery"] == {"target": {"platform": "telegram", "address": "4242"}, "source": "derived"}


def test_upcoming_keeps_a_yearly_date_whose_day_passed_before_a_tick_rolled_it(ev: Events) -> None:
    ev.store("Sarah's birthday", "birthday", when={"type": "annual", "month": 9, "day": 5})
    ev.store("Trip", "event", when={"type": "date", "date": "2026-12-01"})
    # The day after the birthday: no `fermix jobs run` has rolled it to next year yet (a tick rolls a
    # yearly date only once its day has passed in every zone).
    after = ev.call("event_list", {}, at=NOW + timedelta(days=5))
    assert [(e["title"], e.get("occurrence_in_window")) for e in after["events"]] == [
        ("Trip", None),
        ("Sarah's birthday", "2027-09-05"),
    ]
    listed = ev.cli("events", "list", at=NOW + timedelta(days=5))
    assert listed.code == 0, listed.stderr
    assert "2027-09-05" in next(line for line in listed.stdout.splitlines() if "Sarah" in line)


def test_a_window_lists_29_february_on_its_policy_day_in_a_common_year(ev: Events) -> None:
    ev.store("Leap", "birthday", when={"type": "annual", "month": 2, "day": 29}, leap_day_policy="mar_1")
    ev.store("Early", "birthday", when={"type": "annual", "month": 2, "day": 29}, leap_day_policy="feb_28")
    march = ev.call("event_list", {"from": "2031-03-01", "to": "2031-03-31"})
    assert [(e["title"], e["occurrence_in_window"]) for e in march["events"]] == [("Leap", "2031-03-01")]
    feb = ev.call("event_list", {"from": "2031-02-01", "to": "2031-02-28"})
    assert [(e["title"], e["occurrence_in_window"]) for e in feb["events"]] == [("Early", "2031-02-28")]


def test_a_new_plan_keeps_a_reminder_that_is_due_but_not_yet_sent(ev: Events) -> None:
    stored = ev.store(
        "Party",
        "event",
        when={"type": "date", "date": "2026-09-03"},
        reminders=[{"type": "days_before", "days": 1}],
    )
    event_id = stored["event"]["event_id"]
    # 10:30 in Berlin: the 09:00 day-before reminder is due, but no tick has sent it yet (the machine was off).
    late = utc("2026-09-02T08:30:00Z")
    updated = ev.call(
        "event_update",
        {
            "event_id": event_id,
            "reminders": [{"type": "days_before", "days": 1}, {"type": "days_before", "days": 0}],
        },
        at=late,
    )
    assert [(r["rule_id"], r["local_time"]) for r in updated["planned_reminders"]] == [
        ("days_before_1", "2026-09-02T09:00+02:00"),  # still owed: the next tick sends it
        ("days_before_0", "2026-09-03T09:00+02:00"),
    ]
    sent = ev.tick(late + timedelta(minutes=1))["sent"]
    assert len(sent) == 1
    assert "Party (event) on Thursday 3 September 2026, tomorrow." in ev.inbox()[-1]["text"]
    # A plan that drops the rule drops its due reminder too.
    again = ev.store(
        "Fair",
        "event",
        when={"type": "date", "date": "2026-09-03"},
        reminders=[{"type": "days_before", "days": 1}],
    )
    ev.call("event_update", {"event_id": again["event"]["event_id"], "no_reminders": True}, at=late)
    assert ev.tick(late + timedelta(minutes=2)).get("sent", []) == []


def test_no_reminders_false_keeps_an_explicit_plan(ev: Events) -> None:
    stored = ev.store(
        "Gym",
        "event",
        when={"type": "date", "date": "2026-10-10"},
        reminders=[{"type": "days_before", "days": 2}],
    )
    event_id = stored["event"]["event_id"]
    updated = ev.call("event_update", {"event_id": event_id, "no_reminders": False, "followup": True})
    assert [r["id"] for r in updated["event"]["plan"]] == ["days_before_2"]
    assert "plan" not in updated["previous"]
    assert [r["rule_id"] for r in updated["planned_reminders"]] == ["days_before_2"]
    off = ev.call("event_update", {"event_id": event_id, "no_reminders": True})
    assert off["event"]["plan"] == [] and off["planned_reminders"] == []
    on = ev.call(
        "event_update", {"event_id": event_id, "no_reminders": False}
    )  # back on: the kind's defaults
    assert [r["id"] for r in on["event"]["plan"]] == ["week_before", "day_before", "day_of"]


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("title", "Dentist\x1b]0;pwned\x07"),  # a terminal escape: retitles the owner's terminal
        ("title", "Dentist\nReminder: ignore this"),  # a second line in every reminder
        ("title", "Dentist\rOverwritten"),
        ("title", "Dentist \u202egnirts"),  # a bidi override
        ("description", "bring the card\x1b[2J"),
        ("description", "x\x00y"),
    ],
)
def test_control_characters_are_refused_and_nothing_is_stored(ev: Events, field: str, text: str) -> None:
    args = {"title": "Dentist", "kind": "event", "when": {"type": "date", "date": "2026-10-01"}, field: text}
    e = ev.error("event_store", args)
    assert e.code == "invalid_input" and e.details == {"field": field} and "plain text" in e.message
    assert ev.count("temporal_events") == 0
    event_id = ev.store("Ok", kind="event", when={"type": "date", "date": "2026-10-01"})["event"]["event_id"]
    assert ev.error("event_update", {"event_id": event_id, field: text}).code == "invalid_input"
    assert ev.call("event_list", {})["events"][0]["title"] == "Ok"


def test_a_description_keeps_its_lines_and_tabs(ev: Events) -> None:
    stored = ev.store(
        "Trip", kind="event", when={"type": "date", "date": "2026-10-01"}, description="pack:\n\tpassport"
    )
    assert stored["event"]["description"] == "pack:\n\tpassport"


def test_snoozing_a_reminder_of_a_date_that_moved_since_names_the_new_date(ev: Events) -> None:
    out = ev.store()  # Dentist, Thursday 10 September 2026 09:30 Berlin
    event_id, rid = out["event"]["event_id"], out["planned_reminders"][0]["reminder_id"]
    assert ev.tick(utc("2026-09-09T07:30:05Z"))["sent"][0]["reminder_id"] == rid
    assert "Thursday 10 September 2026 at 09:30" in ev.inbox()[-1]["text"]
    moved = {"type": "datetime", "date": "2026-09-12", "time": "09:30:00"}
    ev.call(
        "event_update",
        {"event_id": event_id, "when": moved, "owner_direction": "it moved to Saturday"},
        at=utc("2026-09-09T07:35:00Z"),
    )
    # The old day's 09:30 is no boundary any more: a snooze to then needs no confirmation.
    snooze = {"type": "datetime", "date": "2026-09-10", "time": "10:00:00"}
    done = ev.call("reminder_snooze", {"reminder_id": rid, "snooze": snooze}, at=utc("2026-09-09T07:36:00Z"))
    assert done["reminder"]["occurrence"] == "2026-09-12"
    assert ev.tick(utc("2026-09-10T08:00:05Z"))["sent"][0]["event_id"] == event_id
    assert "Saturday 12 September 2026 at 09:30" in ev.inbox()[-1]["text"]


def test_snoozing_a_reminder_of_a_yearly_date_that_moved_names_this_years_new_day(ev: Events) -> None:
    out = ev.store("Sarah's birthday", "birthday", when=BIRTHDAY)  # 14 September; a week before: 7 September
    event_id, rid = out["event"]["event_id"], out["planned_reminders"][0]["reminder_id"]
    assert ev.tick(utc("2026-09-07T07:00:05Z"))["sent"][0]["reminder_id"] == rid
    moved = {"type": "annual", "month": 9, "day": 16}
    ev.call(
        "event_update",
        {"event_id": event_id, "when": moved, "owner_direction": "her birthday is the 16th"},
        at=utc("2026-09-07T07:05:00Z"),
    )
    done = ev.call(
        "reminder_snooze",
        {"reminder_id": rid, "snooze": {"type": "duration", "amount": 1, "unit": "days"}},
        at=utc("2026-09-07T07:06:00Z"),
    )
    assert done["reminder"]["occurrence"] == "2026-09-16"
    ev.tick(utc("2026-09-08T07:06:05Z"))
    assert "Wednesday 16 September 2026" in ev.inbox()[-1]["text"]


def test_a_snooze_of_days_keeps_the_wall_clock_time_across_a_dst_change(ev: Events) -> None:
    out = ev.store(
        "Tax",
        "deadline",
        when={"type": "date", "date": "2026-10-30"},
        reminders=[{"type": "days_before", "days": 6}],
    )
    rid = out["planned_reminders"][0]["reminder_id"]  # Saturday 24 October, 09:00 summer time
    ev.tick(utc("2026-10-24T07:00:05Z"))
    done = ev.call(
        "reminder_snooze",
        {"reminder_id": rid, "snooze": {"type": "duration", "amount": 1, "unit": "days"}},
        at=utc("2026-10-24T07:01:00Z"),
    )
    # Berlin falls back overnight: a day later is Sunday 09:01 winter time, 25 hours on.
    assert done["reminder"]["local_time"] == "2026-10-25T09:01+01:00"
    hours = ev.call(
        "reminder_snooze",
        {"reminder_id": rid, "snooze": {"type": "duration", "amount": 24, "unit": "hours"}},
        at=utc("2026-10-24T07:01:00Z"),
    )
    assert hours["reminder"]["local_time"] == "2026-10-25T08:01+01:00"  # hours are elapsed time
    # 90 days on the calendar is the limit, though the autumn change makes it 90 days and an hour
    ninety = {"type": "duration", "amount": 90, "unit": "days"}
    far = ev.call("reminder_snooze", {"reminder_id": rid, "snooze": ninety, "confirm_past_boundary": True},
                  at=utc("2026-10-24T07:01:00Z"))  # fmt: skip
    assert far["reminder"]["local_time"] == "2027-01-22T09:01+01:00"
    late = {"type": "datetime", "date": "2027-01-22", "time": "09:02:00"}
    assert ev.error("reminder_snooze", {"reminder_id": rid, "snooze": late, "confirm_past_boundary": True},
                    at=utc("2026-10-24T07:01:00Z")).code == "snooze_too_far"  # fmt: skip


def test_a_new_leap_day_policy_moves_the_planned_reminders_of_common_years(ev: Events) -> None:
    at = utc("2027-06-01T08:00:00Z")  # next: 29 February 2028; the one after: 2029, a common year
    leap = {"type": "annual", "month": 2, "day": 29}
    stored = ev.call("event_store", {"title": "Leap", "kind": "birthday", "when": leap, "leap_day_policy": "feb_28"},
                     at=at)  # fmt: skip
    event_id = stored["event"]["event_id"]
    updated = ev.call("event_update", {"event_id": event_id, "leap_day_policy": "mar_1"}, at=at)
    assert updated["previous"] == {"leap_day_policy": "feb_28"}
    assert sorted({r["occurrence"] for r in updated["planned_reminders"]}) == ["2028-02-29", "2029-03-01"]
    # Once 2028's date has passed, a tick rolls on: 2029 has one day of reminders, not two.
    ev.tick(utc("2028-03-05T08:00:00Z"))
    pending = ev.sql("SELECT occurrence_key FROM reminder_occurrences WHERE status = 'pending' ORDER BY 1")
    assert sorted({r[0] for r in pending}) == ["2029-03-01", "2030-03-01"]


def test_an_update_onto_another_events_identity_names_it(ev: Events) -> None:
    day = {"type": "date", "date": "2026-09-21"}
    first = ev.store("Review", "event", when=day)["event"]["event_id"]
    second = ev.store("Retro", "event", when=day)["event"]["event_id"]
    e = ev.error("event_update", {"event_id": second, "title": "review"})
    assert e.code == "identity_conflict" and e.details["event_id"] == first
    assert "Monday 21 September 2026" in e.message and first in e.message
    assert ev.call("event_list", {"text": "Retro"})["count"] == 1  # nothing changed


def test_a_new_time_for_a_delivered_reminder_does_not_send_it_again(ev: Events) -> None:
    stored = ev.store("Sarah's birthday", "birthday", when=BIRTHDAY)  # the week-before note: 7 September
    ev.tick(utc("2026-09-07T07:00:05Z"))
    plan = [{"type": "days_before", "days": 7, "at": "20:00:00"}, {"type": "days_before", "days": 0}]
    updated = ev.call(
        "event_update",
        {"event_id": stored["event"]["event_id"], "reminders": plan},
        at=utc("2026-09-07T08:00:00Z"),
    )
    assert [(r["occurrence"], r["rule_id"]) for r in updated["planned_reminders"]] == [
        ("2026-09-14", "days_before_0"),
        ("2027-09-14", "days_before_7"),
        ("2027-09-14", "days_before_0"),
    ]
    ev.tick(utc("2026-09-07T18:00:05Z"))
    assert [m["text"] for m in ev.inbox()] == [
        "Reminder: Sarah's birthday (birthday) on Monday 14 September 2026, in 7 days."
    ]


def test_a_window_ending_before_today_says_where_the_listing_starts(ev: Events) -> None:
    ev.store("Past", "deadline", when={"type": "date", "date": "2026-08-20"}, no_reminders=True)
    e = ev.error("event_list", {"to": "2026-08-31"})
    assert (
        e.code == "invalid_date_window" and "before today (2026-09-01)" in e.message and "from" in e.message
    )
    assert [
        x["title"] for x in ev.call("event_list", {"from": "2026-08-01", "to": "2026-08-31"})["events"]
    ] == ["Past"]
