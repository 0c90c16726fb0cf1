"""The time rules as tables: the four forms, DST gaps and repeats in two zones, leap days across 2028."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fermix_cli.core.errors import ToolError
from fermix_cli.events import plans
from fermix_cli.events.timeforms import next_yearly, parse_when, resolve_zone_name, zone

TODAY = date(2026, 9, 1)
TODAY_UTC = datetime(2026, 9, 1, tzinfo=UTC)


def when(
    form: dict[str, Any], tz: str = "Europe/Berlin", leap: str | None = None, today: date = TODAY
) -> Any:
    return parse_when(form, zone(tz), today, leap)


@pytest.mark.parametrize(
    ("form", "tz", "code"),
    [
        # spring forward: the hour 02:00-03:00 does not exist
        ({"type": "datetime", "date": "2027-03-28", "time": "02:30:00"}, "Europe/Berlin", "dst_gap"),
        ({"type": "datetime", "date": "2027-03-14", "time": "02:30:00"}, "America/New_York", "dst_gap"),
        # fall back: the hour repeats
        (
            {"type": "datetime", "date": "2026-10-25", "time": "02:30:00"},
            "Europe/Berlin",
            "ambiguous_local_time",
        ),
        (
            {"type": "datetime", "date": "2026-11-01", "time": "01:30:00"},
            "America/New_York",
            "ambiguous_local_time",
        ),
        (
            {"type": "datetime", "date": "2026-11-01", "time": "01:30:00", "utc_offset": "-03:00"},
            "America/New_York",
            "invalid_utc_offset",
        ),
        ({"type": "date", "date": "2026-02-30"}, "UTC", "invalid_when"),
        ({"type": "date", "date": "14.09.2026"}, "UTC", "invalid_when"),
        (
            {"type": "date", "date": "\uff12\uff10\uff12\uff16-09-14"},
            "UTC",
            "invalid_when",
        ),  # fullwidth digits
        ({"type": "date", "date": "2026-09-14\n"}, "UTC", "invalid_when"),
        ({"type": "date", "date": "9999-12-31"}, "Pacific/Kiritimati", "invalid_when"),
        ({"type": "date", "date": "1899-12-31"}, "Pacific/Pago_Pago", "invalid_when"),
        ({"type": "datetime", "date": "0001-01-01", "time": "00:00:00"}, "UTC", "invalid_when"),
        ({"type": "weekly", "day": "monday"}, "UTC", "invalid_when"),
        ({"type": "date", "date": "2026-09-14", "time": "09:00:00"}, "UTC", "invalid_when"),
        ({"type": "relative", "amount": 0, "unit": "days"}, "UTC", "invalid_when"),
        ({"type": "relative", "amount": 3651, "unit": "days"}, "UTC", "invalid_when"),
        ({"type": "relative", "amount": 600, "unit": "weeks"}, "UTC", "invalid_when"),
        ({"type": "relative", "amount": 2, "unit": "months"}, "UTC", "invalid_when"),
        ({"type": "annual", "month": 2, "day": 30}, "UTC", "invalid_when"),
        ({"type": "annual", "month": 13, "day": 1}, "UTC", "invalid_when"),
        ({"type": "annual", "month": 2, "day": 29}, "UTC", "leap_day_policy_required"),
        ("2026-09-14", "UTC", "invalid_when"),
    ],
)
def test_refused_forms(form: Any, tz: str, code: str) -> None:
    with pytest.raises(ToolError) as e:
        when(form, tz)
    assert e.value.code == code


@pytest.mark.parametrize(
    ("tz", "day", "at", "offset", "utc_instant"),
    [
        ("Europe/Berlin", "2026-10-25", "02:30:00", "+02:00", "2026-10-25T00:30:00+00:00"),
        ("Europe/Berlin", "2026-10-25", "02:30:00", "+01:00", "2026-10-25T01:30:00+00:00"),
        ("America/New_York", "2026-11-01", "01:30:00", "-04:00", "2026-11-01T05:30:00+00:00"),
        ("America/New_York", "2026-11-01", "01:30:00", "-05:00", "2026-11-01T06:30:00+00:00"),
        ("America/New_York", "2027-03-14", "03:30:00", None, "2027-03-14T07:30:00+00:00"),
        ("Europe/Berlin", "2027-03-28", "03:00:00", None, "2027-03-28T01:00:00+00:00"),
    ],
)
def test_the_utc_offset_escape_picks_one_instant(
    tz: str, day: str, at: str, offset: str | None, utc_instant: str
) -> None:
    form = {"type": "datetime", "date": day, "time": at, **({"utc_offset": offset} if offset else {})}
    _w, instant = when(form, tz)
    assert instant is not None and instant.astimezone(UTC).isoformat() == utc_instant


def test_relative_counts_from_today_in_the_zone() -> None:
    w, _ = when({"type": "relative", "amount": 2, "unit": "weeks"})
    assert (w.time_kind, w.date) == ("date", "2026-09-15")
    w, instant = when(
        {"type": "relative", "amount": 1, "unit": "days", "time": "18:00:00"}, "America/New_York"
    )
    assert w.date == "2026-09-02" and instant is not None and instant.hour == 18


def test_no_silent_utc_fallback() -> None:
    with pytest.raises(ToolError) as e:
        resolve_zone_name(None, None)
    assert e.value.code == "timezone_not_configured"
    with pytest.raises(ToolError) as e:
        resolve_zone_name("Mars/Olympus", None)
    assert e.value.code == "invalid_timezone"
    assert resolve_zone_name(None, "Asia/Tokyo") == "Asia/Tokyo"
    assert resolve_zone_name("Europe/Paris", "Asia/Tokyo") == "Europe/Paris"


@pytest.mark.parametrize(
    ("policy", "today", "expected"),
    [
        ("feb_28", date(2027, 6, 1), date(2028, 2, 29)),  # 2028 is a leap year: the day itself
        ("mar_1", date(2027, 6, 1), date(2028, 2, 29)),
        ("feb_28", date(2028, 3, 1), date(2029, 2, 28)),
        ("mar_1", date(2028, 3, 1), date(2029, 3, 1)),
        ("feb_28", date(2027, 2, 28), date(2027, 2, 28)),
        ("mar_1", date(2027, 2, 28), date(2027, 3, 1)),
        ("mar_1", date(2028, 2, 29), date(2028, 2, 29)),
    ],
)
def test_leap_day_policies_across_2028(policy: str, today: date, expected: date) -> None:
    assert next_yearly(2, 29, policy, today) == expected


def test_a_yearly_date_materialises_two_occurrences_by_calendar() -> None:
    w, _ = when({"type": "annual", "month": 2, "day": 29}, leap="mar_1", today=date(2027, 6, 15))
    occs = plans.occurrences(w, zone("Europe/Berlin"), date(2027, 6, 15), "mar_1")
    assert [o.day for o in occs] == [date(2028, 2, 29), date(2029, 3, 1)]
    occs = plans.occurrences(w, zone("Europe/Berlin"), date(2028, 3, 2), "feb_28")
    assert [o.day for o in occs] == [date(2029, 2, 28), date(2030, 2, 28)]


@pytest.mark.parametrize(
    ("kind", "time_kind", "ids"),
    [
        ("birthday", "date", ["week_before", "day_of"]),
        ("anniversary", "date", ["week_before", "day_of"]),
        ("appointment", "datetime", ["minutes_before_1440", "minutes_before_60"]),
        ("deadline", "date", ["week_before", "day_before", "day_of"]),
        ("event", "date", ["week_before", "day_before", "day_of"]),
        ("follow_up", "datetime", ["at_time"]),
        ("explicit_reminder", "date", ["day_of"]),
        ("birthday", "datetime", []),
    ],
)
def test_default_plans_per_kind(kind: str, time_kind: str, ids: list[str]) -> None:
    assert [r["id"] for r in plans.default_plan(kind, time_kind)] == ids


@pytest.mark.parametrize(
    ("rules", "time_kind", "code"),
    [
        ([{"type": "days_before", "days": d} for d in range(11)], "date", "too_many_rules"),
        (
            [{"type": "days_before", "days": 2}, {"type": "days_before", "days": 2, "at": "10:00:00"}],
            "date",
            "duplicate_rule_id",
        ),
        ([{"type": "duration_before", "minutes": 30}], "date", "invalid_rule_time"),
        ([{"type": "at_time"}], "date", "invalid_rule_time"),
        ([], "date", "empty_plan"),
        ([{"type": "weekly"}], "date", "invalid_input"),
        ([{"type": "duration_before", "minutes": 0}], "datetime", "invalid_input"),
    ],
)
def test_explicit_plan_checks(rules: list[dict[str, Any]], time_kind: str, code: str) -> None:
    with pytest.raises(ToolError) as e:
        plans.build_plan("event", time_kind, rules, None)
    assert e.value.code == code


def test_ten_rules_are_allowed_and_replace_the_defaults() -> None:
    plan = plans.build_plan("birthday", "date", [{"type": "days_before", "days": d} for d in range(10)], None)
    assert [r["id"] for r in plan] == [f"days_before_{d}" for d in range(10)]
    assert plans.build_plan("birthday", "date", None, True) == []


def test_reminders_at_nine_follow_the_wall_clock_across_dst() -> None:
    w, _ = when({"type": "date", "date": "2026-11-02"}, "America/New_York")
    tz = zone("America/New_York")
    occ = plans.occurrences(w, tz, TODAY, None)
    due = {
        p.rule_id: p.due.isoformat()
        for p in plans.planned(plans.default_plan("event", "date"), occ, tz, TODAY_UTC)
    }
    # 7 days before is still summer time (-04:00), the day itself winter time (-05:00): both at 09:00 local
    assert due == {
        "week_before": "2026-10-26T13:00:00+00:00",
        "day_before": "2026-11-01T14:00:00+00:00",
        "day_of": "2026-11-02T14:00:00+00:00",
    }


def test_a_reminder_inside_the_spring_gap_lands_after_it() -> None:
    w, _ = when({"type": "date", "date": "2027-03-29"}, "Europe/Berlin")
    tz = zone("Europe/Berlin")
    plan = plans.build_plan("event", "date", [{"type": "days_before", "days": 1, "at": "02:30:00"}], None)
    (p,) = plans.planned(plan, plans.occurrences(w, tz, TODAY, None), tz, TODAY_UTC)
    assert (
        p.due.isoformat() == "2027-03-28T01:30:00+00:00"
    )  # 03:30 CEST, the first minute that exists after 02:30


ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo", "UTC")


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(ZONES),
    st.dates(min_value=date(2026, 1, 1), max_value=date(2030, 12, 31)),
    st.times().map(lambda t: t.replace(microsecond=0)),
)
@example("Europe/Berlin", date(2026, 10, 25), time(2, 30))
@example("America/New_York", date(2027, 3, 14), time(2, 30))
@example("Australia/Lord_Howe", date(2027, 4, 4), time(1, 45))  # falls back half an hour
def test_a_stored_local_time_is_exactly_the_one_named_or_refused(tz: str, day: date, at: Any) -> None:
    form = {"type": "datetime", "date": day.isoformat(), "time": at.isoformat()}
    try:
        _w, instant = when(form, tz)
    except ToolError as e:
        assert e.code in ("dst_gap", "ambiguous_local_time")
        if e.code == "ambiguous_local_time":  # each listed offset picks an instant that reads back the same
            for offset in e.details["offsets"]:
                _w, picked = when({**form, "utc_offset": offset}, tz)
                assert picked is not None
                local = picked.astimezone(UTC).astimezone(zone(tz))
                assert (local.date(), local.time()) == (day, at)
        return
    assert instant is not None
    local = instant.astimezone(UTC).astimezone(zone(tz))
    assert (local.date(), local.time()) == (day, at)


@pytest.mark.parametrize(
    ("day", "at", "expected"),
    [
        # Berlin springs forward 2026-03-29 02:00 -> 03:00: an hour before 03:30 CEST is 02:30 CEST...
        # which does not exist; elapsed, it is 00:30Z. A day before 04:30 CEST is 24 h earlier.
        ("2026-03-29", "03:30:00", {"minutes_before_60": "2026-03-29T00:30:00+00:00",
                                    "minutes_before_1440": "2026-03-28T01:30:00+00:00"}),
        ("2026-03-29", "04:30:00", {"minutes_before_60": "2026-03-29T01:30:00+00:00",
                                    "minutes_before_1440": "2026-03-28T02:30:00+00:00"}),
        # Berlin falls back 2026-10-25 03:00 -> 02:00: 03:30 CET is 02:30Z.
        ("2026-10-25", "03:30:00", {"minutes_before_60": "2026-10-25T01:30:00+00:00",
                                    "minutes_before_1440": "2026-10-24T02:30:00+00:00"}),
    ],
)  # fmt: skip
def test_minutes_before_are_elapsed_time_across_dst(day: str, at: str, expected: dict[str, str]) -> None:
    """An appointment's "1 h before" and "24 h before" are that much time before it, whatever the
    wall clock did in between (day reminders keep their wall-clock hour; see above)."""
    tz = zone("Europe/Berlin")
    w, _ = when({"type": "datetime", "date": day, "time": at}, "Europe/Berlin")
    occ = plans.occurrences(w, tz, date(2026, 3, 1), None)
    plan = plans.default_plan("appointment", "datetime")
    plans.check_plan_times(plan, occ[0], tz)  # no invalid_rule_time
    due = {
        p.rule_id: p.due.isoformat() for p in plans.planned(plan, occ, tz, datetime(2026, 3, 1, tzinfo=UTC))
    }
    assert {k: v for k, v in due.items() if k in expected} == expected


def test_a_relative_date_at_a_repeated_hour_takes_utc_offset() -> None:
    # From 23 October, "in 2 days at 02:30" is 25 October 2026, when Berlin's 02:30 happens twice.
    form = {"type": "relative", "amount": 2, "unit": "days", "time": "02:30:00"}
    with pytest.raises(ToolError) as e:
        when(form, today=date(2026, 10, 23))
    assert e.value.code == "ambiguous_local_time" and "utc_offset" in e.value.message
    w, instant = when({**form, "utc_offset": "+01:00"}, today=date(2026, 10, 23))
    assert (w.date, w.fold) == ("2026-10-25", 1)
    assert instant is not None and instant.astimezone(UTC).isoformat() == "2026-10-25T01:30:00+00:00"
    with pytest.raises(ToolError) as e:
        when({"type": "relative", "amount": 2, "unit": "days", "utc_offset": "+01:00"})
    assert e.value.code == "invalid_when"
