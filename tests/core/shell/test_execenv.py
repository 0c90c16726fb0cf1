"""The child environment: replaced, not inherited; `[sandbox.env]` sources; secrets and missing names."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fermix_cli.core.config import SandboxEnv, validate_config
from fermix_cli.core.shell import childenv as execenv
from fermix_cli.core.shell.childenv import build_child_env

SOURCE = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "USER": "u",
    "LANG": "C.UTF-8",
    "SHELL": "/bin/sh",
    "TMPDIR": "/tmp",
    "LC_ALL": "C.UTF-8",
    "LC_TIME": "C",
    "AWS_SECRET_ACCESS_KEY": "do-not-pass-me",
    "GIT_DIR": "/elsewhere",
    "FERMIX_SPAWNED": "parent-marker",
    "API_TOKEN": "tok-1234567890",
    "SHORT": "abc",
    "REAL_NAME": "aliased-value-xyz",
}


def env_cfg(**kw) -> SandboxEnv:
    return validate_config({"sandbox": {"env": kw}}).sandbox.env


def test_only_base_names_pass_by_default() -> None:
    out = build_child_env(env_cfg(), source=SOURCE)
    assert out.env == {
        k: SOURCE[k] for k in ("PATH", "HOME", "USER", "LANG", "SHELL", "TMPDIR", "LC_ALL", "LC_TIME")
    }
    assert out.secrets == [] and out.missing == []


def test_allowed_names_pass_and_long_values_are_secrets() -> None:
    out = build_child_env(env_cfg(allow=["API_TOKEN", "SHORT"]), source=SOURCE)
    assert out.env["API_TOKEN"] == "tok-1234567890" and out.env["SHORT"] == "abc"
    assert out.secrets == ["tok-1234567890"]  # "abc" is under 8 bytes


def test_missing_allowed_name_is_reported_not_fatal() -> None:
    out = build_child_env(env_cfg(allow=["NOT_SET_ANYWHERE", "API_TOKEN"]), source=SOURCE)
    assert out.missing_names == ["NOT_SET_ANYWHERE"]
    assert "NOT_SET_ANYWHERE" not in out.env and out.env["API_TOKEN"]
    assert "NOT_SET_ANYWHERE" in out.notes[0] and "[sandbox.env.vars.NOT_SET_ANYWHERE]" in out.notes[0]


def test_deny_beats_allow_and_base_names() -> None:
    out = build_child_env(env_cfg(allow=["API_TOKEN"], deny=["API_TOKEN", "TMPDIR"]), source=SOURCE)
    assert "API_TOKEN" not in out.env and "TMPDIR" not in out.env and out.missing == []


def test_alias_source() -> None:
    out = build_child_env(env_cfg(vars={"ALIASED": {"source": "env", "name": "REAL_NAME"}}), source=SOURCE)
    assert out.env["ALIASED"] == "aliased-value-xyz" and "REAL_NAME" not in out.env
    assert out.secrets == ["aliased-value-xyz"]
    gone = build_child_env(env_cfg(vars={"ALIASED": {"source": "env", "name": "NOPE"}}), source=SOURCE)
    assert gone.missing_names == ["ALIASED"] and "NOPE is not set" in gone.notes[0]


def test_mode_all_inherits_everything_but_deny_and_the_parent_marker() -> None:
    out = build_child_env(env_cfg(mode="all", deny=["AWS_SECRET_ACCESS_KEY"]), source=SOURCE)
    assert "AWS_SECRET_ACCESS_KEY" not in out.env and out.env["GIT_DIR"] == "/elsewhere"
    assert "FERMIX_SPAWNED" not in out.env


def helper(*script: str, timeout_ms: int = 3000) -> dict:
    return {
        "source": "command",
        "command": sys.executable,
        "args": ["-c", "\n".join(script)],
        "timeout_ms": timeout_ms,
    }


def test_helper_command_value() -> None:
    out = build_child_env(
        env_cfg(vars={"FROM_HELPER": helper("print('helper-secret-value')")}), source=SOURCE
    )
    assert out.env["FROM_HELPER"] == "helper-secret-value"
    assert out.secrets == ["helper-secret-value"]


@pytest.mark.parametrize(
    ("script", "why"),
    [
        (["print('a'); print('b')"], "more than one line"),
        (["print('x' * 8193)"], "more than 8192 bytes"),
        (["import sys; sys.exit(3)"], "exited with code 3"),
        (["import time; time.sleep(5)"], "timed out"),
    ],
)
def test_helper_failures_leave_the_name_missing(script: list[str], why: str) -> None:
    out = build_child_env(env_cfg(vars={"H": helper(*script, timeout_ms=300)}), source=SOURCE)
    assert "H" not in out.env
    assert out.missing_names == ["H"] and why in out.missing[0].reason


def test_helper_line_of_exactly_8192_bytes_is_accepted() -> None:
    out = build_child_env(env_cfg(vars={"H": helper("print('x' * 8192)")}), source=SOURCE)
    assert len(out.env["H"]) == 8192


def test_missing_helper_program() -> None:
    cfg = env_cfg(vars={"H": {"source": "command", "command": "no-such-helper-program-xyz"}})
    out = build_child_env(cfg, source=SOURCE)
    assert out.missing_names == ["H"] and "not found" in out.missing[0].reason


def test_helpers_share_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # A answers at once, B holds the whole budget, so C finds none left. Only the budget is timed here
    # (a fast helper against one that outlasts it), so a loaded machine cannot turn the outcome around.
    monkeypatch.setattr(execenv, "HELPER_BUDGET_S", 1.5)
    fast = helper("print('value-one')", timeout_ms=5000)
    slow = helper("import time; time.sleep(30)", timeout_ms=5000)
    out = build_child_env(env_cfg(vars={"A": fast, "B": slow, "C": fast}), source=SOURCE)
    assert out.env.get("A") == "value-one"
    assert "C" in out.missing_names and "B" in out.missing_names
    assert any("budget" in m.reason or "timed out" in m.reason for m in out.missing)


def test_helper_sees_only_the_base_environment(tmp_path: Path) -> None:
    out = build_child_env(
        env_cfg(allow=["API_TOKEN"], vars={"H": helper("import os; print(','.join(sorted(os.environ)))")}),
        source=SOURCE,
    )
    names = set(out.env["H"].split(","))
    assert "API_TOKEN" not in names and "AWS_SECRET_ACCESS_KEY" not in names and "PATH" in names


@pytest.mark.parametrize(
    "bad",
    [
        {"allow": ["NOT-A-NAME"]},
        {"vars": {"X": {"source": "command"}}},
        {"vars": {"X": {"source": "env", "command": "pass"}}},
        {"vars": {"X": {"source": "command", "command": "pass", "timeout_ms": 0}}},
        {"vars": {"X": {"source": "command", "command": "pass", "name": "Y"}}},
        {"mode": "some"},
    ],
)
def test_invalid_env_config_fails_closed(bad: dict) -> None:
    from fermix_cli.core.errors import ToolError

    with pytest.raises(ToolError) as e:
        validate_config({"sandbox": {"env": bad}})
    assert e.value.code == "invalid_config" and "sandbox.env" in e.value.message
