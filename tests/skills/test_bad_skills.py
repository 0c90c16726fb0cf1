"""A bad skill is skipped and reported, never fatal: not to the skill tools, a model run, the CLI or doctor."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.skillfile import parse_skill
from tests.conftest import REPO, Env
from tests.skills.test_skills import mock_config, write_skill

# Well-formed YAML whose value Python cannot build: PyYAML raises a plain ValueError for each.
UNBUILDABLE = [
    ("updated: 2024-02-30", "day is out of range for month"),
    ("updated: 2024-13-01", "month must be in 1..12"),
    ("size: " + "9" * 4301, "more than 4300 digits"),
    ("size: 0x" + "f" * 4000, "more than 4300 digits"),  # built, but too long to write out
    ("size: 0b" + "1" * 15000, "more than 4300 digits"),
    ("at: 2024-01-01 10:00:00+24:00", "offset must be a timedelta"),
    ("at: 2024-01-01T10:00:00-25:30", "offset must be a timedelta"),
    ("history:\n  - 2024-02-30", "day is out of range for month"),
]


@pytest.mark.parametrize(("line", "why"), UNBUILDABLE)
def test_an_unbuildable_value_is_invalid_frontmatter_at_its_line(line: str, why: str) -> None:
    text = f"---\nname: a\ndescription: d\n{line}\n---\nbody\n"
    with pytest.raises(ToolError) as e:
        parse_skill(text.encode(), "/s/a/SKILL.md", "/s/a")
    assert e.value.code == "invalid_frontmatter" and e.value.details["line"] == 4, e.value.message
    assert e.value.message.startswith("/s/a/SKILL.md:4: ") and why in e.value.message, e.value.message
    assert "quote it" in e.value.message and "set_int_max_str_digits" not in e.value.message


def test_an_unbuildable_name_is_invalid_name() -> None:
    text = f"---\nname: 0b{'1' * 15000}\ndescription: d\n---\nbody\n"
    with pytest.raises(ToolError) as e:
        parse_skill(text.encode(), "/s/a/SKILL.md", "/s/a")
    assert e.value.code == "invalid_name" and e.value.message.startswith("/s/a/SKILL.md:2: ")


def _bad_and_good(world: Env) -> Path:
    skills = world.fermix_home / "skills"
    bad = write_skill(skills, "dated", "name: dated\ndescription: d\nupdated: 2024-02-30")
    write_skill(skills, "fine", "name: fine\ndescription: loads\nallowed_tools: []", "Fine body")
    return bad / "SKILL.md"


def test_one_bad_skill_breaks_no_tool_and_no_run(world: Env) -> None:
    bad = _bad_and_good(world)
    mock_config(world, {"responses": [{"text": "fine did it"}], "repeat_last": True})
    r = world.tool("skill_list")
    assert r.code == 0, r.stderr
    assert "fine" in {s["name"] for s in r.json()["skills"]}
    assert [(e["path"], e["code"]) for e in r.json()["errors"]] == [(str(bad), "invalid_frontmatter")]
    assert r.json()["errors"][0]["message"].startswith(f"{bad}:4: updated: ")
    r = world.tool("skill_run", {"name": "fine", "task": "t"})
    assert r.code == 0 and r.json()["output"] == "fine did it", r.stderr
    r = world.tool("fine", {"task": "t"})  # the skill as its own tool
    assert r.code == 0 and r.json()["status"] == "completed", r.stderr
    r = world.tool("read", {"paths": ["skill://fine"]})
    assert r.code == 0 and "Fine body" in r.json()["content"], r.stderr
    r = world.tool("skill_view", {"name": "dated"})
    assert r.code == 2 and r.error()["code"] == "invalid_frontmatter", r.stderr
    r = world.tool("skill_reload")
    assert r.code == 0 and [e["code"] for e in r.json()["errors"]] == ["invalid_frontmatter"], r.stderr
    r = world.run("ask", "-m", "echo", "--json", "hi")
    assert r.code == 0, r.stderr
    r = world.run("ask", "hello")  # the mock model
    assert r.code == 0 and "fine did it" in r.stdout, r.stderr


def test_skills_commands_report_a_bad_skill_without_a_traceback(world: Env) -> None:
    bad = _bad_and_good(world)
    r = world.run("skills", "list")
    assert r.code == 0 and "fine" in r.stdout, r.stderr
    assert "Traceback" not in r.stderr
    assert f"not loaded: {bad}:4: updated: " in r.stderr
    r = world.run("skills", "check", "--no-evals", "--json")
    assert r.code == 1 and "Traceback" not in r.stderr
    assert [e["code"] for e in r.json()["errors"]] == ["invalid_frontmatter"]


def _hook(world: Env, code: str) -> dict[str, str]:
    hook = world.root / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(code)
    return world.env | {"PYTHONPATH": f"{hook}{os.pathsep}{REPO}"}


def test_an_unforeseen_failure_loading_one_skill_skips_only_that_skill(world: Env) -> None:
    """A loader bug (simulated) is reported as that skill's error and logged; the other skills load."""
    skills = world.fermix_home / "skills"
    buggy = write_skill(skills, "buggy", "name: buggy\ndescription: b") / "SKILL.md"
    write_skill(skills, "fine", "name: fine\ndescription: loads")
    env = _hook(
        world,
        "import fermix_cli.core.skillfile as sf\n"
        "real = sf.parse_skill\n"
        "def parse(data, path, directory):\n"
        "    if 'buggy' in path:\n        raise RuntimeError('kaboom in a loader')\n"
        "    return real(data, path, directory)\n"
        "sf.parse_skill = parse\n",
    )
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "tool", "skill_list"],
        capture_output=True, text=True, env=env, cwd=world.project, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "fine" in {s["name"] for s in out["skills"]}
    assert [(e["path"], e["code"]) for e in out["errors"]] == [(str(buggy), "invalid_skill")]
    assert "kaboom in a loader" in out["errors"][0]["message"]
    log = (world.fermix_home / "logs" / "fermix.log").read_text()
    assert "RuntimeError: kaboom in a loader" in log and "Traceback" in log


def test_a_bug_behind_a_skills_command_is_one_line_and_logged(world: Env) -> None:
    """What `fermix.registry` logs of a tool's crash goes to the log file, never to the user's stderr."""
    import subprocess
    import sys

    env = _hook(
        world,
        "import fermix_cli.agent.skills.tools as t\n"
        "def boom(p, ctx):\n    raise RuntimeError('kaboom in skill_list')\n"
        "t.TOOLS = tuple(s.replace(handler=boom) if s.name == 'skill_list' else s for s in t.TOOLS)\n",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "skills", "list"],
        capture_output=True, text=True, env=env, cwd=world.project, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 4
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert json.loads(proc.stderr)["error"]["code"] == "internal_error"
    log = (world.fermix_home / "logs" / "fermix.log").read_text()
    assert "RuntimeError: kaboom in skill_list" in log and "Traceback" in log


def test_a_skill_create_that_fails_midway_leaves_nothing_and_can_be_retried(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills up while skill_create writes SKILL.md: no half-made skills/NAME/ is left to refuse
    the retry (`already_exists`) while skill_list and skill_view know nothing of it."""
    import errno

    from fermix_cli.core import fsops
    from fermix_cli.core.registry import default_registry

    real = fsops.atomic_write

    def disk_full_at_skill_md(path: str, data: bytes, *a: object, **k: object) -> object:
        if str(path).endswith("SKILL.md"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, data, *a, **k)  # type: ignore[arg-type]

    args = {"name": "weekly", "description": "Draft the weekly report"}
    ctx = world.context()
    try:
        monkeypatch.setattr(fsops, "atomic_write", disk_full_at_skill_md)
        with pytest.raises(ToolError) as failed:
            default_registry().invoke("skill_create", args, ctx)
        assert failed.value.code == "io_failed"
        monkeypatch.setattr(fsops, "atomic_write", real)
        skills = world.fermix_home / "skills"
        assert sorted(p.name for p in skills.iterdir()) == []
        created = default_registry().invoke("skill_create", args, ctx)
    finally:
        ctx.close()
    assert created["created"] is True
    listed = world.tool("skill_list").json()
    assert [s["name"] for s in listed["skills"] if s["name"] == "weekly"] == ["weekly"]
    assert sorted(p.name for p in (world.fermix_home / "skills").iterdir()) == ["weekly"]


def test_a_skill_directory_without_its_skill_md_is_reported_not_hidden(world: Env) -> None:
    """What an older fermix's interrupted skill_create left (skills/NAME/evals/, no SKILL.md) is named in
    skill_list's errors and by skill_view, with what to do, instead of being invisible."""
    (world.fermix_home / "skills" / "weekly" / "evals").mkdir(parents=True)
    (world.fermix_home / "skills" / ".hidden").mkdir()
    listed = world.tool("skill_list").json()
    [error] = listed["errors"]
    assert error["code"] == "incomplete_skill"
    assert error["path"] == str(world.fermix_home / "skills" / "weekly" / "SKILL.md")
    assert "Remove the directory and create the skill again" in error["message"]
    viewed = world.tool("skill_view", {"name": "weekly"})
    assert viewed.code == 1
    assert json.loads(viewed.stderr or viewed.stdout)["error"]["code"] == "incomplete_skill"


def test_skill_create_sweeps_the_build_directories_killed_creates_left(world: Env) -> None:
    """A killed skill_create left skills/.NAME.tmp-<hex>/ forever; the next create removes old ones, and
    only those: a fresh one may be another process's build under way, and other names are not its own."""
    import time

    skills = world.fermix_home / "skills"
    hour_ago = time.time() - 3600
    for name, old in [
        (".weekly.tmp-0123456789ab", True),  # a killed create's
        (".daily.tmp-abcdef012345", False),  # another create's, under way
        (".weekly.tmp-0123456789", True),  # not the pattern (11 hex)
        (".weekly.tmp-0123456789AB", True),  # not the pattern (upper case)
        (".notes", True),
    ]:
        (skills / name / "evals").mkdir(parents=True)
        (skills / name / "evals" / "evals.json").write_text("{}\n")
        if old:
            os.utime(skills / name, (hour_ago, hour_ago))
    (skills / ".monthly.tmp-0123456789ab").write_text("a file, not a build directory\n")
    os.utime(skills / ".monthly.tmp-0123456789ab", (hour_ago, hour_ago))
    made = world.tool("skill_create", {"name": "fresh", "description": "d"})
    assert made.code == 0, made.stderr
    assert sorted(p.name for p in skills.iterdir()) == [
        ".daily.tmp-abcdef012345",
        ".monthly.tmp-0123456789ab",
        ".notes",
        ".weekly.tmp-0123456789",
        ".weekly.tmp-0123456789AB",
        "fresh",
    ]
