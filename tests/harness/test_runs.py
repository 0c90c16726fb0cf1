"""codex_run / claude_code_run end to end against the stand-in CLIs: argv, environment, outcome, caps."""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import pytest

from tests.conftest import needs_git
from tests.harness.conftest import alive as _alive
from tests.harness.conftest import wait_for


def test_codex_run_ledgers_then_runs_detached_and_harvests_the_outcome(harness: Any) -> None:
    project = str(harness.world.project)
    started = harness.call("codex_run", {"prompt": "add a test", "cwd": project})
    run_id = started["run_id"]
    assert len(run_id) == 15 and run_id.startswith("hr_") and all(c in "0123456789abcdef" for c in run_id[3:])
    assert started["status"] == "running" and started["prompt_delivery"] == "argument"
    rec = harness.record_of("codex")
    # No posture flag at all when `sandbox` is omitted; the prompt is the one argument after `--`.
    assert rec["options"][:4] == ["exec", "--json", "--cd", project]
    assert "--sandbox" not in rec["options"] and "--add-dir" not in rec["options"]
    assert rec["argv"][-2:] == ["--", "add a test"]
    assert rec["cwd"] == project
    # The child's environment is built like the exec tools': no fermix variables but the spawn marker.
    assert (
        "FERMIX_SPAWNED" in rec["env"] and "FERMIX_HOME" not in rec["env"] and "PYTHONPATH" not in rec["env"]
    )
    # Its own session and process group (the supervisor leads it), not the launcher's.
    assert rec["pgid"] != os.getpgid(0)
    run = harness.settled(run_id)
    assert run["status"] == "completed" and run["exit_code"] == 0 and run["rail"] == "local"
    assert run["result_tail"] == "stand-in finished: add a test"
    assert run["usage"] == {"input_tokens": 120, "cached_input_tokens": 20, "output_tokens": 30}
    assert run["vendor_session"] == "th_standin" and run["resumable"] is True
    assert run["duration_ms"] >= 0 and run["delivery"]["state"] == "pending"
    assert os.path.isfile(run["logs"]["stdout"])


def test_codex_run_passes_every_parameter(harness: Any) -> None:
    project = harness.world.project
    (project / "extra").mkdir()
    (project / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (project / "schema.json").write_text("{}")
    args = {
        "prompt": "go",
        "cwd": str(project),
        "model": "gpt-5-codex",
        "effort": "high",
        "sandbox": "workspace-write",
        "add_dirs": [str(project / "extra")],
        "ephemeral": True,
        "profile": "work",
        "images": [str(project / "shot.png")],
        "output_schema": str(project / "schema.json"),
        "timeout_minutes": 5,
        "progress": "milestones",
    }
    run_id = harness.call("codex_run", args)["run_id"]
    opts = harness.record_of("codex")["options"]
    for pair in (
        ["--model", "gpt-5-codex"],
        ["-c", "model_reasoning_effort=high"],
        ["--sandbox", "workspace-write"],
        ["--add-dir", str(project / "extra")],
        ["--profile", "work"],
        ["--image", str(project / "shot.png")],
        ["--output-schema", str(project / "schema.json")],
    ):
        i = opts.index(pair[0], 0)
        while opts[i + 1] != pair[1]:
            i = opts.index(pair[0], i + 1)
    assert "--ephemeral" in opts
    run = harness.settled(run_id)
    assert run["timeout_minutes"] == 5 and run["resumable"] is False and run["posture"] == "workspace-write"


def test_resume_rules(harness: Any) -> None:
    project = str(harness.world.project)
    for bad in ({"add_dirs": [project]}, {"profile": "p"}, {"ephemeral": True}):
        err = harness.fails("codex_run", {"prompt": "x", "cwd": project, "resume": "th_1", **bad})
        assert err.code == "invalid_resume"
    assert harness.rows() == []
    run_id = harness.call("codex_run", {"prompt": "again", "cwd": project, "resume": "th_prev"})["run_id"]
    opts = harness.record_of("codex")["options"]
    assert opts[-2:] == ["resume", "th_prev"] and "--sandbox" not in opts  # the thread keeps its own posture
    run = harness.settled(run_id)
    assert run["resume_of"] == "th_prev" and run["vendor_session"] == "th_prev"
    err = harness.fails("claude_code_run", {"prompt": "x", "cwd": project, "resume": "s", "continue": True})
    assert err.code == "invalid_resume"


def test_claude_code_run_passes_every_parameter_and_reads_the_result_event(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bare reads ANTHROPIC_API_KEY only, so the run's environment must pass it.
    harness.configure(extra='[sandbox.env]\nallow = ["ANTHROPIC_API_KEY"]\n')
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-standin")
    project = harness.world.project
    (project / "sys.md").write_text("Be brief.")
    (project / "lib").mkdir()
    args = {
        "prompt": "review",
        "cwd": str(project),
        "model": "opus",
        "effort": "high",
        "permission_mode": "plan",
        "allowed_tools": ["Read", "Bash(git log:*)"],
        "disallowed_tools": ["WebFetch"],
        "append_system_prompt": "Mind the tests.",
        "append_system_prompt_file": str(project / "sys.md"),
        "add_dirs": [str(project / "lib")],
        "max_turns": 7,
        "json_schema": '{"type":"object"}',
        "resume": "ses_old",
        "bare": True,
    }
    run_id = harness.call("claude_code_run", args)["run_id"]
    rec = harness.record_of("claude_code")
    assert rec["options"] == [
        "-p", "--output-format", "stream-json", "--verbose",
        "--model", "opus", "--effort", "high", "--permission-mode", "plan",
        "--allowedTools", "Read", "Bash(git log:*)", "--disallowedTools", "WebFetch",
        "--append-system-prompt=Mind the tests.", "--append-system-prompt-file", str(project / "sys.md"),
        "--add-dir", str(project / "lib"), "--max-turns", "7", '--json-schema={"type":"object"}',
        "--resume", "ses_old", "--bare",
    ]  # fmt: skip
    assert "ANTHROPIC_API_KEY" in rec["env"]
    run = harness.settled(run_id)
    assert run["status"] == "completed" and run["result_tail"] == "stand-in finished: review"
    assert run["usage"]["input_tokens"] == 200 and run["usage"]["total_cost_usd"] == 0.0123
    assert run["vendor_session"] == "ses_standin"


def test_claude_code_run_sends_no_posture_flag_when_omitted(harness: Any) -> None:
    run_id = harness.call("claude_code_run", {"prompt": "hi", "cwd": str(harness.world.project)})["run_id"]
    opts = harness.record_of("claude_code")["options"]
    assert opts == ["-p", "--output-format", "stream-json", "--verbose"]
    harness.settled(run_id)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("codex_run", {"sandbox": "danger-full-access"}),
        ("claude_code_run", {"permission_mode": "bypassPermissions"}),
    ],
)
def test_unconfined_postures_are_refused_at_the_boundary(
    harness: Any, tool: str, args: dict[str, Any]
) -> None:
    err = harness.fails(tool, {"prompt": "x", "cwd": str(harness.world.project), **args})
    assert err.code == "unsafe_posture" and err.exit_class == 3
    assert harness.rows() == [] and harness.records() == []
    err = harness.fails(
        "claude_code_run",
        {"prompt": "x", "cwd": str(harness.world.project), "dangerously_skip_permissions": True},
    )
    assert err.code == "invalid_input"


def test_paths_are_admitted_through_the_sandbox(harness: Any, tmp_path: Any) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    err = harness.fails("codex_run", {"prompt": "x", "cwd": str(outside)})
    assert err.code == "outside_root"
    assert "fermix grant path" in err.message and "request_directory_access" in err.message
    project = str(harness.world.project)
    for extra in (
        {"add_dirs": [str(outside)]},
        {"images": [str(outside / "a.png")]},
        {"output_schema": str(outside / "s.json")},
    ):
        assert harness.fails("codex_run", {"prompt": "x", "cwd": project, **extra}).code == "outside_root"
    err = harness.fails(
        "claude_code_run", {"prompt": "x", "cwd": project, "append_system_prompt_file": str(outside / "f")}
    )
    assert err.code == "outside_root"
    assert harness.fails("codex_run", {"prompt": "x", "cwd": "project"}).code == "invalid_path"
    assert harness.rows() == [] and harness.records() == []


def test_a_300_kb_prompt_spills_to_a_brief_file(harness: Any) -> None:
    prompt = "Refactor the parser. " + "x" * (300 * 1024)
    for tool, vendor in (("codex_run", "codex"), ("claude_code_run", "claude_code")):
        (harness.world.project / vendor).mkdir()
        started = harness.call(tool, {"prompt": prompt, "cwd": str(harness.world.project / vendor)})
        assert started["prompt_delivery"] == "brief_file"
        rec = harness.record_of(vendor)
        assert rec["prompt_len"] < 1024 and rec["brief_len"] == len(prompt.encode())
        run = harness.settled(started["run_id"])
        assert run["prompt_bytes"] == len(prompt.encode())
        with open(run["brief_path"], encoding="utf-8") as f:
            assert f.read() == prompt
        assert os.stat(run["brief_path"]).st_mode & 0o077 == 0
        if vendor == "claude_code":
            assert rec["options"][rec["options"].index("--add-dir") + 1] == os.path.dirname(run["brief_path"])


@needs_git
def test_one_run_per_worktree(harness: Any) -> None:
    project = harness.world.project
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(project),
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        ],
        check=True,
    )
    (project / "src").mkdir()
    first = harness.call("codex_run", {"prompt": "SLOW", "cwd": str(project)})["run_id"]
    err = harness.fails("claude_code_run", {"prompt": "x", "cwd": str(project / "src")})
    assert err.code == "worktree_busy" and err.details["run_id"] == first
    # A second checkout of the same repository (git worktree) is its own worktree.
    other = project / "wt"
    subprocess.run(["git", "-C", str(project), "worktree", "add", "-q", str(other)], check=True)
    second = harness.call("claude_code_run", {"prompt": "hi", "cwd": str(other)})["run_id"]
    assert harness.settled(second)["status"] == "completed"
    harness.call("cancel_coding_run", {"run_id": first})


def test_at_most_two_runs_at_once(harness: Any) -> None:
    dirs = []
    for name in ("a", "b", "c"):
        (harness.world.project / name).mkdir()
        dirs.append(str(harness.world.project / name))
    ids = [harness.call("codex_run", {"prompt": "SLOW", "cwd": d})["run_id"] for d in dirs[:2]]
    err = harness.fails("codex_run", {"prompt": "SLOW", "cwd": dirs[2]})
    assert err.code == "too_many_runs" and sorted(err.details["active"]) == sorted(ids)
    assert len(harness.rows()) == 2
    harness.call("cancel_coding_run", {"run_id": ids[0]})
    third = harness.call("codex_run", {"prompt": "quick", "cwd": dirs[2]})["run_id"]
    assert harness.settled(third)["status"] == "completed"
    harness.call("cancel_coding_run", {"run_id": ids[1]})


def test_cancel_ends_the_whole_process_group(harness: Any) -> None:
    run_id = harness.call("codex_run", {"prompt": "FORK", "cwd": str(harness.world.project)})["run_id"]
    rec = harness.record_of("codex")
    assert _alive(rec["pid"]) and _alive(rec["grandchild"])
    run = harness.call("cancel_coding_run", {"run_id": run_id})
    assert run["status"] == "cancelled" and run["delivery"]["state"] == "pending"
    wait_for(lambda: not _alive(rec["pid"]) and not _alive(rec["grandchild"]), timeout=5)
    assert harness.run(run_id)["status"] == "cancelled"  # the supervisor's death does not relabel it
    assert harness.fails("cancel_coding_run", {"run_id": run_id}).code == "run_finished"
    assert harness.fails("cancel_coding_run", {"run_id": "hr_000000000000"}).code == "not_found"
    assert harness.fails("get_coding_run", {"run_id": "hr_000000000000"}).code == "not_found"


def test_a_grandchild_left_behind_is_ended_with_the_run(harness: Any) -> None:
    run_id = harness.call("codex_run", {"prompt": "FORK QUICK", "cwd": str(harness.world.project)})["run_id"]
    rec = harness.record_of("codex")
    assert harness.settled(run_id)["status"] == "completed"
    assert not _alive(rec["grandchild"])


def test_a_crashing_cli_fails_with_the_vendors_error_text(harness: Any) -> None:
    project = harness.world.project
    (project / "c").mkdir()
    codex = harness.settled(harness.call("codex_run", {"prompt": "CRASH", "cwd": str(project)})["run_id"])
    assert codex["status"] == "failed" and codex["exit_code"] == 1
    assert codex["result_tail"] == "stream error: the model refused the request"
    assert "panicked" in codex["diagnostics_tail"]
    claude = harness.settled(
        harness.call("claude_code_run", {"prompt": "CRASH", "cwd": str(project / "c")})["run_id"]
    )
    assert claude["status"] == "failed" and claude["result_tail"] == "API Error: overloaded"


def test_a_vanished_process_is_marked_lost_never_left_running(harness: Any) -> None:
    import signal

    run_id = harness.call("codex_run", {"prompt": "SLOW", "cwd": str(harness.world.project)})["run_id"]
    rec = harness.record_of("codex")
    os.killpg(rec["pgid"], signal.SIGKILL)  # what a reboot or an OOM kill leaves behind
    run = harness.settled(run_id)
    assert run["status"] == "lost" and "vanished" in run["reason"]
    assert harness.call("list_coding_runs", {})["active"] == []


def test_a_killed_supervisor_does_not_leave_the_cli_running_without_a_lock(harness: Any) -> None:
    import signal

    project = str(harness.world.project)
    run_id = harness.call("codex_run", {"prompt": "FORK", "cwd": project})["run_id"]
    rec = harness.record_of("codex")
    os.kill(rec["pgid"], signal.SIGKILL)  # the supervisor (its group's leader) only; the CLI goes on
    run = harness.settled(run_id)
    assert run["status"] == "lost" and "supervisor was killed" in run["reason"]
    # Ended before the run was declared lost, so no second run ever shares the worktree with it.
    assert not _alive(rec["pid"]) and not _alive(rec["grandchild"])
    second = harness.call("codex_run", {"prompt": "quick", "cwd": project})["run_id"]
    assert harness.settled(second)["status"] == "completed"


def test_the_run_outlives_the_fermix_process_that_launched_it(harness: Any) -> None:
    import signal
    import sys

    code = (
        "import json, sys, time\n"
        "from fermix_cli.core.context import ToolContext\n"
        "from fermix_cli.core.paths import resolve_paths\n"
        "from fermix_cli.core.registry import default_registry\n"
        f"ctx = ToolContext(paths=resolve_paths({str(harness.world.fermix_home)!r}), os_home={str(harness.world.home)!r},"
        f" launch_cwd={str(harness.world.project)!r})\n"
        f"r = default_registry().invoke('codex_run', {{'prompt': 'WAITFILE', 'cwd': {str(harness.world.project)!r}}}, ctx)\n"
        "print(r['run_id'], flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**harness.world.env, "PATH": os.environ["PATH"]}
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert launcher.stdout is not None
    run_id = launcher.stdout.readline().strip()
    rec = harness.record_of("codex")
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    time.sleep(0.1)
    assert _alive(rec["pid"]) and harness.run(run_id)["status"] == "running"
    (harness.world.home / "standin" / "go").touch()
    assert harness.settled(run_id)["status"] == "completed"


def test_list_groups_active_recent_and_dead_lettered(harness: Any) -> None:
    project = harness.world.project
    (project / "b").mkdir()
    done = harness.call("codex_run", {"prompt": "quick", "cwd": str(project)})["run_id"]
    harness.settled(done)
    slow = harness.call("codex_run", {"prompt": "SLOW", "cwd": str(project / "b")})["run_id"]
    ctx = harness.ctx()
    with ctx.state.write() as db:
        db.execute("UPDATE coding_runs SET delivery_state = 'dead_letter' WHERE id = ?", (done,))
    listing = harness.call("list_coding_runs", {})
    assert [r["run_id"] for r in listing["active"]] == [slow]
    assert [r["run_id"] for r in listing["dead_lettered"]] == [done] and listing["recent"] == []
    assert [r["run_id"] for r in harness.call("list_coding_runs", {"status": "running"})["active"]] == [slow]
    harness.call("cancel_coding_run", {"run_id": slow})


def test_a_run_past_its_timeout_is_ended_with_its_group(harness: Any, monkeypatch: Any) -> None:
    from fermix_cli.harness import launch

    monkeypatch.setattr(
        launch, "SECONDS_PER_MINUTE", 2.0
    )  # timeout_minutes=1 lasts 2 s here (the stand-in starts first)
    run_id = harness.call(
        "codex_run", {"prompt": "FORK", "cwd": str(harness.world.project), "timeout_minutes": 1}
    )["run_id"]
    rec = harness.record_of("codex")
    run = harness.settled(run_id)
    assert run["status"] == "timed_out" and "1 min" in run["reason"]
    assert not _alive(rec["pid"]) and not _alive(rec["grandchild"])
