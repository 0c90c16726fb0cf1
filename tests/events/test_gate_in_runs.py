"""The events gate seen from real model runs (reference 9.1, seed 000 "Events and reminders").

A scheduled job's model or a subagent worker that calls `event_store` is told `not_attended` with the
gate's own words, and the call is recorded so, although the tool is not offered there; tools hidden for
other reasons (an attended-only tool, a tool that does not exist) still answer as unknown.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fermix_cli.core.registry import default_registry
from tests.conftest import Env
from tests.jobs.jobs_world import NOW, Jobs, later

DUE = later(NOW, minutes=1, seconds=10)
INBOX = {"platform": "inbox", "recipient": "owner"}
STORE = {"title": "Dentist", "kind": "appointment", "when": {"type": "date", "date": "2026-04-01"}}
REFUSAL = (
    "not_attended: event_store is available only on an attended, top-level turn of the owner; background "
    "work (a scheduled job), guests, subagents and skills cannot change reminders"
)


@pytest.fixture
def jobs(world: Env) -> Jobs:
    return Jobs(world)


def seen_by_model(jobs: Jobs, session: str) -> dict[str, str]:
    """The tool results the run's model was given, by tool name (the transcript's tool messages)."""
    rows = jobs.sql(
        "SELECT m.tool_name, m.content FROM messages m JOIN runs r ON r.id = m.run_id"
        " WHERE r.conversation_id = ? AND m.role = 'tool' ORDER BY m.seq",
        (session,),
    )
    return {r["tool_name"]: r["content"] for r in rows}


def recorded(jobs: Jobs, session: str) -> list[tuple[str, int, str | None]]:
    rows = jobs.sql(
        "SELECT tool, ok, error_code FROM tool_calls WHERE session_id = ? ORDER BY started_at", (session,)
    )
    return [(r["tool"], r["ok"], r["error_code"]) for r in rows]


def test_a_scheduled_job_is_told_not_attended_by_the_events_gate(jobs: Jobs) -> None:
    jobs.config('[fermix_core.personalization]\ntimezone = "Europe/Berlin"\n')
    script = jobs.mock_script(
        [
            {"tool_calls": [{"name": "event_store", "arguments": STORE}]},
            {
                "tool_calls": [
                    {
                        "name": "reminder_snooze",
                        "arguments": {"snooze": {"type": "duration", "amount": 1, "unit": "hours"}},
                    }
                ]
            },
            {"tool_calls": [{"name": "event_list", "arguments": {}}]},
            {"tool_calls": [{"name": "request_directory_access", "arguments": {"path": "/srv"}}]},
            {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
            {"text": "done"},
        ]
    )
    jobs.add("Dates", "every 1 minutes", provider="mock", model=script, delivery_target=INBOX)
    run = jobs.tick(DUE)["runs"][0]
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert detail["status"] == "ok" and detail["final_response"] == "done"
    session = detail["session_id"]
    assert recorded(jobs, session) == [
        ("event_store", 0, "not_attended"),
        ("reminder_snooze", 0, "not_attended"),
        ("event_list", 1, None),  # the owner's own job may read the dates
        ("request_directory_access", 0, "policy_denied"),
        ("no_such_tool", 0, "unknown_tool"),
    ]
    seen = seen_by_model(jobs, session)
    assert seen["event_store"].startswith(REFUSAL), seen["event_store"]
    assert seen["reminder_snooze"].startswith(
        "not_attended: reminder_snooze is available only on an attended"
    )
    assert json.loads(seen["event_list"])["events"] == []
    # Hidden for other reasons: the same answer as a tool that does not exist.
    assert seen["request_directory_access"] == "unknown_tool: Unknown capability: request_directory_access"
    assert seen["no_such_tool"] == "unknown_tool: Unknown capability: no_such_tool"
    assert [(f["tool"], f["code"]) for f in detail["tool_failures"]] == [
        ("event_store", "not_attended"),
        ("reminder_snooze", "not_attended"),
        ("request_directory_access", "policy_denied"),
        ("no_such_tool", "unknown_tool"),
    ]
    assert jobs.sql("SELECT count(*) FROM temporal_events")[0][0] == 0


def test_a_job_narrowed_by_allowed_tools_still_hears_unknown_for_other_tools(jobs: Jobs) -> None:
    script = jobs.mock_script(
        [
            {"tool_calls": [{"name": "event_store", "arguments": STORE}]},
            {"tool_calls": [{"name": "memory_store", "arguments": {"key": "k", "value": "v"}}]},
            {"text": "done"},
        ]
    )
    jobs.add("Narrow", "every 1 minutes", provider="mock", model=script, allowed_tools=["memory_recall"])
    run = jobs.tick(DUE)["runs"][0]
    session = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]["session_id"]
    seen = seen_by_model(jobs, session)
    assert seen["event_store"].startswith(REFUSAL)
    assert seen["memory_store"] == "unknown_tool: Unknown capability: memory_store"
    assert [c[2] for c in recorded(jobs, session)] == ["not_attended", "policy_denied"]


def _subagent(world: Env, responses: list[dict[str, Any]]) -> dict[str, Any]:
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    path = world.fermix_home / "workers.json"
    path.write_text(json.dumps({"by_prompt": [{"contains": "task dates", "responses": responses}]}))
    (world.fermix_home / "config.toml").write_text(
        f'[fermix_core.agent]\nprovider = "mock"\n\n[fermix_core.providers.mock]\nscript = "{path}"\n'
        '[fermix_core.personalization]\ntimezone = "Europe/Berlin"\n'
    )
    ctx = world.context(cwd=str(world.project))
    try:
        out: dict[str, Any] = default_registry().invoke(
            "subagents", {"tasks": [{"id": "d", "task": "task dates"}]}, ctx
        )
    finally:
        ctx.close()
    return out


def test_a_subagent_worker_is_told_not_attended(world: Env) -> None:
    out = _subagent(
        world,
        [
            {"tool_calls": [{"name": "event_store", "arguments": STORE}]},
            {"tool_calls": [{"name": "event_list", "arguments": {}}]},
            {
                "tool_calls": [
                    {
                        "name": "tool_call",
                        "arguments": {"name": "event_update", "arguments": {"event_id": "x", "title": "y"}},
                    }
                ]
            },
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "w.txt", "content": "x"}}]},
            {"text": "could not store it"},
        ],
    )
    (result,) = out["results"]
    assert (result["status"], result["output"]) == ("completed", "could not store it")
    jobs = Jobs(world)
    session = result["session_id"]
    assert recorded(jobs, session) == [
        ("event_store", 0, "not_attended"),
        ("event_list", 0, "not_attended"),
        ("event_update", 0, "not_attended"),
        ("file_write", 0, "policy_denied"),
    ]
    seen = seen_by_model(jobs, session)
    assert seen["event_store"].startswith(REFUSAL)
    assert seen["event_list"].startswith(
        "not_attended: event_list is available only on an attended, top-level turn of the owner or in a "
        "scheduled job the owner created"
    )
    assert seen["event_update"].startswith("not_attended: event_update is available only")
    assert seen["file_write"] == "unknown_tool: Unknown capability: file_write"
    assert jobs.sql("SELECT count(*) FROM temporal_events")[0][0] == 0
