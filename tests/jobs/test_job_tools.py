"""The nine job tools: every parameter, every validation rule and message, and the job lifecycle."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from fermix_cli.core.errors import ExitClass
from fermix_cli.jobs import claims
from fermix_cli.jobs.job import slugify
from fermix_cli.jobs.liveness import Runner
from tests.jobs.jobs_world import NOW, Jobs, later, stamp, utc

# ----- schedule_job: what a new job looks like ----------------------------------------------------


def test_schedule_job_stores_and_stamps_the_job(jobs: Jobs) -> None:
    out = jobs.call(
        "schedule_job",
        {
            "name": "Morning digest",
            "schedule": "0 8 * * *",
            "timezone": "Europe/Berlin",
            "task": "Summarise.",
        },
        session_id="sess-7",
    )
    job = out["job"]
    assert job["id"] == "morning-digest"
    assert job["state"] == "scheduled"
    assert job["schedule_kind"] == "cron" and job["timezone"] == "Europe/Berlin"
    # 08:00 in Berlin on 2026-03-02 (CET, UTC+1) is 07:00Z, already past at 07:59:30Z: next day.
    assert job["next_run_at"] == "2026-03-03T07:00:00.000000Z"
    assert job["task_prompt"] == "Summarise." and job["kind"] == "agent"
    assert job["timeout_seconds"] == 1800 and job["inactivity_timeout_seconds"] == 600
    assert job["delivery"] == {"mode": "none", "target": None}
    assert job["created_by"] == {
        "agent_id": "main",
        "session_id": "sess-7",
        "channel": "cli",
        "trust": "operator",
    }
    assert job["policy_ceiling"] == sorted(
        ["read_only", "read_write", "exec", "network", "external_api", "gui_control"]
    )
    assert job["memory_source"] == "job:morning-digest"
    assert out["message"].startswith(
        "Scheduled job morning-digest (Morning digest): cron `0 8 * * *` in Europe/Berlin"
    )
    source = jobs.sql(
        "SELECT source_type, job_id, label, status FROM memory_sources WHERE source_id = 'job:morning-digest'"
    )
    assert [tuple(r) for r in source] == [("job", "morning-digest", "Morning digest", "active")]


def test_interval_first_run_is_now_plus_n_and_one_off_keeps_its_instant(jobs: Jobs) -> None:
    assert jobs.add("A", "every 15 minutes")["next_run_at"] == stamp(NOW + timedelta(minutes=15))
    one = jobs.add("B", "2026-03-29T08:00:00+02:00")
    assert one["schedule_kind"] == "once" and one["next_run_at"] == "2026-03-29T06:00:00.000000Z"
    # A past one-off is accepted: it fires on the next tick.
    assert jobs.add("C", "2026-01-01T00:00:00Z")["next_run_at"] == "2026-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Morning digest", "morning-digest"),
        ("  Café  Report!! ", "cafe-report"),
        ("日報", "job"),
        ("a" * 80, "a" * 48),
    ],
)
def test_job_id_is_a_slug_of_the_name(name: str, slug: str) -> None:
    assert slugify(name) == slug


def test_slug_collisions_get_numbered_and_removed_ids_are_not_reused(jobs: Jobs) -> None:
    assert [jobs.add("Digest")["id"] for _ in range(3)] == ["digest", "digest-2", "digest-3"]
    jobs.call("remove_job", {"job_id": "digest-2"})
    # digest-2's memory source remains as a tombstone, so a new job never inherits its memories.
    assert jobs.add("Digest")["id"] == "digest-4"


# ----- schedule_job: refusals ----------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["name", "schedule", "task"])
def test_missing_required_parameter_names_it(jobs: Jobs, missing: str) -> None:
    args = {"name": "x", "schedule": "every 5 minutes", "task": "t"}
    del args[missing]
    err = jobs.error("schedule_job", args)
    assert err.code == "invalid_input" and err.message.startswith(f"{missing}: Field required")
    assert err.exit_class == ExitClass.BAD_INPUT


@pytest.mark.parametrize("blank", ["name", "task"])
def test_blank_name_or_task_is_refused(jobs: Jobs, blank: str) -> None:
    args = {"name": "x", "schedule": "every 5 minutes", "task": "t", blank: "   "}
    err = jobs.error("schedule_job", args)
    assert (err.code, err.message) == ("missing_parameters", f"{blank} must not be blank.")


def test_name_must_be_one_line(jobs: Jobs) -> None:
    err = jobs.error("schedule_job", {"name": "a\nb", "schedule": "every 5 minutes", "task": "t"})
    assert err.code == "invalid_input" and "one line" in err.message


def test_unknown_parameters_are_refused(jobs: Jobs) -> None:
    err = jobs.error(
        "schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t", "command": "ls"}
    )
    assert err.code == "invalid_input" and err.message.startswith("command: Extra inputs are not permitted")


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("daily at 8am", "is not a recognised schedule"),
        ("60 * * * *", "minute term `60` is outside 0-59"),
        ("0 8 * *", "has 4 fields"),
        ("2026-03-29T08:00:00", "has no UTC offset"),
        ("every 0 minutes", "an interval is `every N minutes|hours|days`"),
        ("0 0 30 2 *", "is unsatisfiable"),
    ],
)
def test_invalid_schedule(jobs: Jobs, schedule: str, fragment: str) -> None:
    err = jobs.error("schedule_job", {"name": "x", "schedule": schedule, "task": "t"})
    assert err.code == "invalid_schedule" and fragment in err.message
    assert "A schedule is exactly one of" in err.message  # the grammar comes with every refusal


def test_leap_day_cron_is_refused_when_the_next_leap_day_is_over_a_year_away(jobs: Jobs) -> None:
    err = jobs.error(
        "schedule_job", {"name": "x", "schedule": "0 12 29 2 *", "task": "t"}, at=utc("2028-03-01T00:00:00Z")
    )
    assert err.code == "invalid_schedule" and "no run within one year" in err.message
    job = jobs.add("leap", "0 12 29 2 *", at=utc("2027-06-01T00:00:00Z"))
    assert job["next_run_at"] == "2028-02-29T12:00:00.000000Z"


def test_invalid_timezone(jobs: Jobs) -> None:
    err = jobs.error(
        "schedule_job", {"name": "x", "schedule": "0 8 * * *", "timezone": "Mars/Olympus", "task": "t"}
    )
    assert err.code == "invalid_timezone" and "`Mars/Olympus` is not an IANA timezone name" in err.message
    # The zone is checked for every kind, not only crons.
    assert (
        jobs.error(
            "schedule_job", {"name": "x", "schedule": "every 5 minutes", "timezone": "Nowhere", "task": "t"}
        ).code
        == "invalid_timezone"
    )
    # A blank zone is not "no zone": it is refused, never silently UTC.
    for blank in ("", "  "):
        err = jobs.error(
            "schedule_job", {"name": "x", "schedule": "0 8 * * *", "timezone": blank, "task": "t"}
        )
        assert err.code == "invalid_timezone"
    assert jobs.call("list_jobs", {})["total"] == 0


@pytest.mark.parametrize(
    ("expires_at", "fragment"),
    [
        ("2026-12-31T00:00:00", "is not an ISO-8601 date and time with an offset"),
        ("tomorrow", "is not an ISO-8601 date and time with an offset"),
        ("2026-02-30T00:00:00Z", "is not an ISO-8601 date and time with an offset"),
        ("2026-03-01T00:00:00Z", "is not in the future"),
        ("2026-03-02T08:00:00Z", "before its first run"),
    ],
)
def test_expires_at_rules(jobs: Jobs, expires_at: str, fragment: str) -> None:
    err = jobs.error(
        "schedule_job", {"name": "x", "schedule": "every 1 hours", "task": "t", "expires_at": expires_at}
    )
    assert err.code == "invalid_expires_at" and fragment in err.message


def test_expires_at_is_stored_in_utc(jobs: Jobs) -> None:
    job = jobs.add(expires_at="2026-12-31T23:00:00+01:00")
    assert job["expires_at"] == "2026-12-31T22:00:00.000000Z"


@pytest.mark.parametrize(
    ("pin", "fragment"),
    [
        ({"provider": "mock"}, "provider was given without model"),
        ({"model": "gpt-4o"}, "model was given without provider"),
        ({"provider": "nope", "model": "m"}, "unknown provider 'nope'; known: anthropic, echo, mock, openai"),
    ],
)
def test_route_pin_rules(jobs: Jobs, pin: dict[str, str], fragment: str) -> None:
    err = jobs.error("schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t", **pin})
    assert err.code == "invalid_route_pin" and fragment in err.message


def test_route_pin_accepts_configured_providers(jobs: Jobs) -> None:
    jobs.config('[fermix_core.providers.local]\ntype = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n')
    assert jobs.add(provider="local", model="qwen")["route_pin"] == {"provider": "local", "model": "qwen"}


def test_allowed_tools_must_be_a_subset_of_the_callers_tools(jobs: Jobs) -> None:
    job = jobs.add(allowed_tools=["memory_recall", "file_read", "memory_recall"])
    assert job["allowed_tools"] == ["file_read", "memory_recall"]
    err = jobs.error(
        "schedule_job",
        {
            "name": "x",
            "schedule": "every 5 minutes",
            "task": "t",
            "allowed_tools": ["file_read", "nope", "zap"],
        },
    )
    assert (err.code, err.message) == ("tool_not_allowed", "tools not available to the caller: nope, zap")
    # A caller narrowed to a policy ceiling cannot hand a job the classes it lacks.
    err = jobs.error(
        "schedule_job",
        {
            "name": "x",
            "schedule": "every 5 minutes",
            "task": "t",
            "allowed_tools": ["web_fetch", "memory_recall"],
        },
        policy_ceiling=frozenset({"read_only", "read_write"}),
    )
    assert err.message == "tools not available to the caller: web_fetch"
    # ...nor tools outside its own allowlist.
    err = jobs.error(
        "schedule_job",
        {"name": "x", "schedule": "every 5 minutes", "task": "t", "allowed_tools": ["file_read"]},
        allowed_tools=frozenset({"schedule_job", "memory_recall"}),
    )
    assert err.message == "tools not available to the caller: file_read"


def test_a_narrowed_caller_stamps_its_own_narrowing(jobs: Jobs) -> None:
    job = jobs.call(
        "schedule_job",
        {"name": "x", "schedule": "every 5 minutes", "task": "t"},
        allowed_tools=frozenset({"schedule_job", "memory_recall"}),
        policy_ceiling=frozenset({"read_only", "read_write"}),
    )["job"]
    assert job["allowed_tools"] == ["memory_recall", "schedule_job"]
    assert job["policy_ceiling"] == ["read_only", "read_write"]


def test_empty_allowed_tools_means_no_tools(jobs: Jobs) -> None:
    assert jobs.add(allowed_tools=[])["allowed_tools"] == []


def test_skill_must_be_installed(jobs: Jobs) -> None:
    err = jobs.error(
        "schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t", "skill_name": "triage"}
    )
    # repo_overview ships with fermix (fermix_cli/agent/skills/bundled)
    assert err.code == "unknown_skill" and err.message.startswith(
        "triage: no such skill (known: repo_overview)"
    )
    skill = jobs.world.fermix_home / "skills" / "triage"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: triage\ndescription: sort mail\n---\nSort it.\n")
    assert jobs.add(skill_name="triage")["skill_name"] == "triage"


def test_timeouts(jobs: Jobs) -> None:
    job = jobs.add(timeout_seconds=120)
    assert (job["timeout_seconds"], job["inactivity_timeout_seconds"]) == (120, 120)
    job = jobs.add(timeout_seconds=900, inactivity_timeout_seconds=60)
    assert (job["timeout_seconds"], job["inactivity_timeout_seconds"]) == (900, 60)
    err = jobs.error(
        "schedule_job",
        {
            "name": "x",
            "schedule": "every 5 minutes",
            "task": "t",
            "timeout_seconds": 60,
            "inactivity_timeout_seconds": 61,
        },
    )
    assert err.code == "invalid_timeout" and "longer than timeout_seconds (60)" in err.message
    for bad in (0, -5, 86_401, "60", 1.5, True):
        err = jobs.error(
            "schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t", "timeout_seconds": bad}
        )
        assert err.code == "invalid_input" and err.message.startswith("timeout_seconds:")


def test_config_supplies_timeout_defaults(jobs: Jobs) -> None:
    jobs.config(
        "[fermix_core.jobs]\ndefault_timeout_seconds = 300\ndefault_inactivity_timeout_seconds = 30\n"
    )
    job = jobs.add()
    assert (job["timeout_seconds"], job["inactivity_timeout_seconds"]) == (300, 30)


# ----- delivery ------------------------------------------------------------------------------------

INBOX = {"platform": "inbox", "recipient": "owner"}


def test_delivery_resolution(jobs: Jobs) -> None:
    assert jobs.add()["delivery"] == {"mode": "none", "target": None}
    assert jobs.add(delivery_mode="local")["delivery"] == {"mode": "local", "target": None}
    # A target on its own implies channel.
    assert jobs.add(delivery_target=INBOX)["delivery"] == {"mode": "channel", "target": INBOX}
    threaded = {**INBOX, "thread_ts": "1712.5"}
    assert jobs.add(delivery_mode="channel", delivery_target=threaded)["delivery"]["target"] == threaded


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        ({"delivery_mode": "channel"}, "invalid_delivery", "channel needs a delivery_target"),
        ({"delivery_mode": "local", "delivery_target": INBOX}, "invalid_delivery", "only for channel mode"),
        ({"delivery_mode": "origin"}, "invalid_delivery", "this cli call has none"),
        ({"delivery_target": {"platform": "inbox"}}, "invalid_delivery", "exactly one of chat_id"),
        (
            {"delivery_target": {"platform": "inbox", "chat_id": "a", "recipient": "b"}},
            "invalid_delivery",
            "exactly one of",
        ),
        (
            {"delivery_target": {"platform": "inbox", "recipient": "x", "color": "red"}},
            "invalid_delivery",
            "unknown keys: color",
        ),
        (
            {"delivery_target": {"platform": "inbox", "recipient": "../etc"}},
            "invalid_delivery",
            "inbox name '../etc'",
        ),
        (
            {"delivery_target": {"platform": "sms", "chat_id": 42}},
            "unsupported_channel",
            "cannot deliver to platform 'sms'",
        ),
        (
            {"delivery_target": {"platform": "telegram", "chat_id": 42}},
            "channel_not_configured",
            "Telegram has no bot token",
        ),
    ],
)
def test_delivery_refusals(jobs: Jobs, args: dict, code: str, fragment: str) -> None:
    err = jobs.error("schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t", **args})
    assert err.code == code and fragment in err.message, err.message


def test_invalid_delivery_mode_is_refused_by_the_schema(jobs: Jobs) -> None:
    err = jobs.error(
        "schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t", "delivery_mode": "email"}
    )
    assert err.code == "invalid_input" and err.message.startswith("delivery_mode:")


def test_origin_delivery_snapshots_the_creating_chat(jobs: Jobs) -> None:
    job = jobs.call(
        "schedule_job",
        {"name": "x", "schedule": "every 5 minutes", "task": "t", "delivery_mode": "origin"},
        extras={"origin_target": {"platform": "inbox", "chat_id": "family", "message_thread_id": 7}},
    )["job"]
    assert job["delivery"] == {
        "mode": "origin",
        "target": {"platform": "inbox", "chat_id": "family", "message_thread_id": 7},
    }


def test_config_defaults_apply_when_neither_mode_nor_target_is_given(jobs: Jobs) -> None:
    jobs.config('[fermix_core.jobs]\ndefault_delivery_target = { platform = "inbox", recipient = "ops" }\n')
    assert jobs.add()["delivery"] == {"mode": "channel", "target": {"platform": "inbox", "recipient": "ops"}}
    assert jobs.add(delivery_mode="channel")["delivery"]["target"] == {
        "platform": "inbox",
        "recipient": "ops",
    }
    assert jobs.add(delivery_mode="none")["delivery"] == {"mode": "none", "target": None}
    jobs.config('[fermix_core.jobs]\ndefault_delivery_mode = "local"\n')
    assert jobs.add()["delivery"] == {"mode": "local", "target": None}


def test_an_invalid_configured_target_fails_instead_of_falling_through(jobs: Jobs) -> None:
    jobs.config(
        '[fermix_core.jobs]\ndefault_delivery_mode = "channel"\ndefault_delivery_target = { platform = "slack", channel_id = "C1" }\n'
    )
    err = jobs.error("schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t"})
    assert err.code == "unsupported_channel"
    jobs.config('[fermix_core.jobs]\ndefault_delivery_mode = "channel"\n')
    assert (
        jobs.error("schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t"}).code
        == "invalid_delivery"
    )


def test_jobs_config_is_strict(jobs: Jobs) -> None:
    jobs.config("[fermix_core.jobs]\nmax_concurrent_runs = 0\n")
    err = jobs.error("schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t"})
    assert err.code == "invalid_config" and "fermix_core.jobs.max_concurrent_runs" in err.message
    jobs.config("[fermix_core.jobs]\nfreshness = 10\n")
    err = jobs.error("schedule_job", {"name": "x", "schedule": "every 5 minutes", "task": "t"})
    assert "fermix_core.jobs.freshness" in err.message


# ----- list_jobs -----------------------------------------------------------------------------------


def test_list_jobs_filters_limits_and_shows_everything_the_reference_names(jobs: Jobs) -> None:
    for i in range(3):
        jobs.add(f"job {i}", provider="mock", model="m", delivery_mode="local")
    jobs.call("pause_job", {"job_id": "job-1"})
    listing = jobs.call("list_jobs", {})
    assert listing["total"] == 3 and not listing["more"]
    first = listing["jobs"][0]
    for key in (
        "task_prompt",
        "schedule",
        "timezone",
        "next_run_at",
        "state",
        "route_pin",
        "delivery",
        "last_run",
    ):
        assert key in first
    assert [j["id"] for j in jobs.call("list_jobs", {"state": "paused"})["jobs"]] == ["job-1"]
    page = jobs.call("list_jobs", {"limit": 2})
    assert len(page["jobs"]) == 2 and page["more"] and page["total"] == 3
    assert jobs.error("list_jobs", {"state": "sleeping"}).code == "invalid_input"


def test_job_reads_are_owner_only(jobs: Jobs) -> None:
    jobs.add()
    for tool, args in (
        ("list_jobs", {}),
        ("list_job_runs", {"job_id": "digest"}),
        ("get_job_run", {"run_id": "run_x"}),
    ):
        err = jobs.error(tool, args, trust="guest")
        assert err.code == "policy_denied" and err.exit_class == ExitClass.REFUSED
    for tool in ("schedule_job", "update_job", "pause_job", "resume_job", "remove_job", "run_job_now"):
        assert jobs.error(tool, {"job_id": "digest"}, trust="guest").code == "policy_denied"


# ----- update_job ----------------------------------------------------------------------------------


def test_update_job_edits_in_place(jobs: Jobs) -> None:
    jobs.add("Digest", "every 5 minutes", provider="mock", model="m")
    at = later(NOW, minutes=2)
    out = jobs.call(
        "update_job",
        {"job_id": "digest", "schedule": "30 9 * * *", "task": "new task", "description": "d"},
        at=at,
    )
    job = out["job"]
    assert sorted(out["changed"]) == ["description", "next_run_at", "schedule", "schedule_kind", "task"]
    assert job["schedule"] == "30 9 * * *" and job["next_run_at"] == "2026-03-02T09:30:00.000000Z"
    assert job["task_prompt"] == "new task" and job["description"] == "d"
    # Omitted fields stay: the pin, the timeouts, the delivery.
    assert job["route_pin"] == {"provider": "mock", "model": "m"} and job["timeout_seconds"] == 1800
    assert jobs.call("update_job", {"job_id": "digest", "description": ""})["job"]["description"] is None


def test_update_job_route_pin(jobs: Jobs) -> None:
    jobs.add("Digest", provider="mock", model="m")
    assert jobs.call("update_job", {"job_id": "digest", "provider": "echo", "model": "echo"})["job"][
        "route_pin"
    ] == {"provider": "echo", "model": "echo"}
    err = jobs.error("update_job", {"job_id": "digest", "clear_route_pin": True, "model": "x"})
    assert err.code == "invalid_route_pin" and "cannot be combined with provider or model" in err.message
    assert jobs.error("update_job", {"job_id": "digest", "provider": "echo"}).code == "invalid_route_pin"
    assert jobs.call("update_job", {"job_id": "digest", "clear_route_pin": True})["job"]["route_pin"] is None


def test_update_job_delivery(jobs: Jobs) -> None:
    jobs.add("Digest", delivery_target=INBOX)
    out = jobs.call("update_job", {"job_id": "digest", "delivery_mode": "local"})
    assert out["job"]["delivery"] == {"mode": "local", "target": None}  # none/local clear the target
    out = jobs.call(
        "update_job", {"job_id": "digest", "delivery_target": {"platform": "inbox", "recipient": "ops"}}
    )
    assert out["job"]["delivery"] == {"mode": "channel", "target": {"platform": "inbox", "recipient": "ops"}}
    # channel alone keeps the target the job already has.
    assert (
        jobs.call("update_job", {"job_id": "digest", "delivery_mode": "channel"})["job"]["delivery"][
            "target"
        ]["recipient"]
        == "ops"
    )
    assert (
        jobs.error(
            "update_job", {"job_id": "digest", "delivery_target": {"platform": "sms", "recipient": "1"}}
        ).code
        == "unsupported_channel"
    )


def test_update_job_refusals(jobs: Jobs) -> None:
    jobs.add("Digest")
    err = jobs.error("update_job", {"job_id": "digest"})
    assert err.code == "missing_parameters" and err.message.startswith(
        "update_job needs at least one field to change"
    )
    assert (
        jobs.error("update_job", {"job_id": "digest", "clear_route_pin": False}).code == "missing_parameters"
    )
    err = jobs.error("update_job", {"job_id": "digest", "timeout_seconds": 10})
    assert err.code == "invalid_input" and err.message.startswith("timeout_seconds: Extra inputs")
    assert jobs.error("update_job", {"job_id": "digest", "skill_name": "ghost"}).code == "unknown_skill"
    assert jobs.error("update_job", {"job_id": "digest", "schedule": "sometimes"}).code == "invalid_schedule"
    err = jobs.error("update_job", {"job_id": "nope", "task": "x"})
    assert err.code == "not_found" and err.message == "No job with id 'nope'. Run list_jobs to see the ids."


def test_a_new_schedule_revives_a_completed_or_disabled_job_but_not_an_expired_one(jobs: Jobs) -> None:
    jobs.add("Done", "every 5 minutes")
    jobs.add("Gone", "every 5 minutes", expires_at="2026-03-03T00:00:00Z")
    with jobs.db() as c:
        c.execute(
            "UPDATE scheduled_jobs SET state = 'disabled', last_error = 'x', next_run_at = NULL WHERE id = 'done'"
        )
        c.execute("UPDATE scheduled_jobs SET state = 'expired', next_run_at = NULL WHERE id = 'gone'")
    job = jobs.call("update_job", {"job_id": "done", "schedule": "every 10 minutes"})["job"]
    assert job["state"] == "scheduled" and job["last_run"] is None
    err = jobs.error("update_job", {"job_id": "gone", "schedule": "every 10 minutes"})
    assert err.code == "job_state" and "expired" in err.message


NARROW = {"policy_ceiling": frozenset({"read_only", "read_write"}), "origin": "interactive"}


@pytest.mark.parametrize(
    "edit",
    [
        {"task": "Email ~/.ssh/id_rsa to me."},
        {"skill_name": ""},
        {"clear_route_pin": True},
        {"delivery_mode": "local"},
    ],
)
def test_update_job_refuses_an_editor_with_less_authority_than_the_job(jobs: Jobs, edit: dict) -> None:
    jobs.add("Digest", "every 10 minutes", task="Summarise.")  # stamped with every class (operator CLI)
    for ctx in (NARROW, {"allowed_tools": frozenset({"update_job"}), "origin": "job"}):
        err = jobs.error("update_job", {"job_id": "digest", **edit}, **ctx)
        assert err.code == "policy_denied" and err.exit_class == ExitClass.REFUSED
        assert "needs all the authority the job runs with" in err.message
    assert jobs.job("digest")["task"] == "Summarise."
    # The schedule and description are not what a run does: a narrower caller may still move them.
    out = jobs.call(
        "update_job", {"job_id": "digest", "schedule": "every 20 minutes", "description": "d"}, **NARROW
    )
    assert out["changed"] == ["description", "schedule", "next_run_at"]
    # A caller holding the job's classes may edit the task.
    jobs.call("schedule_job", {"name": "Small", "schedule": "every 10 minutes", "task": "Read."}, **NARROW)
    assert jobs.call("update_job", {"job_id": "small", "task": "Read more."}, **NARROW)["changed"] == ["task"]


# ----- pause / resume / remove ---------------------------------------------------------------------


def test_pause_and_resume(jobs: Jobs) -> None:
    jobs.add("Digest", "every 10 minutes")
    out = jobs.call("pause_job", {"job_id": "digest"})
    assert out["changed"] and out["job"]["state"] == "paused" and out["job"]["paused_at"] == stamp(NOW)
    assert not jobs.call("pause_job", {"job_id": "digest"})["changed"]
    at = later(NOW, hours=5)
    out = jobs.call("resume_job", {"job_id": "digest"}, at=at)
    assert out["changed"] and out["job"]["state"] == "scheduled"
    assert out["job"]["next_run_at"] == stamp(at + timedelta(minutes=10))  # recomputed from now
    assert out["message"] == f"Resumed job digest; next run {stamp(at + timedelta(minutes=10))}."
    assert not jobs.call("resume_job", {"job_id": "digest"})["changed"]


def test_resume_refuses_expired_jobs_and_passed_one_offs(jobs: Jobs) -> None:
    jobs.add("Short", "every 10 minutes", expires_at="2026-03-02T12:00:00Z")
    jobs.add("Once", "2026-03-02T09:00:00Z")
    jobs.call("pause_job", {"job_id": "short"})
    jobs.call("pause_job", {"job_id": "once"})
    err = jobs.error("resume_job", {"job_id": "short"}, at=utc("2026-03-02T13:00:00Z"))
    assert err.code == "job_state" and "expired at 2026-03-02T12:00:00.000000Z" in err.message
    assert jobs.job("short")["state"] == "expired"
    err = jobs.error("resume_job", {"job_id": "once"}, at=utc("2026-03-02T10:00:00Z"))
    assert err.code == "job_state" and "has passed" in err.message
    assert (
        jobs.call("resume_job", {"job_id": "once"}, at=utc("2026-03-02T08:30:00Z"))["job"]["next_run_at"]
        == "2026-03-02T09:00:00.000000Z"
    )


def test_pause_refuses_finished_jobs(jobs: Jobs) -> None:
    jobs.add("Done")
    with jobs.db() as c:
        c.execute("UPDATE scheduled_jobs SET state = 'completed' WHERE id = 'done'")
    err = jobs.error("pause_job", {"job_id": "done"})
    assert (err.code, err.message) == (
        "job_state",
        "job done is completed; pause_job refuses completed jobs.",
    )


def test_remove_job_deletes_runs_and_tombstones_memory(jobs: Jobs) -> None:
    jobs.add("Digest", "every 1 minutes")
    state = jobs.world.context().state
    runner = Runner.start(jobs.world.context().paths)
    claims.tick(
        state.write,
        later(NOW, minutes=2),
        jobs.world.context().paths,
        runner,
        max_concurrent=4,
        window_seconds=3600,
    )
    err = jobs.error("remove_job", {"job_id": "digest"})
    assert err.code == "job_busy" and "has a queued run" in err.message
    with jobs.db() as c:
        c.execute("UPDATE job_runs SET status = 'ok' WHERE status = 'queued'")
    out = jobs.call("remove_job", {"job_id": "digest"})
    assert out["removed"] and out["memory_source"] == "job:digest"
    assert jobs.job("digest") is None and jobs.runs("digest") == []
    assert (
        jobs.sql("SELECT status FROM memory_sources WHERE source_id = 'job:digest'")[0]["status"]
        == "tombstoned"
    )
    assert jobs.error("remove_job", {"job_id": "digest"}).code == "not_found"
    runner.release()
    state.close()


# ----- run_job_now refusals, runs --------------------------------------------------------------------


def test_run_job_now_refusals(jobs: Jobs) -> None:
    jobs.add("Digest")
    jobs.call("pause_job", {"job_id": "digest"})
    err = jobs.error("run_job_now", {"job_id": "digest"})
    assert (err.code, err.message) == ("job_state", "job digest is paused; run_job_now refuses paused jobs.")
    jobs.call("resume_job", {"job_id": "digest"})
    with jobs.db() as c:
        c.execute("UPDATE scheduled_jobs SET state = 'running' WHERE id = 'digest'")
    assert jobs.error("run_job_now", {"job_id": "digest"}).code == "job_busy"
    for state in ("disabled", "expired", "completed"):
        with jobs.db() as c:
            c.execute("UPDATE scheduled_jobs SET state = ? WHERE id = 'digest'", (state,))
        assert jobs.error("run_job_now", {"job_id": "digest"}).code == "job_state"
    assert jobs.error("run_job_now", {"job_id": "ghost"}).code == "not_found"
    assert jobs.runs("digest") == []


def test_list_and_get_runs(jobs: Jobs) -> None:
    jobs.add("Digest", "every 1 minutes")
    paths = jobs.world.context().paths
    state = jobs.world.context().state
    runner = Runner.start(paths)
    for minutes in (2, 4, 6):
        claims.tick(
            state.write, later(NOW, minutes=minutes), paths, runner, max_concurrent=4, window_seconds=3600
        )
        with jobs.db() as c:
            c.execute("UPDATE job_runs SET status = 'ok', error_code = NULL WHERE status = 'queued'")
            c.execute("UPDATE scheduled_jobs SET state = 'scheduled'")
    runner.release()
    state.close()
    listing = jobs.call("list_job_runs", {"job_id": "digest"})
    slots = [r["scheduled_for"] for r in listing["runs"] if r["status"] == "ok"]
    assert slots == sorted(slots, reverse=True) and len(slots) == 3  # newest first
    assert listing["total"] == len(listing["runs"])
    skipped = jobs.call("list_job_runs", {"job_id": "digest", "status": "skipped"})["runs"]
    assert skipped and all(r["reason"].startswith("missed:") for r in skipped)
    assert len(jobs.call("list_job_runs", {"job_id": "digest", "limit": 1})["runs"]) == 1
    assert jobs.error("list_job_runs", {"job_id": "digest", "limit": 101}).code == "invalid_input"
    assert jobs.error("list_job_runs", {"job_id": "digest", "status": "done"}).code == "invalid_input"
    assert jobs.error("list_job_runs", {"job_id": "ghost"}).code == "not_found"
    newest_ok = next(r for r in listing["runs"] if r["status"] == "ok")
    run = jobs.call("get_job_run", {"run_id": newest_ok["run_id"]})["run"]
    for key in (
        "task_prompt",
        "prompt_snapshot",
        "config_snapshot",
        "usage",
        "iterations",
        "final_response",
        "error",
        "tool_failures",
        "output_path",
        "delivery",
        "claimed_by",
    ):
        assert key in run
    assert run["task_prompt"] == "say hi" and run["trigger"] == "schedule"
    err = jobs.error("get_job_run", {"run_id": "run_nope"})
    assert err.code == "not_found" and "list_job_runs" in err.message


def test_tool_texts_for_models(jobs: Jobs) -> None:
    from fermix_cli.core.registry import default_registry

    reg = default_registry()
    jobs.add("Digest", delivery_mode="local")
    listing = jobs.call("list_jobs", {})
    text = reg.get("list_jobs").render_for_model(listing)
    assert (
        text.startswith("- digest [scheduled] Digest: every 5 minutes (UTC); next ")
        and "agent: say hi" in text
    )
    assert (
        reg.get("list_job_runs").render_for_model(jobs.call("list_job_runs", {"job_id": "digest"}))
        == "No runs of job digest yet."
    )
    assert json.loads(reg.get("get_job_run").render_for_model({"run": {"x": 1}})) == {"run": {"x": 1}}
