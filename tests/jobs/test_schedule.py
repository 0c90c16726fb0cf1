"""The schedule grammar: what parses, what is refused and why, and when each schedule runs next."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fermix_cli.core.errors import ToolError
from fermix_cli.jobs.schedule import CronFields, Schedule, first_run, is_stale, next_run, parse_schedule


def utc(text: str) -> datetime:
    """An aware UTC datetime from `YYYY-MM-DDTHH:MM[:SS]`."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def iterate(schedule: Schedule, after: datetime, count: int) -> list[datetime]:
    """`count` successive next_run results, each searched from the one before."""
    runs: list[datetime] = []
    for _ in range(count):
        after = next_run(schedule, after, previous=runs[-1] if runs else None)
        runs.append(after)
    return runs


def cron_matches(fields: CronFields, local: datetime) -> bool:
    """Whether a local wall-clock time satisfies every cron field, day-of-month AND day-of-week."""
    return (
        local.minute in fields.minutes
        and local.hour in fields.hours
        and local.day in fields.days
        and local.month in fields.months
        and local.isoweekday() % 7 in fields.weekdays
    )


# --- Parsing: accepted -----------------------------------------------------------------------------------

ACCEPTED = [
    # (expression, timezone, kind, normalised expression)
    ("every 15 minutes", "UTC", "interval", "every 15 minutes"),
    ("every 1 minute", "UTC", "interval", "every 1 minute"),
    ("every 1 minutes", "UTC", "interval", "every 1 minute"),
    ("every 2 minute", "UTC", "interval", "every 2 minutes"),
    ("EVERY 3 Hours", "Europe/Berlin", "interval", "every 3 hours"),
    ("  every   1   day ", "UTC", "interval", "every 1 day"),
    ("every 366 days", "UTC", "interval", "every 366 days"),
    ("every 10 hours", "America/New_York", "interval", "every 10 hours"),
    ("0 8 * * *", "UTC", "cron", "0 8 * * *"),
    ("  0   8 * *  1-5 ", "UTC", "cron", "0 8 * * 1-5"),
    ("* * * * *", "UTC", "cron", "* * * * *"),
    ("*/15 9-17 * * 1-5", "Europe/Berlin", "cron", "*/15 9-17 * * 1-5"),
    ("0,30 * * * *", "UTC", "cron", "0,30 * * * *"),
    ("5/20 * * * *", "UTC", "cron", "5/20 * * * *"),
    ("0 0 1-10/3 * *", "UTC", "cron", "0 0 1-10/3 * *"),
    ("59 23 31 12 7", "UTC", "cron", "59 23 31 12 7"),
    ("0 0 * * 0-7", "UTC", "cron", "0 0 * * 0-7"),
    ("05 09 * * *", "UTC", "cron", "05 09 * * *"),
    ("0 0 29 2 *", "UTC", "cron", "0 0 29 2 *"),
    ("0 0 13 * 5", "UTC", "cron", "0 0 13 * 5"),
    ("2026-03-29T08:00:00+02:00", "UTC", "once", "2026-03-29T08:00:00+02:00"),
    ("2026-03-29T06:00:00Z", "UTC", "once", "2026-03-29T06:00:00+00:00"),
    ("2026-03-29t06:00z", "UTC", "once", "2026-03-29T06:00:00+00:00"),
    ("2026-03-29 06:00:00-05:00", "UTC", "once", "2026-03-29T06:00:00-05:00"),
    ("2028-02-29T12:00:00.250+05:45", "Asia/Kathmandu", "once", "2028-02-29T12:00:00.250000+05:45"),
]


@pytest.mark.parametrize(("expr", "zone", "kind", "normalised"), ACCEPTED)
def test_accepted_expressions(expr: str, zone: str, kind: str, normalised: str) -> None:
    schedule = parse_schedule(expr, zone)
    assert (schedule.kind, schedule.expression, schedule.timezone) == (kind, normalised, zone)


EXPANSIONS = [
    # (expression, attribute of CronFields, expected values)
    ("*/15 * * * *", "minutes", (0, 15, 30, 45)),
    ("5/20 * * * *", "minutes", (5, 25, 45)),
    ("1-10/4,50 * * * *", "minutes", (1, 5, 9, 50)),
    ("0 22-23,0-1 * * *", "hours", (0, 1, 22, 23)),
    ("0 */12 * * *", "hours", (0, 12)),
    ("0 0 1-10/3 * *", "days", frozenset({1, 4, 7, 10})),
    ("0 0 * */4 *", "months", frozenset({1, 5, 9})),
    ("0 0 * 11/2 *", "months", frozenset({11})),
    ("0 0 * * 7", "weekdays", frozenset({0})),
    ("0 0 * * 5-7", "weekdays", frozenset({5, 6, 0})),
    ("0 0 * * 1/2", "weekdays", frozenset({1, 3, 5})),
    ("0 0 * * 7/3", "weekdays", frozenset({0})),
    ("0 0 * * 1-7/2", "weekdays", frozenset({1, 3, 5, 0})),
    ("0 0 * * */2", "weekdays", frozenset({0, 2, 4, 6})),
    ("0 0 * * *", "weekdays", frozenset(range(7))),
    ("0 0 * * */7", "weekdays", frozenset({0})),
]


@pytest.mark.parametrize(("expr", "attribute", "expected"), EXPANSIONS)
def test_cron_field_expansion(expr: str, attribute: str, expected: object) -> None:
    assert getattr(parse_schedule(expr).parsed, attribute) == expected


# --- Parsing: refused ------------------------------------------------------------------------------------

REFUSED = [
    # (expression, timezone, error code, fragment of the reason)
    ("daily at 8am", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("every day at 9", "UTC", "invalid_schedule", "interval"),
    ("@daily", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("@every 5m", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("", "UTC", "invalid_schedule", "empty"),
    ("   ", "UTC", "invalid_schedule", "empty"),
    ("every 0 minutes", "UTC", "invalid_schedule", "N >= 1"),
    ("every 05 minutes", "UTC", "invalid_schedule", "no leading zero"),
    ("every -5 minutes", "UTC", "invalid_schedule", "N >= 1"),
    ("every 1.5 hours", "UTC", "invalid_schedule", "interval"),
    ("every minute", "UTC", "invalid_schedule", "interval"),
    ("every 5 weeks", "UTC", "invalid_schedule", "interval"),
    ("every 5 mins", "UTC", "invalid_schedule", "interval"),
    ("every 367 days", "UTC", "invalid_schedule", "at most 366 days"),
    ("every 99999999999999999999 minutes", "UTC", "invalid_schedule", "at most 366 days"),
    ("every 5 minutes", "Mars/Olympus", "invalid_timezone", ""),
    ("60 * * * *", "UTC", "invalid_schedule", "minute term `60` is outside 0-59"),
    ("* 24 * * *", "UTC", "invalid_schedule", "hour term `24` is outside 0-23"),
    ("* * 0 * *", "UTC", "invalid_schedule", "day-of-month term `0` is outside 1-31"),
    ("* * 32 * *", "UTC", "invalid_schedule", "day-of-month term `32`"),
    ("* * * 0 *", "UTC", "invalid_schedule", "month term `0` is outside 1-12"),
    ("* * * 13 *", "UTC", "invalid_schedule", "month term `13`"),
    ("* * * * 8", "UTC", "invalid_schedule", "day-of-week term `8` is outside 0-7"),
    ("1- * * * *", "UTC", "invalid_schedule", "minute term `1-` is malformed"),
    ("-1 * * * *", "UTC", "invalid_schedule", "minute term `-1` is malformed"),
    ("*/0 * * * *", "UTC", "invalid_schedule", "minute term `*/0` has a step outside 1-59"),
    ("*/60 * * * *", "UTC", "invalid_schedule", "step outside 1-59"),
    ("5/ * * * *", "UTC", "invalid_schedule", "malformed"),
    ("*/5-10 * * * *", "UTC", "invalid_schedule", "malformed"),
    ("1,,2 * * * *", "UTC", "invalid_schedule", "minute term `` is malformed"),
    ("1, * * * *", "UTC", "invalid_schedule", "malformed"),
    ("** * * * *", "UTC", "invalid_schedule", "malformed"),
    ("1-2-3 * * * *", "UTC", "invalid_schedule", "malformed"),
    ("100 * * * *", "UTC", "invalid_schedule", "malformed"),
    ("30-10 * * * *", "UTC", "invalid_schedule", "reversed range"),
    ("0 0 * * 7-1", "UTC", "invalid_schedule", "reversed range"),
    ("0 0 * * 0-8", "UTC", "invalid_schedule", "outside 0-7"),
    ("0 0 * jan *", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("0 0 * * mon", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("0 0 L * *", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("0 0 ? * *", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("0 0 * * 1#2", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("* * * * * *", "UTC", "invalid_schedule", "6 fields"),
    ("0 0 * * * 2026", "UTC", "invalid_schedule", "6 fields"),
    ("* * * *", "UTC", "invalid_schedule", "4 fields"),
    ("0 8 * * *", "Europe/Nowhere", "invalid_timezone", ""),
    ("0 8 * * *", "europe/berlin", "invalid_timezone", ""),
    ("0 8 * * *", "", "invalid_timezone", ""),
    ("0 8 * * *", "localtime", "invalid_timezone", ""),
    ("0 8 * * *", "../etc/passwd", "invalid_timezone", ""),
    ("0 8 * * *", "/usr/share/zoneinfo/UTC", "invalid_timezone", ""),
    ("0 8 * * *", "Europe", "invalid_timezone", ""),
    ("0 0 30 2 *", "UTC", "invalid_schedule", "unsatisfiable"),
    ("0 0 31 2 *", "UTC", "invalid_schedule", "unsatisfiable"),
    ("0 0 31 4,6,9,11 *", "UTC", "invalid_schedule", "unsatisfiable"),
    ("0 0 30-31 2 1", "UTC", "invalid_schedule", "unsatisfiable"),
    ("2026-03-29T08:00:00", "UTC", "invalid_schedule", "no UTC offset"),
    ("2026-03-29 08:00", "UTC", "invalid_schedule", "no UTC offset"),
    ("2026-03-29", "UTC", "invalid_schedule", "no UTC offset"),
    ("2026-03-29T08:00:00+0200", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("2026-03-29T08:00:00+02", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("2026-02-30T08:00:00Z", "UTC", "invalid_schedule", "not a real calendar date"),
    ("2027-02-29T08:00:00Z", "UTC", "invalid_schedule", "not a real calendar date"),
    ("2026-03-29T24:00:00Z", "UTC", "invalid_schedule", "not a real calendar date"),
    ("2026-03-29T08:00:00+25:00", "UTC", "invalid_schedule", "not a real calendar date"),
    ("2026-W13-7T08:00Z", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("20260329T080000Z", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("2026-03-29T08:00:00Z", "Not/AZone", "invalid_timezone", ""),
    ("tomorrow", "UTC", "invalid_schedule", "not a recognised schedule"),
    ("０ ８ * * *", "UTC", "invalid_schedule", "not a recognised schedule"),
]


@pytest.mark.parametrize(("expr", "zone", "code", "reason"), REFUSED)
def test_refused_expressions(expr: str, zone: str, code: str, reason: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_schedule(expr, zone)
    assert caught.value.code == code
    if code == "invalid_schedule":
        assert reason in caught.value.details["reason"]
        assert caught.value.details["schedule"] == expr
    else:
        assert caught.value.details["timezone"] == zone
        assert "Europe/Berlin" in caught.value.message


@pytest.mark.parametrize("expr", ["daily at 8am", "60 * * * *", "2026-03-29T08:00:00", "every 0 days"])
def test_refusal_message_states_the_grammar(expr: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_schedule(expr)
    message = caught.value.message
    for sample in (
        "every 15 minutes",
        "0 8 * * 1-5",
        "2026-03-29T08:00:00+02:00",
        "Z`",
        "0 and 7 are Sunday",
    ):
        assert sample in message


def test_non_string_expression_is_refused() -> None:
    with pytest.raises(ToolError) as caught:
        parse_schedule(15)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_schedule"


# --- Cron across DST -------------------------------------------------------------------------------------

DST_CASES = [
    # (expression, zone, after (UTC), the next runs (UTC))
    # Europe/Berlin spring forward 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00Z.
    (
        "30 2 * * *",
        "Europe/Berlin",
        "2026-03-27T12:00",
        ["2026-03-28T01:30", "2026-03-30T00:30", "2026-03-31T00:30"],
    ),
    ("0 2 * * *", "Europe/Berlin", "2026-03-28T12:00", ["2026-03-30T00:00", "2026-03-31T00:00"]),
    ("0 3 * * *", "Europe/Berlin", "2026-03-28T12:00", ["2026-03-29T01:00", "2026-03-30T01:00"]),
    (
        "0 * * * *",
        "Europe/Berlin",
        "2026-03-28T23:30",
        ["2026-03-29T00:00", "2026-03-29T01:00", "2026-03-29T02:00"],
    ),
    (
        "*/30 * * * *",
        "Europe/Berlin",
        "2026-03-29T00:10",
        ["2026-03-29T00:30", "2026-03-29T01:00", "2026-03-29T01:30"],
    ),
    (
        "0 9 * * *",
        "Europe/Berlin",
        "2026-03-28T00:00",
        ["2026-03-28T08:00", "2026-03-29T07:00", "2026-03-30T07:00"],
    ),
    # Europe/Berlin fall back 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00Z; 02:00-02:59 happens twice.
    (
        "30 2 * * *",
        "Europe/Berlin",
        "2026-10-24T12:00",
        ["2026-10-25T00:30", "2026-10-26T01:30", "2026-10-27T01:30"],
    ),
    ("30 2 * * *", "Europe/Berlin", "2026-10-25T00:30", ["2026-10-26T01:30"]),
    ("30 2 * * *", "Europe/Berlin", "2026-10-25T01:15", ["2026-10-26T01:30"]),
    (
        "0 * * * *",
        "Europe/Berlin",
        "2026-10-24T23:30",
        ["2026-10-25T00:00", "2026-10-25T02:00", "2026-10-25T03:00"],
    ),
    (
        "*/30 * * * *",
        "Europe/Berlin",
        "2026-10-25T00:10",
        ["2026-10-25T00:30", "2026-10-25T02:00", "2026-10-25T02:30"],
    ),
    ("*/30 * * * *", "Europe/Berlin", "2026-10-25T01:15", ["2026-10-25T02:00"]),
    (
        "0 9 * * *",
        "Europe/Berlin",
        "2026-10-24T00:00",
        ["2026-10-24T07:00", "2026-10-25T08:00", "2026-10-26T08:00"],
    ),
    # America/New_York spring forward 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00Z.
    (
        "30 2 * * *",
        "America/New_York",
        "2026-03-07T00:00",
        ["2026-03-07T07:30", "2026-03-09T06:30", "2026-03-10T06:30"],
    ),
    (
        "0 * * * *",
        "America/New_York",
        "2026-03-08T05:30",
        ["2026-03-08T06:00", "2026-03-08T07:00", "2026-03-08T08:00"],
    ),
    (
        "*/30 * * * *",
        "America/New_York",
        "2026-03-08T06:10",
        ["2026-03-08T06:30", "2026-03-08T07:00", "2026-03-08T07:30"],
    ),
    (
        "0 8 * * *",
        "America/New_York",
        "2026-03-07T00:00",
        ["2026-03-07T13:00", "2026-03-08T12:00", "2026-03-09T12:00"],
    ),
    # America/New_York fall back 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00Z; 01:00-01:59 happens twice.
    ("30 1 * * *", "America/New_York", "2026-10-31T12:00", ["2026-11-01T05:30", "2026-11-02T06:30"]),
    ("30 1 * * *", "America/New_York", "2026-11-01T06:10", ["2026-11-02T06:30"]),
    (
        "30 2 * * *",
        "America/New_York",
        "2026-10-30T12:00",
        ["2026-10-31T06:30", "2026-11-01T07:30", "2026-11-02T07:30"],
    ),
    (
        "0 * * * *",
        "America/New_York",
        "2026-11-01T04:30",
        ["2026-11-01T05:00", "2026-11-01T07:00", "2026-11-01T08:00"],
    ),
    (
        "*/30 * * * *",
        "America/New_York",
        "2026-11-01T05:10",
        ["2026-11-01T05:30", "2026-11-01T07:00", "2026-11-01T07:30"],
    ),
    (
        "0 8 * * *",
        "America/New_York",
        "2026-10-31T00:00",
        ["2026-10-31T12:00", "2026-11-01T13:00", "2026-11-02T13:00"],
    ),
    # The reference example: Monday 09:00 New York is 13:00Z in summer and 14:00Z in winter.
    ("0 9 * * 1", "America/New_York", "2026-07-01T00:00", ["2026-07-06T13:00", "2026-07-13T13:00"]),
    ("0 9 * * 1", "America/New_York", "2026-01-01T00:00", ["2026-01-05T14:00", "2026-01-12T14:00"]),
    # A half-hour DST shift (02:00 becomes 02:30) and a transition at midnight (00:00 does not exist).
    ("15 2 * * *", "Australia/Lord_Howe", "2026-10-02T12:00", ["2026-10-02T15:45", "2026-10-04T15:15"]),
    ("45 2 * * *", "Australia/Lord_Howe", "2026-10-02T12:00", ["2026-10-02T16:15", "2026-10-03T15:45"]),
    ("0 0 * * *", "America/Santiago", "2026-09-04T12:00", ["2026-09-05T04:00", "2026-09-07T03:00"]),
    # Samoa skipped 2011-12-30 entirely.
    ("0 12 * * *", "Pacific/Apia", "2011-12-29T00:00", ["2011-12-29T22:00", "2011-12-30T22:00"]),
    ("0 12 30 12 *", "Pacific/Apia", "2011-12-01T00:00", ["2012-12-29T22:00"]),
]


@pytest.mark.parametrize(("expr", "zone", "after", "expected"), DST_CASES)
def test_cron_across_dst(expr: str, zone: str, after: str, expected: list[str]) -> None:
    runs = iterate(parse_schedule(expr, zone), utc(after), len(expected))
    assert runs == [utc(text) for text in expected]
    assert all(run.tzinfo is UTC for run in runs)


# --- Cron day rules and leap years -----------------------------------------------------------------------

CALENDAR_CASES = [
    # (expression, after (UTC), the next runs (UTC))
    (
        "0 0 13 * 5",
        "2026-01-01T00:00",
        ["2026-02-13T00:00", "2026-03-13T00:00", "2026-11-13T00:00", "2027-08-13T00:00"],
    ),
    ("0 12 * * 7", "2026-01-01T00:00", ["2026-01-04T12:00", "2026-01-11T12:00"]),
    ("0 12 * * 0", "2026-01-01T00:00", ["2026-01-04T12:00", "2026-01-11T12:00"]),
    ("0 12 * * 6-7", "2026-01-01T00:00", ["2026-01-03T12:00", "2026-01-04T12:00", "2026-01-10T12:00"]),
    ("0 0 1 * 1", "2026-01-01T00:00", ["2026-06-01T00:00", "2027-02-01T00:00", "2027-03-01T00:00"]),
    ("0 0 31 * *", "2026-01-31T00:00", ["2026-03-31T00:00", "2026-05-31T00:00"]),
    ("0 0 29 2 *", "2026-01-01T00:00", ["2028-02-29T00:00", "2032-02-29T00:00", "2036-02-29T00:00"]),
    ("0 0 29 2 *", "2097-01-01T00:00", ["2104-02-29T00:00"]),
    ("0 0 29 2 1", "2026-01-01T00:00", ["2044-02-29T00:00"]),
    ("59 23 31 12 *", "2026-12-31T23:59", ["2027-12-31T23:59"]),
    ("* * * * *", "2026-12-31T23:59:30", ["2027-01-01T00:00", "2027-01-01T00:01"]),
    ("0 9 * * *", "2026-05-01T09:00", ["2026-05-02T09:00"]),
    ("0 9 * * *", "2026-05-01T08:59:59.999999", ["2026-05-01T09:00"]),
]


@pytest.mark.parametrize(("expr", "after", "expected"), CALENDAR_CASES)
def test_cron_calendar(expr: str, after: str, expected: list[str]) -> None:
    assert iterate(parse_schedule(expr), utc(after), len(expected)) == [utc(text) for text in expected]


def test_day_of_month_and_day_of_week_both_must_match() -> None:
    runs = iterate(parse_schedule("0 0 13 * 5"), utc("2026-01-01T00:00"), 12)
    assert all(run.day == 13 and run.isoweekday() == 5 for run in runs)
    # Vixie's OR would also fire on every Friday and every 13th; the AND rule gives a dozen over years.
    assert runs[-1].year >= 2030


FIRST_RUN_REFUSED = [
    # (expression, zone, now (UTC)): no match within one year on the zone's wall clock
    ("0 0 29 2 *", "UTC", "2026-01-01T00:00"),
    ("0 0 29 2 *", "UTC", "2027-02-28T12:00"),
    ("0 0 29 2 *", "UTC", "2027-02-28T23:59"),
    ("0 0 29 2 *", "UTC", "2028-02-29T00:00"),
    ("0 0 29 2 1", "UTC", "2027-03-01T00:00"),
    ("0 0 29 2 *", "Pacific/Kiritimati", "2027-02-28T09:59"),
]


@pytest.mark.parametrize(("expr", "zone", "now"), FIRST_RUN_REFUSED)
def test_first_run_refuses_a_cron_with_no_match_within_a_year(expr: str, zone: str, now: str) -> None:
    with pytest.raises(ToolError) as caught:
        first_run(parse_schedule(expr, zone), utc(now))
    assert caught.value.code == "invalid_schedule"
    assert "no run within one year" in caught.value.details["reason"]
    assert "every 15 minutes" in caught.value.message


FIRST_RUN_ACCEPTED = [
    # (expression, zone, now (UTC), first run (UTC))
    ("0 0 29 2 *", "UTC", "2027-03-01T00:00", "2028-02-29T00:00"),
    ("0 0 29 2 *", "UTC", "2028-01-01T00:00", "2028-02-29T00:00"),
    ("0 0 29 2 *", "Pacific/Kiritimati", "2027-02-28T10:00", "2028-02-28T10:00"),
    ("0 0 1 1 *", "UTC", "2028-01-01T00:00", "2029-01-01T00:00"),
    # A year after Feb 29 runs to Mar 1, so Feb 28 18:00 of the next year is still within it.
    ("0 18 28 2 *", "UTC", "2028-02-29T12:00", "2029-02-28T18:00"),
    ("59 23 31 12 *", "UTC", "2026-12-31T23:59", "2027-12-31T23:59"),
    ("0 9 * * 1", "America/New_York", "2026-07-01T00:00", "2026-07-06T13:00"),
]


@pytest.mark.parametrize(("expr", "zone", "now", "expected"), FIRST_RUN_ACCEPTED)
def test_first_run_of_a_cron(expr: str, zone: str, now: str, expected: str) -> None:
    assert first_run(parse_schedule(expr, zone), utc(now)) == utc(expected)


# --- Intervals -------------------------------------------------------------------------------------------

INTERVAL_CASES = [
    # (expression, after, previous scheduled time or None, next run)
    ("every 15 minutes", "2026-05-01T12:07:30", None, "2026-05-01T12:22:30"),
    ("every 15 minutes", "2026-05-01T10:05", "2026-05-01T10:00", "2026-05-01T10:15"),
    ("every 15 minutes", "2026-05-01T12:07", "2026-05-01T10:00", "2026-05-01T12:15"),
    ("every 15 minutes", "2026-05-01T12:15", "2026-05-01T10:00", "2026-05-01T12:30"),
    ("every 15 minutes", "2026-05-01T09:00", "2026-05-01T10:00", "2026-05-01T10:15"),
    ("every 2 hours", "2026-05-03T00:00", "2026-05-01T01:00", "2026-05-03T01:00"),
    ("every 1 day", "2026-03-28T12:00", "2026-03-28T08:00", "2026-03-29T08:00"),
    ("every 3 days", "2027-01-01T00:00", "2026-01-01T06:00", "2027-01-02T06:00"),
]


@pytest.mark.parametrize(("expr", "after", "previous", "expected"), INTERVAL_CASES)
def test_interval_next_run(expr: str, after: str, previous: str | None, expected: str) -> None:
    earlier = utc(previous) if previous else None
    assert next_run(parse_schedule(expr), utc(after), previous=earlier) == utc(expected)


def test_interval_is_an_exact_duration_across_dst_and_ignores_the_zone() -> None:
    schedule = parse_schedule("every 1 day", "Europe/Berlin")
    run = next_run(schedule, utc("2026-03-28T12:00"), previous=utc("2026-03-28T07:00"))
    assert run == utc("2026-03-29T07:00")
    assert run is not None
    assert run.astimezone(ZoneInfo("Europe/Berlin")).hour == 9  # 08:00 CET the day before


def test_interval_first_run_is_now_plus_n() -> None:
    now = utc("2026-05-01T12:00:10")
    assert first_run(parse_schedule("every 5 minutes"), now) == utc("2026-05-01T12:05:10")


def test_interval_after_a_long_outage_fires_once_not_in_a_burst() -> None:
    schedule = parse_schedule("every 1 minute")
    previous = utc("2026-05-01T00:00")
    run = next_run(schedule, utc("2026-05-08T00:00:30"), previous=previous)
    assert run == utc("2026-05-08T00:01")
    assert next_run(schedule, run, previous=run) == utc("2026-05-08T00:02")


# --- One-offs --------------------------------------------------------------------------------------------

ONCE_CASES = [
    # (expression, after (UTC), next run (UTC) or None)
    ("2026-03-29T08:00:00+02:00", "2026-03-29T05:59", "2026-03-29T06:00"),
    ("2026-03-29T08:00:00+02:00", "2026-03-29T06:00", None),
    ("2026-03-29T08:00:00+02:00", "2026-03-29T06:01", None),
    ("2026-03-29T06:00:00Z", "2026-01-01T00:00", "2026-03-29T06:00"),
    ("2026-03-29T01:00:00-05:00", "2026-03-29T05:59:59", "2026-03-29T06:00"),
    ("2026-03-29T11:45:00+05:45", "2026-03-29T05:00", "2026-03-29T06:00"),
]


@pytest.mark.parametrize(("expr", "after", "expected"), ONCE_CASES)
def test_one_off_next_run(expr: str, after: str, expected: str | None) -> None:
    assert next_run(parse_schedule(expr, "America/New_York"), utc(after)) == (
        utc(expected) if expected else None
    )


def test_past_one_off_is_due_at_once_with_its_own_instant() -> None:
    schedule = parse_schedule("2026-03-29T08:00:00+02:00")
    assert first_run(schedule, utc("2026-04-01T00:00")) == utc("2026-03-29T06:00")
    assert first_run(schedule, utc("2026-03-01T00:00")) == utc("2026-03-29T06:00")


# --- Freshness and misuse --------------------------------------------------------------------------------

STALE_CASES = [
    # (scheduled for, now, window seconds, stale?)
    ("2026-05-01T09:00", "2026-05-01T09:00", 3600, False),
    ("2026-05-01T09:00", "2026-05-01T10:00", 3600, False),
    ("2026-05-01T09:00", "2026-05-01T10:00:01", 3600, True),
    ("2026-05-01T09:00", "2026-05-01T09:10", 300, True),
    ("2026-05-01T09:00", "2026-05-01T08:00", 3600, False),
]


@pytest.mark.parametrize(("scheduled", "now", "window", "stale"), STALE_CASES)
def test_is_stale(scheduled: str, now: str, window: int, stale: bool) -> None:
    assert is_stale(utc(scheduled), utc(now), window) is stale


def test_is_stale_defaults_to_one_hour() -> None:
    assert not is_stale(utc("2026-05-01T09:00"), utc("2026-05-01T10:00"))
    assert is_stale(utc("2026-05-01T09:00"), utc("2026-05-01T10:00:00.000001"))


@pytest.mark.parametrize(
    ("expr", "zone"),
    [
        ("0 9 * * 1", "America/New_York"),
        ("30 2 * * *", "Europe/Berlin"),
        ("0 0 13 * 5", "UTC"),
        ("0 0 29 2 1", "UTC"),
    ],
)
def test_cron_next_run_takes_well_under_five_milliseconds(expr: str, zone: str) -> None:
    schedule = parse_schedule(expr, zone)
    start = utc("2026-01-01T00:00")
    timings = []
    for hour in range(0, 24 * 365, 37):
        began = time.perf_counter()
        next_run(schedule, start + timedelta(hours=hour))
        timings.append(time.perf_counter() - began)
    assert statistics.median(timings) < 0.005


def test_naive_datetimes_are_a_programming_error() -> None:
    naive = datetime(2026, 5, 1, 9, 0)
    for call in (
        lambda: next_run(parse_schedule("0 9 * * *"), naive),
        lambda: next_run(parse_schedule("every 1 hour"), utc("2026-05-01T09:00"), previous=naive),
        lambda: first_run(parse_schedule("every 1 hour"), naive),
        lambda: is_stale(naive, utc("2026-05-01T09:00")),
    ):
        with pytest.raises(ValueError, match="aware"):
            call()


def test_after_in_another_offset_is_the_same_instant() -> None:
    schedule = parse_schedule("0 9 * * *", "Europe/Berlin")
    berlin = datetime(2026, 5, 1, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    assert next_run(schedule, berlin) == next_run(schedule, berlin.astimezone(UTC)) == utc("2026-05-02T07:00")


# --- Properties ------------------------------------------------------------------------------------------

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Kathmandu",
    "America/St_Johns",
    "Africa/Casablanca",
]
# Each zone's offset changes (UTC) that the properties aim at, so their examples land where DST matters.
ZONE_TRANSITIONS = [
    ("Europe/Berlin", "2026-03-29T01:00"),
    ("Europe/Berlin", "2026-10-25T01:00"),
    ("America/New_York", "2026-03-08T07:00"),
    ("America/New_York", "2026-11-01T06:00"),
    ("Australia/Lord_Howe", "2026-04-04T15:00"),
    ("Australia/Lord_Howe", "2026-10-03T15:30"),
    ("America/Santiago", "2026-04-05T03:00"),
    ("America/Santiago", "2026-09-06T04:00"),
    ("America/St_Johns", "2026-03-08T05:30"),
    ("America/St_Johns", "2026-11-01T04:30"),
    ("Africa/Casablanca", "2026-02-15T02:00"),
    ("Africa/Casablanca", "2026-03-22T02:00"),
    ("Pacific/Apia", "2011-12-30T10:00"),
]


def _near(pair: tuple[str, str], minutes: int) -> tuple[str, datetime]:
    return pair[0], utc(pair[1]) + timedelta(minutes=minutes)


ZONED_AFTERS = st.one_of(
    st.tuples(
        st.sampled_from(ZONES),
        st.datetimes(datetime(2024, 1, 1), datetime(2035, 12, 31), timezones=st.just(UTC)),
    ),
    st.builds(_near, st.sampled_from(ZONE_TRANSITIONS), st.integers(-240, 240)),
    st.builds(_near, st.sampled_from(ZONE_TRANSITIONS), st.integers(-1500, 1500)),
)


def _term(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    step = st.integers(1, max(1, (high - low) // 2))
    return st.one_of(
        st.just("*"),
        value.map(str),
        st.builds(lambda a, b: f"{min(a, b)}-{max(a, b)}", value, value),
        step.map(lambda s: f"*/{s}"),
        st.builds(lambda a, b, s: f"{min(a, b)}-{max(a, b)}/{s}", value, value, step),
        st.builds(lambda a, s: f"{a}/{s}", value, step),
    )


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    return st.lists(_term(low, high), min_size=1, max_size=3).map(",".join)


# Dense crons (every day may match) so that a brute-force scan can check them; sparse ones come from CRONS.
# Half of them name one hour of 00-03, where most zones change offset.
DENSE_CRONS = st.builds(
    lambda m, h: f"{m} {h} * * *", _field(0, 59), st.one_of(_field(0, 23), st.integers(0, 3).map(str))
)
CRONS = st.builds(
    lambda m, h, dom, mon, dow: f"{m} {h} {dom} {mon} {dow}",
    _field(0, 59),
    _field(0, 23),
    st.one_of(st.just("*"), _field(1, 28)),
    st.one_of(st.just("*"), _field(1, 12)),
    st.one_of(st.just("*"), _field(0, 7)),
)
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(expr=st.one_of(DENSE_CRONS, CRONS), zoned=ZONED_AFTERS)
@example(expr="30 2 * * *", zoned=("Europe/Berlin", utc("2026-03-28T23:00")))
@example(expr="*/20 1 * * *", zoned=("America/New_York", utc("2026-11-01T04:00")))
@example(expr="0 0 * * *", zoned=("America/Santiago", utc("2026-09-05T12:00")))
def test_iterated_cron_runs_increase_match_locally_and_never_repeat_a_wall_clock_minute(
    expr: str, zoned: tuple[str, datetime]
) -> None:
    zone, after = zoned
    schedule = parse_schedule(expr, zone)
    assert isinstance(schedule.parsed, CronFields)
    runs = iterate(schedule, after, 6)
    assert all(a < b for a, b in zip([after, *runs], runs, strict=False))
    local_minutes = []
    for run in runs:
        local = run.astimezone(ZoneInfo(zone))
        assert (run.second, run.microsecond, local.fold) == (0, 0, 0)
        assert cron_matches(schedule.parsed, local)
        local_minutes.append(local.replace(tzinfo=None))
    assert len(set(local_minutes)) == len(local_minutes)


def _scan(fields: CronFields, zone: ZoneInfo, after: datetime, minutes: int) -> datetime | None:
    """The reference method: step through real minutes and test each one's local time (first pass only)."""
    instant = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    for _ in range(minutes):
        local = instant.astimezone(zone)
        if local.fold == 0 and cron_matches(fields, local):
            return instant
        instant += timedelta(minutes=1)
    return None


@PROPERTY_SETTINGS
@given(expr=DENSE_CRONS, zoned=ZONED_AFTERS)
def test_cron_next_run_equals_a_minute_by_minute_scan_of_real_instants(
    expr: str, zoned: tuple[str, datetime]
) -> None:
    zone, after = zoned
    schedule = parse_schedule(expr, zone)
    assert isinstance(schedule.parsed, CronFields)
    window = 3 * 24 * 60
    expected = _scan(schedule.parsed, ZoneInfo(zone), after, window)
    found = next_run(schedule, after)
    assert found is not None
    if expected is None:
        assert found > after + timedelta(minutes=window)
    else:
        assert found == expected


def _croniter_term(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    step = st.integers(1, max(1, (high - low) // 2))
    pair = st.tuples(value, value).filter(lambda p: p[0] != p[1]).map(sorted)
    return st.one_of(
        st.just("*"),
        step.map(lambda s: f"*/{s}"),
        value.map(str),
        pair.map(lambda p: f"{p[0]}-{p[1]}"),
        st.builds(lambda p, s: f"{p[0]}-{p[1]}/{s}", pair, step),
        st.builds(lambda a, s: f"{a}/{s}", st.integers(low, min(high, 6) if high == 7 else high), step),
    )


def _croniter_field(low: int, high: int) -> st.SearchStrategy[str]:
    return st.lists(_croniter_term(low, high), min_size=1, max_size=3).map(",".join)


# croniter 7.0 reads a one-value range `a-a` as `*` and `7/s` on day-of-week as wrapping past Sunday, so the
# comparison leaves those two out; the tables above pin fermix's reading of them.
CRONITER_CRONS = st.builds(
    lambda *fields: " ".join(fields),
    _croniter_field(0, 59),
    _croniter_field(0, 23),
    _croniter_field(1, 28),
    _croniter_field(1, 12),
    _croniter_field(0, 7),
)


@settings(max_examples=150, deadline=None)
@given(expr=CRONITER_CRONS, after=st.datetimes(datetime(2024, 1, 1), datetime(2035, 12, 31)))
def test_cron_in_utc_agrees_with_croniter_in_and_mode(expr: str, after: datetime) -> None:
    from croniter import croniter

    start = after.replace(tzinfo=UTC)
    expected = croniter(expr, start, day_or=False).get_next(datetime)
    assert next_run(parse_schedule(expr), start) == expected


@PROPERTY_SETTINGS
@given(
    minutes=st.integers(1, 3000),
    previous=st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC)),
    late=st.integers(0, 10**7),
)
def test_interval_catch_up_lands_on_the_grid_within_one_interval(
    minutes: int, previous: datetime, late: int
) -> None:
    schedule = parse_schedule(f"every {minutes} minutes")
    after = previous + timedelta(seconds=late)
    run = next_run(schedule, after, previous=previous)
    assert run is not None
    step = timedelta(minutes=minutes)
    assert after < run <= after + step
    assert (run - previous) % step == timedelta(0)
