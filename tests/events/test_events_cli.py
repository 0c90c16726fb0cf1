"""`fermix events list|add|rm|snooze`: human time input, the same tools underneath."""

from __future__ import annotations

import shlex

from tests.events.world import Events, utc


def test_add_list_snooze_rm_with_human_input(ev: Events) -> None:
    r = ev.cli(
        "events", "add", "Dentist", "--kind", "appointment", "--on", "2026-09-10", "--at", "09:30", "--json"
    )
    assert r.code == 0, r.stderr
    stored = r.json()
    assert stored["event"]["when"] == {"type": "datetime", "date": "2026-09-10", "time": "09:30:00"}
    r = ev.cli("events", "add", "Sarah", "--kind", "birthday", "--yearly", "10-14", "--remind", "7d@08:30",
               "--remind", "0d")  # fmt: skip
    assert r.code == 0 and r.stdout.startswith("Stored Sarah: Wednesday 14 October 2026, every year."), (
        r.stderr
    )
    listing = ev.cli("events", "list")
    assert listing.code == 0
    lines = listing.stdout.splitlines()
    assert lines[0].startswith(stored["event"]["event_id"] + "  2026-09-10 09:30  appointment")
    assert any("days_before_7 at 2026-10-07T08:30+02:00" in line for line in lines)
    # the gap and the leap day are refused with the tool's own tags and exit codes
    r = ev.cli("events", "add", "Gap", "--on", "2027-03-28", "--at", "02:30")
    assert r.code == 1 and '"dst_gap"' in r.stderr
    r = ev.cli("events", "add", "Leap", "--kind", "birthday", "--yearly", "02-29")
    assert r.code == 1 and '"leap_day_policy_required"' in r.stderr
    # deliver the first reminder, then snooze it and cancel the date from the terminal
    ev.tick(utc("2026-09-09T07:30:05Z"))
    r = ev.cli("events", "snooze", "--for", "2h", at=utc("2026-09-09T07:40:00Z"))
    assert r.code == 0 and "again at Wednesday 09 September 2026 11:40" in r.stdout, r.stderr
    r = ev.cli("events", "rm", "--json", at=utc("2026-09-09T07:41:00Z"))
    assert r.code == 0 and r.json()["event"]["status"] == "cancelled"
    r = ev.cli("events", "rm", stored["event"]["event_id"])
    assert r.code == 1 and '"not_active"' in r.stderr


def test_event_list_takes_from_as_a_flag_and_pages(ev: Events) -> None:
    for day in (3, 4, 5):
        ev.store(f"Thing {day}", "deadline", when={"type": "date", "date": f"2026-09-0{day}"})
    r = ev.cli("tool", "event_list", "--from", "2026-09-04", "--limit", "1")
    assert r.code == 0, r.stderr
    page = r.json()
    assert [e["title"] for e in page["events"]] == ["Thing 4"]
    r = ev.cli(
        "tool", "event_list", "--json", f'{{"cursor": "{page["next_cursor"]}"}}', "--from", "2026-09-04"
    )
    assert [e["title"] for e in r.json()["events"]] == ["Thing 5"]
    r = ev.cli("tool", "event_list", "--json", '{"from": "2026-09-01", "to": "2028-09-03"}')
    assert r.code == 1 and r.error()["code"] == "date_window_too_wide"


def test_add_in_days_at_a_repeated_hour_takes_utc_offset(ev: Events) -> None:
    at = utc("2026-10-23T08:00:00Z")
    r = ev.cli(
        "events", "add", "Call", "--kind", "explicit_reminder", "--in", "2 days", "--at", "02:30", at=at
    )
    assert r.code == 1 and '"ambiguous_local_time"' in r.stderr
    r = ev.cli("events", "add", "Call", "--kind", "explicit_reminder", "--in", "2 days", "--at", "02:30",
               "--utc-offset", "+01:00", "--json", at=at)  # fmt: skip
    assert r.code == 0, r.stderr
    assert [p["scheduled_for"] for p in r.json()["planned_reminders"]] == ["2026-10-25T01:30:00.000000Z"]


def test_snooze_until_a_repeated_hour_takes_utc_offset(ev: Events) -> None:
    ev.store("Tax", "deadline", when={"type": "date", "date": "2026-10-30"},
             reminders=[{"type": "days_before", "days": 6}])  # fmt: skip
    ev.tick(utc("2026-10-24T07:00:05Z"))  # delivered to the owner's inbox, Saturday 09:00
    at = utc("2026-10-24T07:01:00Z")
    r = ev.cli("events", "snooze", "--until", "2026-10-25 02:30", at=at)
    assert r.code == 1 and '"ambiguous_local_time"' in r.stderr
    r = ev.cli("events", "snooze", "--until", "2026-10-25 02:30", "--utc-offset", "+01:00", "--json", at=at)
    assert r.code == 0, r.stderr
    assert r.json()["reminder"]["scheduled_for"] == "2026-10-25T01:30:00.000000Z"  # the second 02:30


def test_the_next_page_hint_keeps_the_listings_filters(ev: Events) -> None:
    for day in (3, 4, 5):
        ev.store(f"Sarah's thing {day}", "deadline", when={"type": "date", "date": f"2026-09-0{day}"})
    ev.store("Other", "deadline", when={"type": "date", "date": "2026-09-06"})
    r = ev.cli("events", "list", "--text", "sarah's", "--limit", "2")
    assert r.code == 0, r.stderr
    hint = r.stdout.splitlines()[-1]
    assert hint.startswith("more: fermix events list --text ")
    args = shlex.split(hint.removeprefix("more: fermix "))
    page = ev.cli(*args)
    assert page.code == 0, page.stderr
    assert "Sarah's thing 5" in page.stdout
    assert "Other" not in page.stdout and "thing 3" not in page.stdout and "thing 4" not in page.stdout
