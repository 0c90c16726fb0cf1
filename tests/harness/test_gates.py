"""The two gates (registration, advertisement) and execute-time authorization of the harness tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

RUN = {"prompt": "x"}


def _visible(harness: Any, **kw: Any) -> set[str]:
    from fermix_cli.core import policy
    from fermix_cli.core.registry import default_registry

    ctx = harness.ctx(**kw)
    return {s.name for s in default_registry().all() if s.category == "harness" and policy.can_see(s, ctx)}


def _args(harness: Any) -> dict[str, Any]:
    return {**RUN, "cwd": str(harness.world.project)}


def test_unapproved_machine_lists_nothing_and_refuses_a_launch_by_name(harness: Any) -> None:
    harness.configure("approved = false")
    assert _visible(harness) == set()
    err = harness.fails("codex_run", _args(harness))
    assert err.code == "harness_not_approved" and err.exit_class == 3
    assert "fermix config set fermix_core.harness.approved true" in err.message
    assert harness.rows() == [] and not (harness.world.fermix_home / "harness").exists()
    # Unadvertised but registered: the reading tools still answer by name.
    assert harness.call("list_coding_runs", {})["active"] == []
    # The same through the real executable: exit 3 and the typed error on stderr, nothing on stdout.
    env = {**harness.world.env, "PATH": os.environ["PATH"]}
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "tool", "codex_run", "--json", json.dumps(_args(harness))],
        capture_output=True, text=True, env=env, cwd=harness.world.project,
    )  # fmt: skip
    assert proc.returncode == 3 and proc.stdout == ""
    assert json.loads(proc.stderr)["error"]["code"] == "harness_not_approved"


def test_approved_machine_advertises_the_family(harness: Any) -> None:
    assert _visible(harness) == {
        "codex_run", "claude_code_run", "list_coding_runs", "get_coding_run", "cancel_coding_run",
    }  # fmt: skip


def test_registration_needs_the_harness_enabled(harness: Any) -> None:
    harness.configure("approved = true\nenabled = false")
    assert _visible(harness) == set()
    for tool, args in (("codex_run", _args(harness)), ("list_coding_runs", {})):
        err = harness.fails(tool, args)
        assert err.code == "unknown_tool"


def test_registration_needs_the_vendor_cli_on_path(harness: Any) -> None:
    (harness.bin_dir / "claude").unlink()
    assert _visible(harness) == {"codex_run", "list_coding_runs", "get_coding_run", "cancel_coding_run"}
    assert harness.fails("claude_code_run", _args(harness)).code == "unknown_tool"
    (harness.bin_dir / "codex").unlink()
    assert _visible(harness) == set()
    assert harness.fails("get_coding_run", {"run_id": "hr_000000000000"}).code == "unknown_tool"


def _model_sees(harness: Any) -> tuple[set[str], set[str]]:
    """(names a model is shown, by schema or by name; names a model may call) in an agent run."""
    from fermix_cli.agent.toolbox import select_tools
    from fermix_cli.core.registry import default_registry

    box = select_tools(default_registry(), harness.ctx(origin="interactive"), toolset=None)
    shown = {s.name for s in (*box.advertised, *box.deferred)}
    return shown, set(box.dispatchable)


def test_default_vendor_advertises_one_run_tool_and_keeps_the_other_callable(harness: Any) -> None:
    harness.configure('approved = true\ndefault_vendor = "claude_code"')
    shown, callable_ = _model_sees(harness)
    assert "claude_code_run" in shown and "codex_run" not in shown
    assert "codex_run" in callable_  # the model loop dispatches it when named
    run_id = harness.call("codex_run", _args(harness), origin="interactive")["run_id"]
    assert harness.settled(run_id)["status"] == "completed"
    # Without the default vendor's CLI, the other vendor's tool is advertised after all.
    (harness.bin_dir / "claude").unlink()
    assert "codex_run" in _model_sees(harness)[0]


@pytest.mark.parametrize(
    ("ctx", "code"),
    [
        ({"trust": "guest"}, "policy_denied"),
        ({"origin": "subagent", "depth": 1}, "subagent_refused"),
        ({"origin": "mcp", "attended": False}, "not_attended"),
        ({"origin": "skill"}, "not_attended"),
        ({"origin": "interactive", "attended": False}, "not_attended"),
        ({"origin": "scheduled", "attended": False, "job_id": "job_nope"}, "job_not_allowed"),
    ],
)
def test_only_an_attended_owner_turn_may_use_the_tools(harness: Any, ctx: dict[str, Any], code: str) -> None:
    for tool, args in (
        ("codex_run", _args(harness)),
        ("list_coding_runs", {}),
        ("cancel_coding_run", {"run_id": "hr_000000000000"}),
    ):
        err = harness.fails(tool, args, **ctx)
        assert err.code == code, (tool, err)
        assert err.exit_class == 3
    assert _visible(harness, **ctx) == set()
    assert harness.rows() == [] and harness.records() == []


def test_the_guest_refusal_is_typed_even_past_policy(harness: Any) -> None:
    from fermix_cli.harness.gates import refusal

    err = refusal(harness.ctx(trust="guest"), "codex_run")
    assert err is not None and err.code == "guest_refused"


def _insert_job(harness: Any, job_id: str, allowed: list[str] | None) -> None:
    ctx = harness.ctx()
    now = "2026-01-01T00:00:00.000000Z"
    with ctx.state.write() as db:
        db.execute(
            "INSERT INTO scheduled_jobs (id, name, kind, task, schedule, schedule_kind, timezone, state, allowed_tools,"
            " timeout_seconds, inactivity_timeout_seconds, delivery_mode, created_by_agent_id, created_by_session_id,"
            " created_by_channel, created_by_trust, policy_ceiling, created_at, updated_at)"
            " VALUES (?, ?, 'agent', 't', 'every 1h', 'interval', 'UTC', 'scheduled', ?, 60, 60, 'none', 'a', 's',"
            " 'cli', 'operator', '[]', ?, ?)",
            (job_id, job_id, None if allowed is None else json.dumps(allowed), now, now),
        )


def test_a_job_may_launch_only_the_tools_its_allowed_tools_names(harness: Any) -> None:
    _insert_job(harness, "job_any", None)
    _insert_job(harness, "job_claude", ["claude_code_run"])
    _insert_job(harness, "job_codex", ["codex_run", "get_coding_run"])
    job = {"origin": "scheduled", "attended": False}
    assert harness.fails("codex_run", _args(harness), job_id="job_any", **job).code == "job_not_allowed"
    assert harness.fails("codex_run", _args(harness), job_id="job_claude", **job).code == "job_not_allowed"
    assert _visible(harness, job_id="job_codex", **job) == {"codex_run", "get_coding_run"}
    run_id = harness.call("codex_run", _args(harness), job_id="job_codex", **job)["run_id"]
    run = harness.settled(run_id)
    assert run["origin"] == "scheduled" and run["job_id"] == "job_codex"


def test_a_process_fermix_spawned_cannot_launch_from_the_cli(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FERMIX_SPAWNED", "x")
    err = harness.fails("codex_run", _args(harness))
    assert err.code == "not_attended"
    assert harness.rows() == []


def test_config_set_refuses_the_approval_from_a_fermix_spawned_process(harness: Any) -> None:
    harness.configure("approved = false")
    env = {**harness.world.env, "FERMIX_SPAWNED": "abc"}
    for key, value in (
        ("fermix_core.harness.approved", "true"),
        ("fermix_core.harness", "{approved = true}"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "fermix_cli", "config", "set", key, value],
            capture_output=True, text=True, env=env, cwd=harness.world.project,
        )  # fmt: skip
        assert proc.returncode == 3, proc.stderr
        assert json.loads(proc.stderr)["error"]["code"] == "not_attended"
    assert "approved = false" in (harness.world.fermix_home / "config.toml").read_text()
    # Other keys are not guarded, and the owner's own terminal may approve.
    env.pop("FERMIX_SPAWNED")
    ok = harness.world.run("config", "set", "fermix_core.harness.approved", "true")
    assert ok.code == 0, ok.stderr
    assert "approved = true" in (harness.world.fermix_home / "config.toml").read_text()


def test_doctor_reports_the_coding_harness(harness: Any) -> None:
    from fermix_cli.cli.doctor_checks import DoctorInput, check_harness
    from fermix_cli.core.config import load_config
    from fermix_cli.core.paths import resolve_paths

    paths = resolve_paths(str(harness.world.fermix_home))

    def check(which: Any = lambda name: f"/bin/{name}") -> Any:
        inp = DoctorInput(paths=paths, os_home=str(harness.world.home), which=which)
        return check_harness(inp, load_config(paths.config_file))

    assert check(lambda _n: None).status == "n/a"
    ok = check()
    assert ok.status == "ok" and ok.data["vendors"] == ["codex", "claude"] and "approved;" in ok.detail
    harness.configure("approved = false")
    assert "fermix config set fermix_core.harness.approved true" in check().detail
    harness.configure("enabled = false")
    assert check().status == "n/a"
    harness.configure("approved = true")
    run_id = harness.call("codex_run", _args(harness))["run_id"]
    harness.settled(run_id)
    ctx = harness.ctx()
    with ctx.state.write() as db:
        db.execute("UPDATE coding_runs SET delivery_state = 'dead_letter' WHERE id = ?", (run_id,))
    assert check().status == "warn"
