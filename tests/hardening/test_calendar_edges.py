"""Instants at the edges of the calendar are refused as input (exit 2), never an OverflowError (exit 4)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from fermix_cli.jobs.schedule import LATEST, aware_instant
from tests.conftest import Env

EDGES = [
    "9999-12-31T23:59:59-14:00",  # past what UTC can hold
    "9999-12-31T23:59:59+00:00",  # holdable, but a day later is not
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
    "0001-01-01T00:00:00+00:00",
    "0001-01-01T00:00:00-23:59",
]


@pytest.mark.parametrize("text", EDGES)
def test_edge_instants_have_no_value(text: str) -> None:
    assert aware_instant(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2030-06-01T08:00:00+02:00", datetime(2030, 6, 1, 6, tzinfo=UTC)),
        ("9998-12-31T23:59:59Z", LATEST),
        ("0001-01-03T00:00:00+14:00", datetime(1, 1, 2, 10, tzinfo=UTC)),
    ],
)
def test_ordinary_instants_come_back_in_utc(text: str, expected: datetime) -> None:
    assert aware_instant(text) == expected


@pytest.mark.parametrize("text", EDGES[:4])
def test_edges_through_the_cli(world: Env, text: str) -> None:
    calls = [
        world.tool("schedule_job", {"name": "once", "schedule": text, "task": "x"}),
        world.tool(
            "schedule_job", {"name": "exp", "schedule": "every 15 minutes", "task": "x", "expires_at": text}
        ),
        world.run(
            "jobs", "add", "cmd", "--schedule", "every 15 minutes", "--command", "true", "--expires-at", text
        ),
    ]
    assert world.tool("schedule_job", {"name": "base", "schedule": "every 1 day", "task": "x"}).code == 0
    calls.append(world.tool("update_job", {"job_id": "base", "schedule": text}))
    for r in calls:
        assert r.code == 2, (r.code, r.stderr)
        assert "Traceback" not in r.stderr and r.stdout == ""
        assert json.loads(r.stderr)["error"]["code"] in ("invalid_schedule", "invalid_expires_at")
