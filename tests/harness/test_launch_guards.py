"""What a launch refuses before anything runs: model values that would be CLI flags, arguments the OS
would refuse, a bare run without its API key, and a cwd overlapping a busy directory."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.conftest import needs_git
from tests.harness.conftest import wait_for

FLAG_VALUES = [
    ("claude_code_run", {"allowed_tools": ["Bash", "--dangerously-skip-permissions"]}),
    ("claude_code_run", {"disallowed_tools": ["-p"]}),
    ("claude_code_run", {"resume": "--permission-mode=bypassPermissions"}),
    ("claude_code_run", {"model": "--dangerously-skip-permissions"}),
    ("codex_run", {"resume": "--dangerously-bypass-approvals-and-sandbox"}),
    ("codex_run", {"model": "-c"}),
    ("codex_run", {"profile": "--sandbox=danger-full-access"}),
]


@pytest.mark.parametrize(("tool", "args"), FLAG_VALUES)
def test_a_value_that_would_be_a_cli_flag_is_refused_before_anything_runs(
    harness: Any, tool: str, args: dict[str, Any]
) -> None:
    err = harness.fails(tool, {"prompt": "hi", "cwd": str(harness.world.project), **args})
    assert err.code == "invalid_input" and "must not start with '-'" in err.message
    assert harness.rows() == [] and harness.records() == []


def test_free_text_starting_with_a_dash_stays_one_value(harness: Any) -> None:
    project = str(harness.world.project)
    args = {
        "prompt": "hi",
        "cwd": project,
        "append_system_prompt": "--dangerously-skip-permissions",
        "allowed_tools": ["Bash(rm -rf:*)"],  # a dash inside a tool rule is fine
    }
    run_id = harness.call("claude_code_run", args)["run_id"]
    opts = harness.record_of("claude_code")["options"]
    assert "--dangerously-skip-permissions" not in opts
    assert "--append-system-prompt=--dangerously-skip-permissions" in opts
    assert opts[opts.index("--allowedTools") + 1] == "Bash(rm -rf:*)"
    harness.settled(run_id)


def test_a_prompt_over_the_one_argument_cap_spills_although_the_config_allows_more(harness: Any) -> None:
    # Linux takes at most 128 KiB in one argument: a 150,000-byte prompt as one would never start.
    harness.configure(extra="max_prompt_arg_bytes = 1000000")
    prompt = "Refactor the parser. " + "x" * 150_000
    started = harness.call("codex_run", {"prompt": prompt, "cwd": str(harness.world.project)})
    assert started["prompt_delivery"] == "brief_file"
    rec = harness.record_of("codex")
    assert rec["prompt_len"] < 1024 and rec["brief_len"] == len(prompt.encode())
    assert harness.settled(started["run_id"])["status"] == "completed"


def test_an_argument_the_os_would_refuse_is_refused_before_anything_runs(harness: Any) -> None:
    text = "\U0001f600" * 40_000  # 40,000 characters, 160,000 bytes: over the 128 KiB of one argument
    err = harness.fails(
        "claude_code_run", {"prompt": "hi", "cwd": str(harness.world.project), "append_system_prompt": text}
    )
    assert err.code == "argument_too_long" and err.details["option"] == "--append-system-prompt"
    assert "append_system_prompt_file" in err.message
    assert harness.rows() == [] and harness.records() == []


def test_bare_without_the_api_key_in_the_childs_environment_is_refused(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-standin")  # set, but [sandbox.env] does not pass it
    args = {"prompt": "hi", "cwd": str(harness.world.project), "bare": True}
    err = harness.fails("claude_code_run", args)
    assert err.code == "missing_credentials" and err.details["variable"] == "ANTHROPIC_API_KEY"
    assert "[sandbox.env]" in err.message and "allow" in err.message
    assert harness.rows() == [] and harness.records() == []
    # Allowed but not set: said so, with the same refusal.
    harness.configure(extra='[sandbox.env]\nallow = ["ANTHROPIC_API_KEY"]\n')
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    err = harness.fails("claude_code_run", args)
    assert err.code == "missing_credentials" and "could not be resolved" in err.message
    assert harness.rows() == []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-standin")
    run_id = harness.call("claude_code_run", args)["run_id"]
    assert "ANTHROPIC_API_KEY" in harness.record_of("claude_code")["env"]
    assert harness.settled(run_id)["status"] == "completed"


def test_an_allowed_variable_that_is_missing_is_said_in_the_result(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.configure(extra='[sandbox.env]\nallow = ["FERMIX_TEST_NOT_SET"]\n')
    monkeypatch.delenv("FERMIX_TEST_NOT_SET", raising=False)
    started = harness.call("codex_run", {"prompt": "hi", "cwd": str(harness.world.project)})
    assert started["env_missing"] == ["FERMIX_TEST_NOT_SET"]
    assert "FERMIX_TEST_NOT_SET" in started["notes"][0]
    harness.settled(started["run_id"])


def _git_repo(path: Any) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)


@needs_git
@pytest.mark.parametrize("outer_first", [True, False])
def test_a_directory_that_is_not_a_checkout_holds_everything_beneath_it(
    harness: Any, outer_first: bool
) -> None:
    workspace = harness.world.project  # not a git checkout
    repo = workspace / "repo2"
    _git_repo(repo)
    first, second = (workspace, repo) if outer_first else (repo, workspace)
    running = harness.call("claude_code_run", {"prompt": "SLOW", "cwd": str(first)})["run_id"]
    wait_for(lambda: harness.records())
    err = harness.fails("claude_code_run", {"prompt": "hi", "cwd": str(second)})
    assert err.code == "worktree_busy" and err.details["run_id"] == running
    assert running in err.message and str(first) in err.message
    assert len(harness.rows()) == 1 and len(harness.records()) == 1
    harness.call("cancel_coding_run", {"run_id": running})
